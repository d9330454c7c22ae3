// Tests of the Boost.Beast adapter: the request view, the delivery of the verdict on the
// connection's executor, and the responses it builds.
#include "sluice/http/beast.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http.hpp>

#include "sluice/memory_store.h"

#include "tests/http/http_test_util.h"
#include "tests/mocks/mock_store.h"

namespace sluice::http {
namespace {

namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using ::sluice::http::testing::Rules;
using ::testing::_;
using ::testing::StrictMock;

constexpr char kRules[] = R"(
routes:
  - name: orders
    method: GET
    path: /api/orders/{id}
    limits: [{name: burst, limit: 1, period: 1m}]
)";

bhttp::request<bhttp::string_body> OrderRequest() {
  bhttp::request<bhttp::string_body> req(bhttp::verb::get, "/api/orders/42?expand=items", 11);
  req.set("X-Forwarded-For", "198.51.100.7");
  req.set(bhttp::field::authorization, "Bearer alice");
  return req;
}

const net::ip::tcp::endpoint kPeer(net::ip::make_address("192.0.2.7"), 40000);

TEST(BeastRequestView, DescribesTheRequest) {
  const bhttp::request<bhttp::string_body> req = OrderRequest();
  BeastRequestView view(req, kPeer);
  EXPECT_EQ(view.view().method, "GET");
  EXPECT_EQ(view.view().path, "/api/orders/42");
  EXPECT_EQ(view.view().peer_address, "192.0.2.7");
  EXPECT_EQ(view.view().Header("x-forwarded-for"), "198.51.100.7");
  EXPECT_EQ(view.view().Header("Authorization"), "Bearer alice");
  EXPECT_EQ(view.view().Header("Cookie"), std::nullopt);
}

// Verifies that the peer is printed as IpAddress prints it (the identity key relies on the same
// text from both), at the digit-count boundaries of each octet.
TEST(BeastRequestView, PrintsThePeerAsIpAddressDoes) {
  for (const char* text : {"0.0.0.0", "9.10.99.100", "255.255.255.255", "2001:db8::1"}) {
    const net::ip::address address = net::ip::make_address(text);
    EXPECT_EQ(BeastRequestView::FormatPeer(address), text);
    EXPECT_EQ(BeastRequestView::FormatPeer(address), ParseIpAddress(text)->ToString());
  }
}

TEST(BeastAdapter, DeliversVerdictsOnTheExecutorAndBuildsResponses) {
  std::unique_ptr<MemoryStore> store = MemoryStore::Create({}).value();
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(), .config = Rules(kRules)}).value();
  net::io_context ioc;
  auto strand = net::make_strand(ioc);
  std::vector<Verdict> verdicts;
  bool ran_inline = false;
  net::post(strand, [&] {
    // Called from the strand with an inline store: the verdict is delivered before the call
    // returns (dispatch), as a Beast session expects.
    CheckBeastRequest(*middleware, strand, OrderRequest(), kPeer,
                      [&](Verdict v) { verdicts.push_back(std::move(v)); });
    ran_inline = verdicts.size() == 1;
    CheckBeastRequest(*middleware, strand, OrderRequest(), kPeer,
                      [&](Verdict v) { verdicts.push_back(std::move(v)); });
  });
  ioc.run();
  EXPECT_TRUE(ran_inline);
  ASSERT_EQ(verdicts.size(), 2u);
  ASSERT_TRUE(verdicts[0].passed());
  bhttp::response<bhttp::string_body> ok(bhttp::status::ok, 11);
  ApplyVerdictHeaders(verdicts[0], ok);
  EXPECT_EQ(ok["RateLimit-Policy"], R"("burst";q=1;w=60)");
  EXPECT_EQ(ok["RateLimit"].substr(0, 13), R"("burst";r=0;t)");

  ASSERT_FALSE(verdicts[1].passed());
  const bhttp::response<bhttp::string_body> rejection = MakeRejection(verdicts[1], 11, true);
  EXPECT_EQ(rejection.result(), bhttp::status::too_many_requests);
  EXPECT_EQ(rejection[bhttp::field::content_type], "application/problem+json");
  EXPECT_FALSE(rejection[bhttp::field::retry_after].empty());
  EXPECT_EQ(rejection[bhttp::field::content_length], std::to_string(verdicts[1].body.size()));
  EXPECT_TRUE(rejection.keep_alive());
  EXPECT_THAT(rejection.body(), ::testing::HasSubstr("violated-policies"));
}

