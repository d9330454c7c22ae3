// Requests in flight per user, limited by a real Envoy with sluiced: each request is charged one
// hit on the way in and refunded one (hits_addend is_negative_hits, Envoy 1.38+) when its stream
// ends (apply_on_stream_done), however it ends. The upstream holds requests until the test lets
// them answer. Configs: configs/in_flight.yaml and configs/in_flight_rules.yaml, shown in
// docs/envoy.md.
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "tests/envoy/envoy_test_support.h"
#include "tests/envoy/held_upstream.h"
#include "tests/testing/envoy_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

using Answer = std::future<absl::StatusOr<BeastResponse>>;

constexpr int kInFlight = 3;  // in_flight_rules.yaml
constexpr const char* kRefunds =
    "ratelimit_service_rate_limit_total_negative_hits_total{domain=\"in-flight\","
    "key=\"in_flight_user\"}";

// A request on a connection of its own that the test can give up on mid-flight, as a client that
// closes its connection does.
class AbandonableRequest {
 public:
  AbandonableRequest(int port, const std::string& user) : socket_(io_) {
    namespace net = boost::asio;
    boost::system::error_code ec;
    socket_.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"),
                                           static_cast<unsigned short>(port)),
                    ec);
    const std::string request =
        "GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\nx-user: " + user + "\r\n\r\n";
    if (!ec) net::write(socket_, net::buffer(request), ec);
    sent_ = !ec;
  }
  bool sent() const { return sent_; }
  void Abandon() { socket_.close(); }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  bool sent_ = false;
};

class EnvoyRefundTest : public EnvoyTest {
 protected:
  // Starts Redis, the upstream, sluiced (with `sluiced_args`) and Envoy.
  void Start(const std::vector<std::string>& sluiced_args) {
    auto redis = RedisServer::Start();
    ASSERT_TRUE(redis.ok()) << redis.status();
    redis_ = *std::move(redis);
    auto upstream = HeldUpstream::Start();
    ASSERT_TRUE(upstream.ok()) << upstream.status();
    upstream_ = *std::move(upstream);
    auto sluiced = StartSluiced(EnvoyConfigPath("in_flight_rules.yaml"), redis_->Url(), dir_.path(),
                                sluiced_args);
    ASSERT_TRUE(sluiced.ok()) << sluiced.status();
    sluiced_ = *std::move(sluiced);
    auto envoy =
        EnvoyProcess::Start({.config_template = EnvoyConfig("in_flight.yaml"),
                             .values = {{"SLUICED_GRPC_PORT", std::to_string(sluiced_->grpc_port)},
                                        {"UPSTREAM_PORT", std::to_string(upstream_->port())}},
                             .ports = {"LISTENER_PORT"}});
    ASSERT_TRUE(envoy.ok()) << envoy.status();
    envoy_ = *std::move(envoy);
  }

  void TearDown() override {
    // Let every held request answer before the answers' futures are dropped.
    if (upstream_ != nullptr) upstream_->Release(100);
  }

  int port() const { return envoy_->port("LISTENER_PORT"); }

  // Sends a request of `user` to /hold, which the upstream holds, on a thread of its own; its
  // answer is the next of answers_.
  void Begin(const std::string& user) {
    const int p = port();
    answers_.push_back(std::async(std::launch::async, [p, user] {
      return EnvoyGet(p, "/hold", {{"x-user", user}});
    }));
  }

  // Waits for every answer begun so far: each must be the upstream's 200.
  void ExpectAllReleased() {
    for (Answer& answer : answers_) {
      absl::StatusOr<BeastResponse> done = answer.get();
      ASSERT_TRUE(done.ok()) << done.status();
      EXPECT_EQ(done->result_int(), 200);
      EXPECT_EQ(done->body(), "released\n");
    }
    answers_.clear();
  }

  // The status of a request the upstream answers at once.
  int Status(const std::string& user) {
    absl::StatusOr<BeastResponse> answer = EnvoyGet(port(), "/now", {{"x-user", user}});
    EXPECT_TRUE(answer.ok()) << answer.status() << Logs();
    return answer.ok() ? answer->result_int() : 0;
  }

