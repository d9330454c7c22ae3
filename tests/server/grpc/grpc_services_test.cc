// GrpcServer serving a list of services (src/server/grpc/grpc_service.h): the rate limit service
// and a second one beside it, on both engines. The second answers health under its own name, adds
// to the server's call counters and, on the nghttp2 engine, has a method of its own.
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "gtest/gtest.h"
#include <grpcpp/grpcpp.h>

#include "sluice/memory_store.h"

#include "src/server/grpc/grpc_server.h"
#include "src/server/grpc/grpc_service.h"
#include "src/server/grpc/rls_grpc_service.h"
#include "src/server/grpc/rls_proto.h"
#include "src/server/stats/metrics.h"
#include "tests/server/grpc/grpc_engine_test_support.h"
#include "tests/testing/grpc_probes.h"

namespace sluice::server {
namespace {

// A second service: health as "echo", /test.Echo/Echo on the nghttp2 engine (none on gRPC C++,
// which then registers a service without methods), and 7 unparsable calls in its counters.
class EchoService final : public GrpcService {
 public:
  std::string_view health_name() const override { return "echo"; }
  grpc::Service& GrpcCppService() override { return service_; }
  void AddH2Methods(absl::flat_hash_map<std::string, h2::UnaryMethod>& methods) override {
    methods["/test.Echo/Echo"] = [](std::string_view bytes, const std::string& /*peer*/,
                                    h2::Responder respond) {
      std::move(respond)(std::string(bytes));
    };
  }
  bool WaitIdle(std::chrono::milliseconds /*bound*/) override { return true; }
  GrpcCallStats CallStats() const override { return {.unparsable_requests = 7}; }

 private:
  grpc::Service service_;
};

class GrpcServicesTest : public ::testing::TestWithParam<GrpcEngine> {
 protected:
  void SetUp() override {
    auto memory = MemoryStore::Create({});
    ASSERT_TRUE(memory.ok());
    store_ = *std::move(memory);
    service_ = std::make_unique<RateLimitService>(*store_, metrics_, RateLimitServiceOptions{});
    ASSERT_TRUE(grpc_test::SetEdgeConfig(*service_, 1).ok());
    rls_ = std::make_unique<RlsGrpcService>(*service_, RlsGrpcServiceOptions{});
    server_ = std::make_unique<GrpcServer>(
        GrpcServerOptions{.engine = GetParam(), .address = "127.0.0.1:0"},
        std::vector<GrpcService*>{rls_.get(), &echo_});
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
  }

  Metrics metrics_;
  std::unique_ptr<MemoryStore> store_;
  std::unique_ptr<RateLimitService> service_;
  std::unique_ptr<RlsGrpcService> rls_;
  EchoService echo_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_P(GrpcServicesTest, TheRateLimitServiceAnswersBesideAnother) {
  auto stub = envoy::service::ratelimit::v3::RateLimitService::NewStub(channel_);
  for (auto expected : {RateLimitResponse::OK, RateLimitResponse::OVER_LIMIT}) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    RateLimitResponse response;
    ASSERT_TRUE(stub->ShouldRateLimit(&context, grpc_test::IpRequest(), &response).ok());
    EXPECT_EQ(response.overall_code(), expected);
  }
}

TEST_P(GrpcServicesTest, HealthAnswersForEveryServiceName) {
  EXPECT_EQ(testing::GrpcHealthStatus(channel_, "ratelimit"), 1);
  EXPECT_EQ(testing::GrpcHealthStatus(channel_, "echo"), 1);
  server_->SetServing(false);
  EXPECT_EQ(testing::GrpcHealthStatus(channel_, "ratelimit"), 2);
  EXPECT_EQ(testing::GrpcHealthStatus(channel_, "echo"), 2);
}

TEST_P(GrpcServicesTest, StatsAddUpTheServicesCounters) {
  EXPECT_EQ(server_->Stats().unparsable_requests, 7u);
  EXPECT_EQ(grpc_test::UnaryRaw(channel_, grpc_test::kShouldRateLimit, "\xff garbage").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(server_->Stats().unparsable_requests, 8u);
}

TEST_P(GrpcServicesTest, TheSecondServiceHasItsOwnMethod) {
  if (GetParam() != GrpcEngine::kNghttp2) GTEST_SKIP() << "no methods on gRPC C++";
  EXPECT_TRUE(grpc_test::UnaryRaw(channel_, "/test.Echo/Echo", "hello").ok());
}

INSTANTIATE_TEST_SUITE_P(Engines, GrpcServicesTest, ::testing::ValuesIn(grpc_test::kEngines),
                         grpc_test::EngineName);

}  // namespace
}  // namespace sluice::server
