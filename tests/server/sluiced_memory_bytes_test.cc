// sluiced's --memory-store-max-bytes flag and its SLUICE_MEMORY_STORE_MAX_BYTES environment
// variable reach the memory store (issue 13, point 3). The bound itself is tested in
// tests/store/memory/memory_store_bytes_test.cc.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;

class SluicedMemoryBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-bytes-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    std::ofstream(dir_ / "config.yaml")
        << "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, "
           "requests_per_unit: 1}\n";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // argv of sluiced on free loopback ports, after `prefix` (e.g. {"/usr/bin/env", "X=1"}).
  std::vector<std::string> Argv(std::vector<std::string> prefix, std::vector<std::string> extra) {
    std::vector<std::string> argv = std::move(prefix);
    for (const std::string& a :
         {std::string(SLUICED_PATH), std::string("--config"), (dir_ / "config.yaml").string(),
          std::string("--http"), "127.0.0.1:" + std::to_string(*FreeLoopbackPort()),
          std::string("--grpc"), "127.0.0.1:" + std::to_string(*FreeLoopbackPort()),
          std::string("--drain-ms"), std::string("0")}) {
      argv.push_back(a);
    }
    for (std::string& a : extra) argv.push_back(std::move(a));
    return argv;
  }

  std::filesystem::path dir_;
};

TEST_F(SluicedMemoryBytesTest, FlagBelowOneEntryIsRefusedAtStart) {
  auto result = RunToExit(Argv({}, {"--memory-store-max-bytes", "10"}), 10'000);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->first, 2) << result->second;
  EXPECT_THAT(result->second, HasSubstr("max_bytes: must be at least 72, got 10"));
}

TEST_F(SluicedMemoryBytesTest, EnvironmentVariableSetsTheBound) {
  auto refused = RunToExit(Argv({"/usr/bin/env", "SLUICE_MEMORY_STORE_MAX_BYTES=10"}, {}), 10'000);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->first, 2) << refused->second;
  EXPECT_THAT(refused->second, HasSubstr("max_bytes: must be at least 72, got 10"));

  // A valid bound: sluiced starts with it (and is stopped by the timeout).
  auto started =
      RunToExit(Argv({"/usr/bin/env", "SLUICE_MEMORY_STORE_MAX_BYTES=3000000"}, {}), 2'000);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_THAT(started->second, HasSubstr("entries and 3000000 bytes)"));
}

}  // namespace
}  // namespace sluice::testing