// Verifies BeastCheckOptions: a policy named for the handler decides the request alone (not the
// route rule its path matches), and a principal the application verified is its identity, with
// the authenticate callback not called.
TEST(BeastAdapter, DecidesByANamedPolicyAndAVerifiedPrincipal) {
  std::unique_ptr<MemoryStore> store = MemoryStore::Create({}).value();
  int authenticate_calls = 0;
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(),
                          .config = Rules(R"(
routes:
  - name: orders
    path: /api/orders/{id}
    limits: [{name: burst, limit: 1, period: 1m}]
policies:
  - name: orders-read
    limits: [{name: reads, limit: 2, period: 1m, algorithm: gcra}]
)"),
                          .authenticate =
                              [&](const RequestView&) {
                                ++authenticate_calls;
                                return std::optional<Principal>();
                              }})
          .value();
  net::io_context ioc;
  std::vector<Verdict> verdicts;
  const Principal alice{.id = "alice", .tier = ""};
  const Principal bob{.id = "bob", .tier = ""};
  net::post(ioc, [&] {
    for (const Principal* who : {&alice, &alice, &alice, &bob}) {
      CheckBeastRequest(
          *middleware, ioc.get_executor(), OrderRequest(), kPeer,
          [&](Verdict v) { verdicts.push_back(std::move(v)); },
          BeastCheckOptions{.policy = "orders-read", .principal = who});
    }
  });
  ioc.run();
  ASSERT_EQ(verdicts.size(), 4u);
  EXPECT_TRUE(verdicts[0].passed());
  EXPECT_EQ(*verdicts[0].FindHeader("RateLimit-Policy"), R"("reads";q=2;w=60)");
  EXPECT_TRUE(verdicts[1].passed());
  EXPECT_FALSE(verdicts[2].passed());
  EXPECT_TRUE(verdicts[3].passed());  // bob counts apart from alice
  EXPECT_EQ(authenticate_calls, 0);
}

// Verifies that a verdict completed on another thread (the Redis store's I/O thread) is posted
// back to the connection's executor, not run where the store completed it.
TEST(BeastAdapter, PostsLateVerdictsToTheExecutor) {
  StrictMock<sluice::testing::MockStore> store;
  Store::MultiDecisionCallback pending;
  EXPECT_CALL(store, Decide(_, _))
      .WillOnce([&](std::span<const LimitCheck>, Store::MultiDecisionCallback done) {
        pending = std::move(done);
      });
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &store, .config = Rules(kRules)}).value();
  net::io_context ioc;
  std::optional<std::thread::id> delivered_on;
  CheckBeastRequest(*middleware, ioc.get_executor(), OrderRequest(), kPeer,
                    [&](Verdict) { delivered_on = std::this_thread::get_id(); });
  std::thread store_thread([&] {
    std::move(pending)(MultiDecision{.allowed = true, .decisions = {Decision{.allowed = true}}});
  });
  store_thread.join();
  EXPECT_FALSE(delivered_on.has_value());
  ioc.run();
  EXPECT_EQ(delivered_on, std::this_thread::get_id());
}

// A store that completes every call on its own thread at once, so
// completions race with the caller's return from CheckBeastRequest().
class RacingStore final : public Store {
 public:
  RacingStore() : worker_([this] { Run(); }) {}
  ~RacingStore() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  std::string_view Name() const override { return "racing"; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back([n = checks.size(), done = std::move(done)]() mutable {
        std::move(done)(MultiDecision{.allowed = true,
                                      .decisions = std::vector<Decision>(n, {.allowed = true})});
      });
    }
    changed_.notify_all();
  }

 private:
  void Run() {
    for (;;) {
      std::vector<absl::AnyInvocable<void() &&>> batch;
      {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [this] { return stop_ || !pending_.empty(); });
        if (stop_ && pending_.empty()) return;
        batch.swap(pending_);
      }
      for (auto& complete : batch) std::move(complete)();
    }
  }

  // std::mutex, not absl::Mutex: Debian's Abseil is not built for TSan, which then cannot see
  // the hand-off and reports a race on pending_.
  std::mutex mu_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::vector<absl::AnyInvocable<void() &&>> pending_;
  std::thread worker_;
};

// Verifies that every verdict is delivered exactly once, on the executor's thread, whichever of
// the caller and the store's thread gets there first.
TEST(BeastAdapter, DeliversEachVerdictExactlyOnceWhenCompletionsRace) {
  RacingStore store;
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &store, .config = Rules(kRules)}).value();
  net::io_context ioc;
  auto guard = net::make_work_guard(ioc);
  constexpr int kRequests = 2000;
  int delivered = 0;  // Touched on this thread only (the executor's).
  const std::thread::id self = std::this_thread::get_id();
  bool wrong_thread = false;
  const bhttp::request<bhttp::string_body> req = OrderRequest();
  for (int i = 0; i < kRequests; ++i) {
    CheckBeastRequest(*middleware, ioc.get_executor(), req, kPeer, [&](Verdict v) {
      wrong_thread = wrong_thread || std::this_thread::get_id() != self;
      delivered += v.passed() ? 1 : 0;
    });
    ioc.poll();
  }
  // Real time only bounds the wait for the store's thread.
  const auto deadline = Clock::Real().Now() + std::chrono::seconds(30);
  while (delivered < kRequests && Clock::Real().Now() < deadline) {
    ioc.run_one_for(std::chrono::milliseconds(100));
  }
  guard.reset();
  ioc.run();
  EXPECT_EQ(delivered, kRequests);
  EXPECT_FALSE(wrong_thread);
}

}  // namespace
}  // namespace sluice::http
