#include "src/server/config_watcher.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include <sys/stat.h>

namespace sluice::server {
namespace {

void AppendFile(const std::filesystem::path& p, std::string& out) {
  struct stat st {};
  if (stat(p.c_str(), &st) != 0) return;  // stat() follows symlinks, as loading does.
  // The content's hash too: a file replaced within the filesystem's timestamp granularity, at the
  // same size, can get the inode number its predecessor just freed. Config files are small.
  std::ifstream in(p);
  std::stringstream content;
  content << in.rdbuf();
  absl::StrAppend(&out, p.string(), ":", st.st_size, ":", st.st_mtim.tv_sec, ".",
                  st.st_mtim.tv_nsec, ":", st.st_ino, ":", std::hash<std::string>{}(content.str()),
                  "\n");
}

}  // namespace

std::string ConfigWatcher::Fingerprint() const {
  std::string out;
  std::error_code ec;
  if (!std::filesystem::is_directory(path_, ec)) {
    AppendFile(path_, out);
    return out;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) AppendFile(f, out);
  return out;
}

}  // namespace sluice::server
