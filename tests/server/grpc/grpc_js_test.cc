// sluiced's gRPC API under grpc-js, the Node.js gRPC implementation, on both engines: decisions,
// garbage bytes, an unknown method, health checks, and 100 concurrent calls on one connection.
// grpc-js comes from npm into a temporary directory when the suite starts; without node, npm or
// the network the suite is skipped, saying why.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gtest/gtest.h"

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/grpc/grpc_server.h"
#include "src/server/stats/metrics.h"
#include "tests/server/grpc/grpc_engine_test_support.h"
#include "tests/testing/child_process.h"
#include "tests/testing/skip_or_fail.h"

namespace sluice::server {
namespace {

const std::string kSource = SLUICE_SOURCE_DIR;

class GrpcJsTest : public ::testing::TestWithParam<GrpcEngine> {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/sluice-grpc-js-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      skip_reason_ = new std::string("cannot create a temporary directory");
      return;
    }
    dir_ = new std::string(pattern);
    if (std::system("command -v node >/dev/null && command -v npm >/dev/null") != 0) {
      skip_reason_ = new std::string("node or npm is not installed");
      return;
    }
    absl::StatusOr<std::pair<int, std::string>> npm =
        testing::RunToExit({"/usr/bin/env", "npm", "install", "--prefix", *dir_, "--no-audit",
                            "--no-fund", "--loglevel=error", "@grpc/grpc-js", "@grpc/proto-loader"},
                           180'000);
    if (!npm.ok() || npm->first != 0) {
      skip_reason_ = new std::string(
          "npm could not install @grpc/grpc-js and @grpc/proto-loader (no network?): " +
          (npm.ok() ? npm->second : std::string(npm.status().message())));
    }
  }

  static void TearDownTestSuite() {
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete dir_;
    delete skip_reason_;
    dir_ = nullptr;
    skip_reason_ = nullptr;
  }

  void SetUp() override {
    if (skip_reason_ != nullptr) SLUICE_SKIP_OR_FAIL(*skip_reason_);
    auto memory = MemoryStore::Create({});
    ASSERT_TRUE(memory.ok());
    memory_ = *std::move(memory);
    service_ = std::make_unique<RateLimitService>(*memory_, metrics_, RateLimitServiceOptions{});
    ASSERT_TRUE(grpc_test::SetEdgeConfig(*service_, 2).ok());
    server_ = std::make_unique<GrpcServer>(
        GrpcServerOptions{.engine = GetParam(), .address = "127.0.0.1:0"}, *service_);
    ASSERT_TRUE(server_->Start().ok());
  }

  // The client's output ("<probe> <code> <detail>" lines); fails the test if it did not finish.
  std::string RunClient() {
    // NODE_PATH: the client script lives in the source tree, its modules in the temp directory.
    const std::string node_path = "NODE_PATH=" + *dir_ + "/node_modules";
    std::vector<std::string> env = {node_path};
    if (const char* path = std::getenv("PATH")) env.push_back(std::string("PATH=") + path);
    absl::StatusOr<std::pair<int, std::string>> run = testing::RunToExit(
        {"/usr/bin/env", "node", kSource + "/tests/server/grpc/grpc_js/client.js",
         std::to_string(server_->port()), kSource + "/proto",
         kSource + "/tests/server/grpc/grpc_js/health.proto"},
        60'000, env);
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return "";
    EXPECT_EQ(run->first, 0) << run->second;
    return run->second;
  }

  static std::string* dir_;
  static std::string* skip_reason_;
  std::unique_ptr<MemoryStore> memory_;
  Metrics metrics_;
  std::unique_ptr<RateLimitService> service_;
  std::unique_ptr<GrpcServer> server_;
};

std::string* GrpcJsTest::dir_ = nullptr;
std::string* GrpcJsTest::skip_reason_ = nullptr;

TEST_P(GrpcJsTest, ServesGrpcJs) {
  const std::string out = RunClient();
  // Codes: 0 OK, 3 INVALID_ARGUMENT, 5 NOT_FOUND, 12 UNIMPLEMENTED.
  for (const char* line : {"first 0 OK\n", "second 0 OK\n", "third 0 OVER_LIMIT\n",
                           "garbage 3 \"request is not a valid RateLimitRequest\"\n", "unknown 12 ",
                           "health 0 SERVING\n", "health_ratelimit 0 SERVING\n",
                           "health_unknown 5 ", "concurrent_ok 0 100\n"}) {
    EXPECT_NE(out.find(line), std::string::npos) << "no \"" << line << "\" in:\n" << out;
  }
  EXPECT_EQ(server_->Stats().unparsable_requests, 1u);
}

INSTANTIATE_TEST_SUITE_P(Engines, GrpcJsTest, ::testing::ValuesIn(grpc_test::kEngines),
                         grpc_test::EngineName);

}  // namespace
}  // namespace sluice::server
