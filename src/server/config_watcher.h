// ConfigWatcher: notices when the files under a config path change.
//
// Each Poll() lists the path (a file, or a directory's entries, following symlinks) and stats
// every entry; only a regular file whose stat (device, inode, size, mtime, ctime) differs from the
// previous poll is read, and it counts as changed only when its content hash differs. So an
// unchanged tree costs one directory listing and one stat() per file, whatever the files' size.
// Fingerprints rather than inotify events, because a Kubernetes ConfigMap update swaps a `..data`
// symlink: no watched file is written, but every resolved inode changes.
//
// Racily clean files: a file rewritten at the same size within the filesystem's timestamp
// granularity can keep its whole stat (even its inode, when its predecessor's number is reused).
// As git does for its index, a file whose mtime or ctime falls within `racy_window` of the poll
// that saw it is read again at the next poll, until its times are older than that.
//
// Example:
//   ConfigWatcher watcher("/etc/sluice/config");
//   if (watcher.Poll()) Reload();
//
// Thread safety: not thread-safe; poll from one thread.
#ifndef SLUICE_SERVER_CONFIG_WATCHER_H_
#define SLUICE_SERVER_CONFIG_WATCHER_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "sluice/clock.h"

namespace sluice::server {

struct ConfigWatcherOptions {
  // A file whose mtime or ctime is this close to (or after) the poll that stats it is read again
  // at the next poll even when its stat is unchanged. Filesystems keep times to a scheduler tick
  // (ext4, xfs) or up to 2 s (FAT, some network filesystems). Default: 2 s.
  std::chrono::microseconds racy_window = std::chrono::seconds(2);
  // Wall time, compared with the files' times. Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
  // Returns a file's content, for its hash. A seam for tests that count reads. Default (empty):
  // reads the file; a file that cannot be read hashes as empty.
  std::function<std::string(const std::filesystem::path&)> read_file;
};

class ConfigWatcher {
 public:
  // Takes the first fingerprint (reading every file once).
  explicit ConfigWatcher(std::filesystem::path path, ConfigWatcherOptions options = {});

  // ConfigWatcher::Poll()
  //
  // Returns true when, since the previous call (or construction), a file appeared or went away,
  // or a regular file's content changed. A file only touched (same content) is no change.
  bool Poll();

 private:
  struct FileState {
    std::string path;
    bool regular = false;
    uint64_t device = 0;
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    size_t content_hash = 0;
    // Its times were within racy_window of the poll: read it again next time.
    bool racy = false;
  };

  std::vector<FileState> Scan() const;
  std::string Read(const std::filesystem::path& p) const;

  std::filesystem::path path_;
  ConfigWatcherOptions options_;
  Clock& clock_;
  std::vector<FileState> files_;  // Sorted by path.
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_CONFIG_WATCHER_H_
