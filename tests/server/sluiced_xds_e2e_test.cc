// sluiced started as Envoy Gateway starts envoyproxy/ratelimit, CONFIG_TYPE=GRPC_XDS_SOTW and the
// reference's variables, against a management server of our own (tests/server/xds/): decisions
// follow the configs it pushes, and sluiced keeps serving when it goes away. Processes and real
// time are involved, so every wait is a bounded poll on an observable condition.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "sluice/clock.h"

#include "tests/server/xds/test_management_server.h"
#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {
namespace {

namespace rlc = ::ratelimit::config::ratelimit::v3;
using ::testing::HasSubstr;

constexpr const char* kRequest =
    R"({"domain":"e2e","descriptors":[{"entries":[{"key":"user","value":"alice"}]}]})";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

int Status(int port, const std::string& target) {
  absl::StatusOr<HttpResult> r = HttpGet(port, target);
  return r.ok() ? r->status : -1;
}

int PostStatus(int port) {
  absl::StatusOr<HttpResult> r = HttpPost(port, "/json", kRequest);
  return r.ok() ? r->status : -1;
}

std::string Body(int port, const std::string& target) {
  absl::StatusOr<HttpResult> r = HttpGet(port, target);
  return r.ok() ? r->body : "";
}

// `user` limited to `requests` an hour, or unlimited with 0.
::envoy::service::discovery::v3::DiscoveryResponse UserLimit(const std::string& version,
                                                             uint32_t requests) {
  rlc::RateLimitDescriptor user = LimitedDescriptor("user", requests, rlc::HOUR);
  if (requests == 0) {
    user.mutable_rate_limit()->Clear();
    user.mutable_rate_limit()->set_unlimited(true);
  }
  return XdsResponse(version, {RateLimitResource("gateway/e2e", "e2e", {user})});
}

class SluicedXdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    log_ = std::filesystem::temp_directory_path() /
           ("sluice-xds-e2e-" + std::to_string(::getpid()) + ".log");
    http_port_ = *FreeLoopbackPort();
    grpc_port_ = *FreeLoopbackPort();
  }
  void TearDown() override { std::filesystem::remove(log_); }

  void StartSluiced(std::vector<std::string> extra_env) {
    std::vector<std::string> env = {
        "CONFIG_TYPE=GRPC_XDS_SOTW",
        "CONFIG_GRPC_XDS_SERVER_URL=" + server_.address(),
        "CONFIG_GRPC_XDS_NODE_ID=sluiced-e2e",
        "CONFIG_GRPC_XDS_NODE_METADATA=zone=test",
        "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS=x-tenant:e2e",
        "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL=200ms",
        "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL=100ms",
        "XDS_CLIENT_BACKOFF_MAX_INTERVAL=500ms",
        "HOST=127.0.0.1",
        "PORT=" + std::to_string(http_port_),
        "GRPC_HOST=127.0.0.1",
        "GRPC_PORT=" + std::to_string(grpc_port_),
        "DEBUG_PORT=0",
        "USE_STATSD=false",
        "LOG_LEVEL=info",
    };
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    // Memory store and no drain: the test is about the config, not Redis or load balancers.
    auto process = ChildProcess::Start({SLUICED_PATH, "--store", "memory", "--drain-ms", "0"},
                                       log_.string(), env);
    ASSERT_TRUE(process.ok()) << process.status();
    process_ = *std::move(process);
  }

  TestManagementServer server_;
  std::filesystem::path log_;
  int http_port_ = 0;
  int grpc_port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

