// What the gRPC server tests share: both engines as test parameters, the `edge` domain they serve,
// its request, and a call with raw bytes (for what a generated stub cannot send).
//
// Example:
//   ASSERT_TRUE(grpc_test::SetEdgeConfig(*service_, 1000).ok());
//   grpc_test::UnaryRaw(channel, grpc_test::kShouldRateLimit, "\xff garbage");
//   INSTANTIATE_TEST_SUITE_P(Engines, MyTest, ::testing::ValuesIn(grpc_test::kEngines),
//                            grpc_test::EngineName);
#ifndef SLUICE_TESTS_SERVER_GRPC_GRPC_ENGINE_TEST_SUPPORT_H_
#define SLUICE_TESTS_SERVER_GRPC_GRPC_ENGINE_TEST_SUPPORT_H_

#include <array>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "gtest/gtest.h"
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/grpc/grpc_server.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/deferred_store.h"

namespace sluice::server::grpc_test {

// Both engines; EngineName() names the instantiations "grpc" and "nghttp2".
inline constexpr std::array<GrpcEngine, 2> kEngines{GrpcEngine::kGrpc, GrpcEngine::kNghttp2};

inline std::string EngineName(const ::testing::TestParamInfo<GrpcEngine>& info) {
  return info.param == GrpcEngine::kGrpc ? "grpc" : "nghttp2";
}

inline constexpr char kShouldRateLimit[] =
    "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

// Gives `service` the `edge` domain: `requests_per_hour` decisions per remote_address.
inline absl::Status SetEdgeConfig(RateLimitService& service, int requests_per_hour) {
  const std::string yaml = absl::StrCat(
      "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: hour, "
      "requests_per_unit: ",
      requests_per_hour, "}\n");
  const ConfigSource source{.name = "edge.yaml", .content = yaml};
  auto config = ParseRateLimitConfig({&source, 1});
  if (!config.ok()) return config.status();
  service.SetConfig(*config);
  return absl::OkStatus();
}

// A ShouldRateLimit request of the `edge` domain for remote_address `ip`.
inline envoy::service::ratelimit::v3::RateLimitRequest IpRequest(
    const std::string& ip = "10.1.1.1") {
  envoy::service::ratelimit::v3::RateLimitRequest request;
  request.set_domain("edge");
  auto* entry = request.add_descriptors()->add_entries();
  entry->set_key("remote_address");
  entry->set_value(ip);
  return request;
}

// Calls `method` with `bytes` as the request, as they are; a 10 s deadline.
inline grpc::Status UnaryRaw(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& method, const std::string& bytes) {
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::GenericStub stub(channel);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(status); });
  return done.get_future().get();
}

// A GrpcServer on the engine of the test's parameter, serving the `edge` domain from the memory
// store, or through a DeferredStore over it that answers only when told.
class EngineServerTest : public ::testing::TestWithParam<GrpcEngine> {
 protected:
  explicit EngineServerTest(int requests_per_hour) : requests_per_hour_(requests_per_hour) {}

  void SetUp() override {
    auto memory = MemoryStore::Create({});
    ASSERT_TRUE(memory.ok());
    memory_ = *std::move(memory);
    deferred_ = std::make_unique<testing::DeferredStore>(*memory_);
  }

  // Serves through the DeferredStore when `deferred`, else straight from memory.
  void Start(GrpcServerOptions options, bool deferred = false) {
    service_ = std::make_unique<RateLimitService>(
        deferred ? static_cast<Store&>(*deferred_) : *memory_, metrics_, RateLimitServiceOptions{});
    ASSERT_TRUE(SetEdgeConfig(*service_, requests_per_hour_).ok());
    options.engine = GetParam();
    server_ = std::make_unique<GrpcServer>(std::move(options), *service_);
    ASSERT_TRUE(server_->Start().ok());
  }

  const int requests_per_hour_;
  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<testing::DeferredStore> deferred_;
  Metrics metrics_;
  std::unique_ptr<RateLimitService> service_;
  std::unique_ptr<GrpcServer> server_;
};

}  // namespace sluice::server::grpc_test

#endif  // SLUICE_TESTS_SERVER_GRPC_GRPC_ENGINE_TEST_SUPPORT_H_
