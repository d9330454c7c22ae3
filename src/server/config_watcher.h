// ConfigWatcher: notices when the files under a config path change.
//
// It fingerprints every config file (path, size, modification time, inode and a hash of the
// content, following symlinks) and compares fingerprints on each Poll(). Fingerprints rather than
// inotify events, because a Kubernetes ConfigMap update swaps a `..data` symlink: no watched file
// is written, but every resolved inode changes. Polling once a second reads a few small files.
//
// Thread safety: not thread-safe; poll from one thread.
#ifndef SLUICE_SERVER_CONFIG_WATCHER_H_
#define SLUICE_SERVER_CONFIG_WATCHER_H_

#include <filesystem>
#include <string>

namespace sluice::server {

class ConfigWatcher {
 public:
  explicit ConfigWatcher(std::filesystem::path path) : path_(std::move(path)) {
    fingerprint_ = Fingerprint();
  }

  // Returns true when the files changed since the previous call (or construction).
  bool Poll() {
    std::string now = Fingerprint();
    if (now == fingerprint_) return false;
    fingerprint_ = std::move(now);
    return true;
  }

 private:
  std::string Fingerprint() const;

  std::filesystem::path path_;
  std::string fingerprint_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_CONFIG_WATCHER_H_
