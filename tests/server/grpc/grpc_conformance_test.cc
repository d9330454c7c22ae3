// The gRPC protocol cases beyond the usual calls, asked by the gRPC C++ client of both engines
// (--grpc-engine grpc and nghttp2): unknown methods, compressed and oversized messages, deadlines,
// large metadata, and Stop() with a call in flight. Loopback only; real time only as a watchdog.
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "gtest/gtest.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <grpcpp/grpcpp.h>

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/grpc/grpc_server.h"
#include "src/server/stats/metrics.h"
#include "tests/server/grpc/grpc_engine_test_support.h"
#include "tests/testing/child_process.h"
#include "tests/testing/deferred_store.h"

namespace sluice::server {
namespace {

using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;

using grpc_test::IpRequest;
using grpc_test::UnaryRaw;

// True when nothing accepts on 127.0.0.1:`port` any more.
bool Refused(int port) {
  boost::asio::io_context context;
  boost::asio::ip::tcp::socket socket(context);
  boost::system::error_code ec;
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)}, ec);
  return ec == boost::asio::error::connection_refused;
}

class GrpcConformanceTest : public ::testing::TestWithParam<GrpcEngine> {
 protected:
  void SetUp() override {
    auto memory = MemoryStore::Create({});
    ASSERT_TRUE(memory.ok());
    memory_ = *std::move(memory);
    deferred_ = std::make_unique<testing::DeferredStore>(*memory_);
  }

  void Start(bool deferred = false) {
    service_ = std::make_unique<RateLimitService>(
        deferred ? static_cast<Store&>(*deferred_) : *memory_, metrics_, RateLimitServiceOptions{});
    ASSERT_TRUE(grpc_test::SetEdgeConfig(*service_, 1000).ok());
    server_ = std::make_unique<GrpcServer>(
        GrpcServerOptions{.engine = GetParam(), .address = "127.0.0.1:0"}, *service_);
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = envoy::service::ratelimit::v3::RateLimitService::NewStub(channel_);
  }

  grpc::Status Call(grpc::ClientContext& context, const RateLimitRequest& request = IpRequest()) {
    if (context.deadline() == std::chrono::system_clock::time_point::max()) {
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    }
    RateLimitResponse response;
    return stub_->ShouldRateLimit(&context, request, &response);
  }

  grpc::Status Call() {
    grpc::ClientContext context;
    return Call(context);
  }

  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<testing::DeferredStore> deferred_;
  Metrics metrics_;
  std::unique_ptr<RateLimitService> service_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<envoy::service::ratelimit::v3::RateLimitService::Stub> stub_;
};

