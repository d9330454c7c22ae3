// sluiced's listeners when file descriptors run out (issue 13, point 1). At a low RLIMIT_NOFILE,
// idle connections on the HTTP and the gRPC port exhaust the descriptors (caps raised out of the
// way) or meet the connection caps (the defaults): the accept loops must back off instead of
// spinning, and both ports must serve again once the connections are released. Real processes
// and sockets: every wait is a bounded poll; the one fixed interval (a second of holding) is what
// is measured.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "gtest/gtest.h"
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include "sluice/clock.h"

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/idle_connections.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {
namespace {

bool Healthy(int port) {
  absl::StatusOr<HttpResult> r = HttpGet(port, "/healthcheck");
  return r.ok() && r->status == 200;
}

// One ShouldRateLimit call on a channel of its own (no reconnect backoff carried over from an
// earlier attempt); true when it is answered.
bool GrpcServes(int port) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = envoy::service::ratelimit::v3::RateLimitService::NewStub(grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
  envoy::service::ratelimit::v3::RateLimitRequest request;
  request.set_domain("d");
  auto* entry = request.add_descriptors()->add_entries();
  entry->set_key("k");
  entry->set_value("v");
  envoy::service::ratelimit::v3::RateLimitResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return stub->ShouldRateLimit(&context, request, &response).ok();
}

int64_t MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::Real().Now() - start).count();
}

// Each scenario runs with both gRPC engines (--grpc-engine).
class SluicedFdExhaustion : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-fd-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    std::ofstream(dir_ / "config.yaml") << "domain: d\ndescriptors:\n  - key: k\n    rate_limit: "
                                           "{unit: second, requests_per_unit: 1000}\n";
    log_ = (dir_ / "sluiced.log").string();
  }
  void TearDown() override {
    sluiced_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Starts sluiced under `ulimit -n 128` (soft and hard, so it cannot raise it) with `extra`.
  void Start(const std::vector<std::string>& extra) {
    http_port_ = *FreeLoopbackPort();
    grpc_port_ = *FreeLoopbackPort();
    std::vector<std::string> argv = {"/bin/sh",
                                     "-c",
                                     "ulimit -n 128 && exec \"$0\" \"$@\"",
                                     SLUICED_PATH,
                                     "--config",
                                     (dir_ / "config.yaml").string(),
                                     "--http",
                                     "127.0.0.1:" + std::to_string(http_port_),
                                     "--grpc",
                                     "127.0.0.1:" + std::to_string(grpc_port_),
                                     "--drain-ms",
                                     "0",
                                     "--grpc-engine",
                                     GetParam()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    absl::StatusOr<std::unique_ptr<ChildProcess>> sluiced = ChildProcess::Start(argv, log_);
    ASSERT_TRUE(sluiced.ok()) << sluiced.status();
    sluiced_ = *std::move(sluiced);
    ASSERT_TRUE(WaitFor([&] { return Healthy(http_port_); }, 10'000)) << "log: " << log_;
    ASSERT_TRUE(GrpcServes(grpc_port_)) << "log: " << log_;
  }

  std::string Log() const {
    std::ifstream in(log_);
    return {(std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()};
  }

  // After the connections are released: both ports serve again within 5 s.
  void ExpectBothPortsServeAgain() {
    const auto start = Clock::Real().Now();
    EXPECT_TRUE(WaitFor([&] { return Healthy(http_port_); }, 5'000))
        << "the HTTP port did not serve again; log: " << log_;
    RecordProperty("http_recovery_ms", std::to_string(MillisSince(start)));
    EXPECT_TRUE(WaitFor([&] { return GrpcServes(grpc_port_); }, 5'000))
        << "the gRPC port did not serve again; log: " << log_;
    RecordProperty("grpc_recovery_ms", std::to_string(MillisSince(start)));
  }

  std::filesystem::path dir_;
  std::string log_;
  int http_port_ = 0;
  int grpc_port_ = 0;
  std::unique_ptr<ChildProcess> sluiced_;
};

// Verifies that with the caps out of the way, 400 idle connections on each port exhaust the
// descriptors: both accept loops back off (no spinning) and both ports serve again after the
// release. gRPC 1.51's own listener would stop for good at its first EMFILE.
TEST_P(SluicedFdExhaustion, BothAcceptLoopsBackOffAndRecover) {
  Start({"--http-max-connections", "100000", "--grpc-max-connections", "100000"});
  {
    IdleConnections http_held(http_port_, 400);
    IdleConnections grpc_held(grpc_port_, 400);
    ASSERT_EQ(http_held.size(), 400u);
    ASSERT_EQ(grpc_held.size(), 400u);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // Reach EMFILE.
    const double cpu_before = ProcessCpuSeconds(sluiced_->pid());
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double cpu_used = ProcessCpuSeconds(sluiced_->pid()) - cpu_before;
    ASSERT_GE(cpu_before, 0);
    EXPECT_LT(cpu_used, 0.1) << "an accept loop spins; log: " << log_;
    RecordProperty("cpu_seconds_while_held", std::to_string(cpu_used));
  }
  ExpectBothPortsServeAgain();
  const std::string text = Log();
  EXPECT_NE(text.find("http: accept failed (Too many open files)"), std::string::npos) << text;
  EXPECT_NE(text.find("grpc: accept failed (Too many open files)"), std::string::npos) << text;
}

// Verifies the default caps (a quarter of the 128 descriptors each): beyond 32 connections a
// port closes new ones at once, descriptors never run out, and both ports serve after the
// release.
TEST_P(SluicedFdExhaustion, DefaultCapsKeepDescriptorsFree) {
  Start({});
  {
    IdleConnections http_held(http_port_, 400);
    IdleConnections grpc_held(grpc_port_, 400);
    ASSERT_EQ(http_held.size(), 400u);
    ASSERT_EQ(grpc_held.size(), 400u);
    // The caps are met once each port has closed its excess connections.
    EXPECT_TRUE(WaitFor(
        [&] {
          const std::string text = Log();
          return text.find("http: 32 connections open, the cap") != std::string::npos &&
                 text.find("grpc: 32 connections open, the cap") != std::string::npos;
        },
        5'000))
        << Log();
  }
  ExpectBothPortsServeAgain();
  EXPECT_EQ(Log().find("Too many open files"), std::string::npos) << Log();
}

INSTANTIATE_TEST_SUITE_P(Engines, SluicedFdExhaustion, ::testing::Values("grpc", "nghttp2"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sluice::testing
