#include "src/server/grpc/grpc_server.h"

#include <memory>
#include <string>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "gtest/gtest.h"
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include "sluice/config.h"
#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"

#include "src/server/grpc/rls_proto.h"
#include "src/server/stats/metrics.h"
#include "tests/server/grpc/grpc_engine_test_support.h"
#include "tests/testing/faulty_store.h"
#include "tests/testing/grpc_probes.h"

namespace sluice::server {
namespace {

using grpc_test::IpRequest;

// Each scenario runs against both engines.
class GrpcServerTest : public ::testing::TestWithParam<GrpcEngine> {
 protected:
  void SetUp() override {
    auto memory = MemoryStore::Create({});
    ASSERT_TRUE(memory.ok());
    auto faulty = std::make_unique<testing::FaultyStore>(*std::move(memory));
    faulty_ = faulty.get();
    store_ = WithFailurePolicy(std::move(faulty), {.breaker_failure_threshold = 0});
    service_ = std::make_unique<RateLimitService>(*store_, metrics_, RateLimitServiceOptions{});
    ASSERT_TRUE(grpc_test::SetEdgeConfig(*service_, 2).ok());
    server_ = std::make_unique<GrpcServer>(
        GrpcServerOptions{.engine = GetParam(), .address = "127.0.0.1:0"}, *service_);
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = envoy::service::ratelimit::v3::RateLimitService::NewStub(channel_);
  }

  grpc::Status Call(const RateLimitRequest& request, RateLimitResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->ShouldRateLimit(&context, request, response);
  }

  int HealthStatus(const std::string& service) {
    return testing::GrpcHealthStatus(channel_, service);
  }

  Metrics metrics_;
  testing::FaultyStore* faulty_ = nullptr;
  std::unique_ptr<FailurePolicyStore> store_;
  std::unique_ptr<RateLimitService> service_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<envoy::service::ratelimit::v3::RateLimitService::Stub> stub_;
};

TEST_P(GrpcServerTest, ShouldRateLimitOverTheWire) {
  RateLimitResponse response;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Call(IpRequest(), &response).ok());
    EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
  }
  ASSERT_TRUE(Call(IpRequest(), &response).ok());
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OVER_LIMIT);
  ASSERT_EQ(response.statuses_size(), 1);
  EXPECT_EQ(response.statuses(0).current_limit().unit(), RateLimitResponse::RateLimit::HOUR);
}

TEST_P(GrpcServerTest, BadRequestIsInvalidArgument) {
  RateLimitRequest request;
  request.set_domain("edge");
  RateLimitResponse response;
  EXPECT_EQ(Call(request, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// Verifies a store failure with no failure policy reaches Envoy as UNAVAILABLE, so that its own
// failure_mode_deny decides.
TEST_P(GrpcServerTest, StoreFailureIsUnavailable) {
  faulty_->Fail(absl::UnavailableError("redis down"));
  RateLimitResponse response;
  EXPECT_EQ(Call(IpRequest(), &response).error_code(), grpc::StatusCode::UNAVAILABLE);
}

// Verifies grpc.health.v1.Health is served, for the server and for "ratelimit" (the reference's
// service name), and follows SetServing().
TEST_P(GrpcServerTest, HealthServiceFollowsSetServing) {
  EXPECT_EQ(HealthStatus(""), 1);
  EXPECT_EQ(HealthStatus("ratelimit"), 1);
  server_->SetServing(false);
  EXPECT_EQ(HealthStatus(""), 2);
  EXPECT_EQ(HealthStatus("ratelimit"), 2);
  server_->SetServing(true);
  EXPECT_EQ(HealthStatus(""), 1);
  EXPECT_EQ(HealthStatus("nothing"), -static_cast<int>(grpc::StatusCode::NOT_FOUND));
}

INSTANTIATE_TEST_SUITE_P(Engines, GrpcServerTest, ::testing::ValuesIn(grpc_test::kEngines),
                         grpc_test::EngineName);

// Verifies the nghttp2 engine refuses at start what it cannot serve (it has no TLS, no Unix
// socket, and does not resolve names), naming the way out.
TEST(GrpcServer, Nghttp2EngineRefusesTlsUnixSocketsAndHostNames) {
  auto memory = MemoryStore::Create({});
  ASSERT_TRUE(memory.ok());
  Metrics metrics;
  RateLimitService service(**memory, metrics, RateLimitServiceOptions{});
  for (const GrpcServerOptions& options :
       {GrpcServerOptions{.engine = GrpcEngine::kNghttp2, .address = "unix:/tmp/sluice-h2.sock"},
        GrpcServerOptions{.engine = GrpcEngine::kNghttp2, .address = "localhost:0"},
        GrpcServerOptions{.engine = GrpcEngine::kNghttp2,
        .address = "127.0.0.1:0",
        .tls_cert_file = "/etc/cert.pem",
        .tls_key_file = "/etc/key.pem"}}) {
    GrpcServer server(options, service);
    const absl::Status s = server.Start();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << options.address << ": " << s;
    EXPECT_NE(s.message().find("--grpc-engine grpc"), absl::string_view::npos) << s;
  }
}

TEST(GrpcServer, ListensOnAUnixSocketAndAgesConnections) {
  auto memory = MemoryStore::Create({});
  ASSERT_TRUE(memory.ok());
  Metrics metrics;
  RateLimitService service(**memory, metrics, RateLimitServiceOptions{});
  const std::string path = "/tmp/sluice-grpc-" + std::to_string(::getpid()) + ".sock";
  GrpcServer server(GrpcServerOptions{.address = "unix:" + path,
                                      .max_connection_age = std::chrono::hours(24),
                                      .max_connection_age_grace = std::chrono::hours(1)},
                    service);
  ASSERT_TRUE(server.Start().ok());
  auto stub = envoy::service::ratelimit::v3::RateLimitService::NewStub(
      grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials()));
  RateLimitRequest request;
  request.set_domain("edge");
  request.add_descriptors()->add_entries()->set_key("k");
  RateLimitResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  EXPECT_TRUE(stub->ShouldRateLimit(&context, request, &response).ok());
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
  server.Stop();
  ::unlink(path.c_str());
}

TEST(GrpcServer, MissingTlsFilesAreRefused) {
  auto memory = MemoryStore::Create({});
  ASSERT_TRUE(memory.ok());
  Metrics metrics;
  RateLimitService service(**memory, metrics, RateLimitServiceOptions{});
  GrpcServer server(GrpcServerOptions{.tls_cert_file = "/nonexistent/cert.pem",
                                      .tls_key_file = "/nonexistent/key.pem"},
                    service);
  EXPECT_TRUE(absl::IsInvalidArgument(server.Start()));
}

}  // namespace
}  // namespace sluice::server
