#include "src/server/config_watcher.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

#include "tests/testing/manual_clock.h"

namespace sluice::server {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;

class ConfigWatcherTest : public ::testing::Test {
 public:
  ConfigWatcherTest(const ConfigWatcherTest&) = delete;
  ConfigWatcherTest& operator=(const ConfigWatcherTest&) = delete;
  ConfigWatcherTest(ConfigWatcherTest&&) = delete;
  ConfigWatcherTest& operator=(ConfigWatcherTest&&) = delete;

 protected:
  ConfigWatcherTest() {
    std::string tmpl = (fs::temp_directory_path() / "sluice-watcher-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
  }
  ~ConfigWatcherTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void Write(const fs::path& p, const std::string& content) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  }

  // Options whose reads are counted and whose clock is one hour ahead of the files' times, so
  // that no file is racily clean unless a test says so.
  ConfigWatcherOptions CountingOptions() {
    clock_.Set(Clock::Real().EpochNow() + hours(1));
    return {.clock = &clock_, .read_file = [this](const fs::path& p) {
              ++reads_;
              std::ifstream in(p, std::ios::binary);
              return std::string(std::istreambuf_iterator<char>(in),
                                 std::istreambuf_iterator<char>());
            }};
  }

  fs::path dir_;
  testing::ManualClock clock_;
  int reads_ = 0;
};

// Verifies an unchanged tree costs stats only: no file is read again.
TEST_F(ConfigWatcherTest, UnchangedTreeIsNotReadAgain) {
  Write(dir_ / "a.yaml", "domain: a\n");
  Write(dir_ / "b.yaml", "domain: b\n");
  ConfigWatcher watcher(dir_, CountingOptions());
  EXPECT_EQ(reads_, 2);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(watcher.Poll());
  EXPECT_EQ(reads_, 2);
}

// Verifies a content change at the same size is seen, and only the changed file is read.
TEST_F(ConfigWatcherTest, SameSizeContentChangeIsSeen) {
  Write(dir_ / "a.yaml", "domain: a\n");
  Write(dir_ / "b.yaml", "domain: b\n");
  ConfigWatcher watcher(dir_, CountingOptions());
  const fs::file_time_type before = fs::last_write_time(dir_ / "a.yaml");
  Write(dir_ / "a.yaml", "domain: z\n");
  // An edit a second later, whatever the filesystem's timestamp granularity.
  fs::last_write_time(dir_ / "a.yaml", before + std::chrono::seconds(1));
  EXPECT_TRUE(watcher.Poll());
  EXPECT_EQ(reads_, 3);
  EXPECT_FALSE(watcher.Poll());
  EXPECT_EQ(reads_, 3);
}

// Verifies a file only touched (same content) is read but is not a change.
TEST_F(ConfigWatcherTest, TouchedFileIsNoChange) {
  Write(dir_ / "a.yaml", "domain: a\n");
  ConfigWatcher watcher(dir_, CountingOptions());
  fs::last_write_time(dir_ / "a.yaml",
                      fs::last_write_time(dir_ / "a.yaml") + std::chrono::seconds(1));
  EXPECT_FALSE(watcher.Poll());
  EXPECT_EQ(reads_, 2);
}

// Verifies a rewrite that keeps size and mtime (inside the timestamp granularity) is still seen
// while the file is racily clean, and that the file stops being read once its times are old.
TEST_F(ConfigWatcherTest, RacilyCleanFileIsReadUntilItsTimesAreOld) {
  Write(dir_ / "a.yaml", "domain: a\n");
  ConfigWatcherOptions options = CountingOptions();
  clock_.Set(Clock::Real().EpochNow());  // The file was just written: racy.
  ConfigWatcher watcher(dir_, options);
  const fs::file_time_type mtime = fs::last_write_time(dir_ / "a.yaml");
  Write(dir_ / "a.yaml", "domain: z\n");
  fs::last_write_time(dir_ / "a.yaml", mtime);
  EXPECT_TRUE(watcher.Poll());
  EXPECT_EQ(reads_, 2);
  clock_.Advance(hours(1));
  EXPECT_FALSE(watcher.Poll());  // Read once more: it was racy at the previous poll.
  EXPECT_EQ(reads_, 3);
  EXPECT_FALSE(watcher.Poll());  // Old now: stat only.
  EXPECT_EQ(reads_, 3);
}

TEST_F(ConfigWatcherTest, AddedAndRemovedFilesAreChanges) {
  Write(dir_ / "a.yaml", "domain: a\n");
  ConfigWatcher watcher(dir_, CountingOptions());
  Write(dir_ / "b.yaml", "domain: b\n");
  EXPECT_TRUE(watcher.Poll());
  fs::remove(dir_ / "a.yaml");
  EXPECT_TRUE(watcher.Poll());
  EXPECT_FALSE(watcher.Poll());
}

// Verifies a Kubernetes ConfigMap update (the `..data` symlink swapped to a new directory) is
// seen although no file the config path names was written.
TEST_F(ConfigWatcherTest, ConfigMapSymlinkSwapIsSeen) {
  fs::create_directory(dir_ / "..v1");
  fs::create_directory(dir_ / "..v2");
  Write(dir_ / "..v1" / "a.yaml", "domain: a\n");
  Write(dir_ / "..v2" / "a.yaml", "domain: z\n");
  fs::create_directory_symlink("..v1", dir_ / "..data");
  fs::create_symlink("..data/a.yaml", dir_ / "a.yaml");
  ConfigWatcher watcher(dir_, CountingOptions());
  EXPECT_FALSE(watcher.Poll());
  fs::create_directory_symlink("..v2", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  EXPECT_TRUE(watcher.Poll());
  EXPECT_FALSE(watcher.Poll());
}

TEST_F(ConfigWatcherTest, WatchesASingleFile) {
  Write(dir_ / "a.yaml", "domain: a\n");
  ConfigWatcher watcher(dir_ / "a.yaml", CountingOptions());
  EXPECT_FALSE(watcher.Poll());
  Write(dir_ / "a.yaml", "domain: zz\n");
  EXPECT_TRUE(watcher.Poll());
  EXPECT_EQ(reads_, 2);
}

}  // namespace
}  // namespace sluice::server
