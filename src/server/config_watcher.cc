#include "src/server/config_watcher.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include <sys/stat.h>

namespace sluice::server {
namespace {

int64_t Nanos(const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

}  // namespace

ConfigWatcher::ConfigWatcher(std::filesystem::path path, ConfigWatcherOptions options)
    : path_(std::move(path)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : Clock::Real()) {
  files_ = Scan();
}

std::string ConfigWatcher::Read(const std::filesystem::path& p) const {
  if (options_.read_file) return options_.read_file(p);
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<ConfigWatcher::FileState> ConfigWatcher::Scan() const {
  // Taken before any stat: a write after this instant has times at or after it, so it is racy.
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.EpochNow()).count();
  const int64_t racy_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.racy_window).count();
  std::vector<std::filesystem::path> paths;
  std::error_code ec;
  if (std::filesystem::is_directory(path_, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
      paths.push_back(entry.path());
    }
    std::sort(paths.begin(), paths.end());
  } else {
    paths.push_back(path_);
  }
  std::vector<FileState> out;
  out.reserve(paths.size());
  auto previous = files_.begin();
  for (const std::filesystem::path& p : paths) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) continue;  // stat() follows symlinks, as loading does.
    FileState f{.path = p.string(),
                .regular = S_ISREG(st.st_mode),
                .device = static_cast<uint64_t>(st.st_dev),
                .inode = static_cast<uint64_t>(st.st_ino),
                .size = static_cast<int64_t>(st.st_size),
                .mtime_ns = Nanos(st.st_mtim),
                .ctime_ns = Nanos(st.st_ctim)};
    f.racy = std::max(f.mtime_ns, f.ctime_ns) >= now_ns - racy_ns;
    // Both lists are sorted by path: advance to this path's previous state, if any.
    while (previous != files_.end() && previous->path < f.path) ++previous;
    const bool same_stat = previous != files_.end() && previous->path == f.path &&
                           previous->regular == f.regular && previous->device == f.device &&
                           previous->inode == f.inode && previous->size == f.size &&
                           previous->mtime_ns == f.mtime_ns && previous->ctime_ns == f.ctime_ns;
    if (!f.regular) {
      f.content_hash = 0;  // A directory (a ConfigMap's `..data`): its files are listed apart.
    } else if (same_stat && !previous->racy) {
      f.content_hash = previous->content_hash;
    } else {
      f.content_hash = std::hash<std::string>{}(Read(p));
    }
    out.push_back(std::move(f));
  }
  return out;
}

bool ConfigWatcher::Poll() {
  std::vector<FileState> now = Scan();
  const bool changed = !std::equal(now.begin(), now.end(), files_.begin(), files_.end(),
                                   [](const FileState& a, const FileState& b) {
                                     return a.path == b.path && a.regular == b.regular &&
                                            a.content_hash == b.content_hash;
                                   });
  files_ = std::move(now);
  return changed;
}

}  // namespace sluice::server