// Verifies a decision follows an update, the node and headers reach the server, the config stays
// when the server goes away, and SIGTERM is not held up by the xDS client.
TEST_F(SluicedXdsTest, DecisionsFollowTheManagementServer) {
  server_.Push(UserLimit("v1", 2));
  StartSluiced({});
  ASSERT_TRUE(WaitFor([&] { return Status(http_port_, "/healthcheck") == 200; }, 30'000))
      << "sluiced did not become healthy; log: " << ReadFile(log_);
  EXPECT_EQ(PostStatus(http_port_), 200);
  EXPECT_EQ(PostStatus(http_port_), 200);
  EXPECT_EQ(PostStatus(http_port_), 429);
  const RecordedRequest first = server_.Requests().front();
  EXPECT_EQ(first.request.node().id(), "sluiced-e2e");
  EXPECT_EQ(first.request.node().metadata().fields().at("zone").string_value(), "test");
  EXPECT_EQ(first.metadata.find("x-tenant")->second, "e2e");

  server_.Push(UserLimit("v2", 0));  // unlimited now
  EXPECT_TRUE(WaitFor([&] { return PostStatus(http_port_) == 200; }, 10'000));
  EXPECT_THAT(Body(http_port_, "/rlconfig"),
              HasSubstr("# config: xds " + server_.address() + " version v2"));
  ASSERT_TRUE(WaitFor(
      [&] {
        return !server_.Requests().empty() &&
               server_.Requests().back().request.version_info() == "v2";
      },
      10'000));
  EXPECT_THAT(Body(http_port_, "/metrics"), HasSubstr("sluice_xds_acks_total 2"));

  // Limited again (the server sends only its latest push, so wait for each ACK), then a bad
  // update: refused, and v3 keeps deciding.
  server_.Push(UserLimit("v3", 1));
  ASSERT_TRUE(
      WaitFor([&] { return server_.Requests().back().request.version_info() == "v3"; }, 10'000));
  EXPECT_TRUE(WaitFor([&] { return PostStatus(http_port_) == 429; }, 10'000));
  server_.Push(XdsResponse("v4", {RateLimitResource("bad", "", {})}));
  ASSERT_TRUE(server_.WaitFor([](const auto& r) { return r.back().request.has_error_detail(); },
                              std::chrono::seconds(10)));
  EXPECT_THAT(Body(http_port_, "/metrics"), HasSubstr("sluice_xds_nacks_total 1"));
  const RecordedRequest nack = server_.Requests().back();
  EXPECT_EQ(nack.request.version_info(), "v3");
  EXPECT_THAT(nack.request.error_detail().message(), HasSubstr("xds:bad"));
  EXPECT_EQ(PostStatus(http_port_), 429);

  server_.Stop();
  ASSERT_TRUE(WaitFor(
      [&] {
        return Body(http_port_, "/metrics").find("sluice_xds_connected 0") != std::string::npos;
      },
      10'000));
  EXPECT_EQ(Status(http_port_, "/healthcheck"), 200);
  EXPECT_EQ(PostStatus(http_port_), 429);  // v3 still decides

  const auto term = Clock::Real().Now();
  process_->Signal(SIGTERM);
  EXPECT_EQ(process_->Wait(30'000), 0) << ReadFile(log_);
  EXPECT_LT(Clock::Real().Now() - term, std::chrono::milliseconds(1500)) << ReadFile(log_);
}

// Verifies that, as the reference, sluiced opens no listener before the first config, and that
// SIGTERM while it waits ends it at once.
TEST_F(SluicedXdsTest, WaitsForTheFirstConfigAndStopsWhileWaiting) {
  StartSluiced({});
  ASSERT_TRUE(server_.WaitFor([](const auto& r) { return !r.empty(); }, std::chrono::seconds(30)))
      << ReadFile(log_);
  EXPECT_EQ(Status(http_port_, "/healthcheck"), -1);  // subscribed, but not listening
  const auto term = Clock::Real().Now();
  process_->Signal(SIGTERM);
  EXPECT_EQ(process_->Wait(30'000), 0) << ReadFile(log_);
  EXPECT_LT(Clock::Real().Now() - term, std::chrono::milliseconds(1500)) << ReadFile(log_);
}

// Verifies FORCE_START_WITHOUT_INITIAL_CONFIG: serving at once, unhealthy until a config arrives.
TEST_F(SluicedXdsTest, ForceStartServesUnhealthyUntilTheFirstConfig) {
  StartSluiced({"FORCE_START_WITHOUT_INITIAL_CONFIG=true"});
  ASSERT_TRUE(WaitFor([&] { return Status(http_port_, "/healthcheck") > 0; }, 30'000))
      << ReadFile(log_);
  EXPECT_NE(Status(http_port_, "/healthcheck"), 200);
  ASSERT_TRUE(server_.WaitFor([](const auto& r) { return !r.empty(); }, std::chrono::seconds(30)));
  server_.Push(UserLimit("v1", 2));
  EXPECT_TRUE(WaitFor([&] { return Status(http_port_, "/healthcheck") == 200; }, 10'000))
      << ReadFile(log_);
  EXPECT_EQ(PostStatus(http_port_), 200);
  process_->Signal(SIGTERM);
  EXPECT_EQ(process_->Wait(30'000), 0);
}

}  // namespace
}  // namespace sluice::testing