  // Waits until sluiced has taken `n` refunds: Envoy sends them after the stream is over, so a
  // test that goes on before they land would race them.
  bool WaitForRefunds(int64_t n) {
    return WaitFor([&] { return SluicedCounter(sluiced_->http_port, kRefunds).value_or(-1) == n; },
                   10'000);
  }

  std::string Logs() const {
    return "\nenvoy log:\n" + envoy_->Log() + "\nsluiced log:\n" + sluiced_->Log();
  }

  // Verifies at most kInFlight requests of a user are in flight at once: refused requests do not
  // free a slot, another user has slots of its own, and a finished request frees its slot.
  void ExpectTheInFlightBoundHolds() {
    for (int i = 0; i < kInFlight; ++i) Begin("alice");
    ASSERT_TRUE(upstream_->WaitForHeld(kInFlight)) << upstream_->held() << Logs();

    // Refused: each 429 ends a stream too, and Envoy refunds it as any other.
    EXPECT_EQ(Status("alice"), 429) << Logs();
    ASSERT_TRUE(WaitForRefunds(1)) << Logs();
    EXPECT_EQ(Status("alice"), 429) << "a refused request's refund freed a slot" << Logs();
    ASSERT_TRUE(WaitForRefunds(2)) << Logs();
    EXPECT_EQ(Status("bob"), 200);
    ASSERT_TRUE(WaitForRefunds(3)) << Logs();

    // One finishes: its slot is free once its refund lands.
    upstream_->Release(1);
    ASSERT_TRUE(upstream_->WaitForHeld(kInFlight - 1));
    ASSERT_TRUE(WaitForRefunds(4)) << Logs();
    Begin("alice");
    ASSERT_TRUE(upstream_->WaitForHeld(kInFlight)) << Logs();
    EXPECT_EQ(Status("alice"), 429);

    upstream_->Release(kInFlight);
    ExpectAllReleased();
    // Every charge came back (5 refunds so far, then the 3 just released): all slots are free.
    ASSERT_TRUE(WaitForRefunds(5 + kInFlight)) << Logs();
    for (int i = 0; i < kInFlight; ++i) Begin("alice");
    EXPECT_TRUE(upstream_->WaitForHeld(kInFlight)) << Logs();
    EXPECT_EQ(Status("alice"), 429);
  }

  TempDir dir_{"sluice-envoy-refund"};
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<HeldUpstream> upstream_;
  std::optional<SluicedProcess> sluiced_;
  std::unique_ptr<EnvoyProcess> envoy_;
  // Last, so that it goes first: a future of std::async waits for its request when destroyed, and
  // TearDown() has let every held request answer by then.
  std::vector<Answer> answers_;
};

// The rule's `debt: true` records a refused request's hit, so the refund Envoy sends when its
// stream ends (it does for 429s too) gives back exactly what it took. Without it, each 429 would
// free a slot that was never charged, and the second 429 of ExpectTheInFlightBoundHolds() would
// be a 200.
TEST_F(EnvoyRefundTest, InFlightBoundHoldsWithADebtRule) {
  ASSERT_NO_FATAL_FAILURE(Start({}));
  ExpectTheInFlightBoundHolds();
}

// Exact-reference mode counts every refused hit, as the reference does: the same bound.
TEST_F(EnvoyRefundTest, InFlightBoundHoldsUnderReferenceSemantics) {
  ASSERT_NO_FATAL_FAILURE(Start({"--reference-semantics"}));
  ExpectTheInFlightBoundHolds();
}

// Verifies a client that gives up on a request frees its slot: Envoy resets the stream, which ends
// it, and refunds it.
TEST_F(EnvoyRefundTest, AClientThatGivesUpFreesItsSlot) {
  ASSERT_NO_FATAL_FAILURE(Start({}));
  for (int i = 0; i < kInFlight - 1; ++i) Begin("alice");
  AbandonableRequest abandoned(port(), "alice");
  ASSERT_TRUE(abandoned.sent());
  ASSERT_TRUE(upstream_->WaitForHeld(kInFlight)) << upstream_->held() << Logs();

  abandoned.Abandon();
  // Envoy closes its upstream connection too, so the upstream lets go of that request.
  ASSERT_TRUE(upstream_->WaitForHeld(kInFlight - 1)) << Logs();
  ASSERT_TRUE(WaitForRefunds(1)) << Logs();
  Begin("alice");
  ASSERT_TRUE(upstream_->WaitForHeld(kInFlight)) << Logs();
  EXPECT_EQ(Status("alice"), 429);

  upstream_->Release(kInFlight);
  ExpectAllReleased();
}

}  // namespace
}  // namespace sluice::testing
