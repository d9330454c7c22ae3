// TempDir: a fresh directory under the system's temporary directory, removed with everything in
// it when the object goes. For tests that hand files to a process (configs, npm installs, logs).
//
// Example:
//   TempDir dir("sluice-e2e");
//   dir.Write("edge.yaml", kConfig);
//   ... "--config", dir.path().string() ...
#ifndef SLUICE_TESTS_TESTING_TEMP_DIR_H_
#define SLUICE_TESTS_TESTING_TEMP_DIR_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace sluice::testing {

class TempDir {
 public:
  // `prefix` names the directory, for whoever finds one left behind by a crash.
  explicit TempDir(const std::string& prefix = "sluice-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  // Empty if the directory could not be made.
  const std::filesystem::path& path() const { return path_; }

  // Writes `content` to `name` in the directory: to a temporary file first, then renamed, as
  // config management tools do, so a reader never sees half a file.
  void Write(const std::string& name, const std::string& content) const {
    const auto tmp = path_ / ("." + name + ".tmp");
    std::ofstream(tmp) << content;
    std::filesystem::rename(tmp, path_ / name);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_TEMP_DIR_H_