TEST_P(GrpcConformanceTest, UnknownMethodIsUnimplemented) {
  Start();
  EXPECT_EQ(
      UnaryRaw(channel_, "/envoy.service.ratelimit.v3.RateLimitService/Nothing", "").error_code(),
      grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(UnaryRaw(channel_, "/no.Such/Service", "").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_TRUE(Call().ok());
}

// Verifies a compressed request is refused with a status and a message (gRPC C++ may also accept
// it: then it must be answered as usual), and that the connection goes on serving.
TEST_P(GrpcConformanceTest, CompressedRequestIsRefusedOrServed) {
  Start();
  grpc::ClientContext context;
  context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  // Compressible, so that the client does compress (it sends a message as it is when compressing
  // would not make it smaller).
  const grpc::Status status = Call(context, IpRequest(std::string(4096, '1')));
  if (GetParam() == GrpcEngine::kNghttp2) {
    EXPECT_TRUE(status.error_code() == grpc::StatusCode::UNIMPLEMENTED ||
                status.error_code() == grpc::StatusCode::INTERNAL)
        << status.error_code() << " " << status.error_message();
    EXPECT_NE(status.error_message(), "");
  } else {
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_TRUE(Call().ok());
}

// Verifies a request beyond the 1 MiB message limit is RESOURCE_EXHAUSTED, not read whole, and
// the channel goes on serving.
TEST_P(GrpcConformanceTest, MessageOverTheLimitIsResourceExhausted) {
  Start();
  const grpc::Status status =
      UnaryRaw(channel_, grpc_test::kShouldRateLimit, std::string((size_t{1} << 20) + 100, 'x'));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_TRUE(Call().ok());
}

// Verifies a call whose deadline passes while the store holds it ends DEADLINE_EXCEEDED for the
// client, and that the late answer leaves the server serving, with nothing in flight.
TEST_P(GrpcConformanceTest, DeadlinePassedWhileTheStoreHoldsTheCall) {
  Start(/*deferred=*/true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  EXPECT_EQ(Call(context).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(deferred_->RunPendingOnThread(), 1u);
  EXPECT_EQ(server_->Stats().in_flight, 0u);
  std::promise<grpc::Status> next;
  grpc::ClientContext next_context;
  RateLimitResponse response;
  const RateLimitRequest request = IpRequest();
  stub_->async()->ShouldRateLimit(&next_context, &request, &response,
                                  [&next](grpc::Status s) { next.set_value(s); });
  ASSERT_TRUE(testing::WaitFor([&] { return deferred_->pending() == 1; }, 10'000));
  deferred_->RunPendingOnThread();
  EXPECT_TRUE(next.get_future().get().ok());
}

// Verifies metadata beyond the header bound fails that call, and the channel serves again: at
// once on the nghttp2 engine, which resets only that stream; after reconnecting on gRPC C++,
// which closes the connection.
TEST_P(GrpcConformanceTest, HugeMetadataFailsThatCall) {
  Start();
  grpc::ClientContext context;
  context.AddMetadata("x-huge", std::string(64 << 10, 'a'));
  EXPECT_FALSE(Call(context).ok());
  if (GetParam() == GrpcEngine::kNghttp2) {
    EXPECT_TRUE(Call().ok());
  } else {
    EXPECT_TRUE(testing::WaitFor([&] { return Call().ok(); }, 10'000));
  }
}

// Verifies Stop() with a call in flight stops accepting at once, then lets the call finish: the
// client gets its answer, and Stop() returns.
TEST_P(GrpcConformanceTest, StopFinishesTheCallInFlight) {
  Start(/*deferred=*/true);
  const int port = server_->port();
  std::promise<grpc::Status> done;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  RateLimitResponse response;
  const RateLimitRequest request = IpRequest();
  stub_->async()->ShouldRateLimit(&context, &request, &response,
                                  [&done](grpc::Status s) { done.set_value(s); });
  ASSERT_TRUE(testing::WaitFor([&] { return deferred_->pending() == 1; }, 10'000));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    server_->Stop();
    stopped.store(true);
  });
  ASSERT_TRUE(testing::WaitFor([&] { return Refused(port); }, 10'000));
  EXPECT_FALSE(stopped.load());
  EXPECT_EQ(deferred_->RunPendingOnThread(), 1u);
  const grpc::Status status = done.get_future().get();
  EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
  stopper.join();
}

// Verifies Stop() waits for a decision the store still holds after its client went away: the late
// answer then finds the server's state alive (ASan sees it otherwise), and Stop() returns after.
TEST_P(GrpcConformanceTest, StopWaitsForADecisionWhoseClientLeft) {
  Start(/*deferred=*/true);
  const int port = server_->port();
  {
    std::promise<grpc::Status> done;
    grpc::ClientContext context;
    RateLimitResponse response;
    const RateLimitRequest request = IpRequest();
    stub_->async()->ShouldRateLimit(&context, &request, &response,
                                    [&done](grpc::Status s) { done.set_value(s); });
    ASSERT_TRUE(testing::WaitFor([&] { return deferred_->pending() == 1; }, 10'000));
    context.TryCancel();
    done.get_future().wait();
    stub_.reset();
    channel_.reset();
  }
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    server_->Stop();
    stopped.store(true);
  });
  ASSERT_TRUE(testing::WaitFor([&] { return Refused(port); }, 10'000));
  EXPECT_FALSE(stopped.load());
  EXPECT_EQ(deferred_->RunPendingOnThread(), 1u);
  stopper.join();
  EXPECT_TRUE(stopped.load());
}

INSTANTIATE_TEST_SUITE_P(Engines, GrpcConformanceTest, ::testing::ValuesIn(grpc_test::kEngines),
                         grpc_test::EngineName);

}  // namespace
}  // namespace sluice::server
