// A store that can hang is guarded even when the application passes it bare: after a few failures
// the middleware's breaker answers at once instead of waiting on the store per request, and the
// failures are logged (throttled). Against a fake store that fails, and a real redis-server that is
// paused (SIGSTOP) under a bare RedisStore.
#include <atomic>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/failure_policy.h"
#include "sluice/http/middleware.h"
#include "sluice/memory_store.h"
#include "sluice/redis_store.h"

#include "tests/http/http_test_util.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/manual_clock.h"
#include "tests/testing/redis_server.h"

namespace sluice::http {
namespace {

using ::sluice::http::testing::Rules;
using ::sluice::http::testing::Send;

constexpr std::string_view kRules =
    "response: {store_error: reject}\n"
    "routes:\n  - name: orders\n    path: /api/orders\n"
    "    limits: [{name: orders, limit: 100, period: 1m}]\n";

// A store that waits on I/O (as Redis does) and whose every answer is a timeout.
class TimingOutStore final : public Store {
 public:
  std::string_view Name() const override { return "timing-out"; }
  int calls() const { return calls_.load(); }

 protected:
  void Decide(std::span<const LimitCheck>, MultiDecisionCallback done) override {
    calls_.fetch_add(1);
    std::move(done)(absl::DeadlineExceededError("no answer within 50 ms"));
  }

 private:
  std::atomic<int> calls_{0};
};

// Verifies a bare store that fails is asked only until the breaker opens (5 failures), then the
// requests are answered at once by store_error, and the failures are logged.
TEST(MiddlewareGuard, BareFailingStoreIsShortCircuitedAndLogged) {
  sluice::testing::LogCapture logs;
  sluice::testing::ManualClock clock;
  TimingOutStore store;
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &store, .config = Rules(kRules), .clock = &clock}).value();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Send(*middleware, {.path = "/api/orders"}).status, 503) << i;
  }
  EXPECT_EQ(store.calls(), 5);
  EXPECT_EQ(middleware->Stats().error, 20u);
  EXPECT_EQ(logs.Count("circuit breaker open"), 1);
  EXPECT_GE(logs.Count("check failed"), 1);
  // After the breaker's second, one probe goes through.
  clock.Advance(std::chrono::seconds(2));
  EXPECT_EQ(Send(*middleware, {.path = "/api/orders"}).status, 503);
  EXPECT_EQ(store.calls(), 6);
}

// Verifies a store the application wrapped itself is used as it is: its own policy answers.
TEST(MiddlewareGuard, FailurePolicyStoreIsNotWrappedAgain) {
  auto owned = std::make_unique<TimingOutStore>();
  TimingOutStore& inner = *owned;
  std::unique_ptr<FailurePolicyStore> store = WithFailurePolicy(
      std::move(owned), {.mode = FailureMode::kAllow, .breaker_failure_threshold = 0});
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(), .config = Rules(kRules)}).value();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(Send(*middleware, {.path = "/api/orders"}).passed());
  // No breaker of the middleware's: every request reached the store.
  EXPECT_EQ(inner.calls(), 10);
  EXPECT_EQ(store->Stats().fallback_decisions, 10u);
}

// Verifies a store that cannot hang (the memory store) is not guarded: no failure to guard.
TEST(MiddlewareGuard, InlineStoreIsUsedDirectly) {
  std::unique_ptr<MemoryStore> store = MemoryStore::Create({}).value();
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(), .config = Rules(kRules)}).value();
  EXPECT_TRUE(middleware->store_answers_inline());
  EXPECT_TRUE(Send(*middleware, {.path = "/api/orders"}).passed());
}

// Verifies the case end to end: a bare RedisStore, Redis paused. The first requests wait
// out their deadline; once the breaker opens, requests no longer reach Redis at all.
TEST(MiddlewareGuard, PausedRedisUnderBareRedisStoreIsShortCircuited) {
  absl::StatusOr<std::unique_ptr<sluice::testing::RedisServer>> server =
      sluice::testing::RedisServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(
      {.url = (*server)->Url(), .command_timeout = std::chrono::milliseconds(50)});
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->WaitForConnection(std::chrono::seconds(5)).ok());
  sluice::testing::LogCapture logs;
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store->get(), .config = Rules(kRules)}).value();
  EXPECT_TRUE(Send(*middleware, {.path = "/api/orders"}).passed());

  (*server)->Pause();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Send(*middleware, {.path = "/api/orders"}).status, 503);
  const uint64_t calls_at_open = (*store)->Stats().script_calls;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(Send(*middleware, {.path = "/api/orders"}).status, 503);
  // Answered by the open breaker: none of the 50 was sent to Redis (within the breaker's second a
  // probe may go through; 50 requests at most take 50 x 50 ms only if each waited).
  EXPECT_LE((*store)->Stats().script_calls, calls_at_open + 1);
  EXPECT_EQ(logs.Count("circuit breaker open"), 1);
  (*server)->Resume();
}

// A store whose failures name the key, as the Redis store's do: "... [sluice:fw:{ip:...}...]".
class KeyNamingStore final : public Store {
 public:
  std::string_view Name() const override { return "key-naming"; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    std::move(done)(absl::UnavailableError(absl::StrCat("connection lost [", checks[0].key, "]")));
  }
};

// Verifies the guard's log lines show no identity by default (a stable hash instead), and the
// identity when asked to.
TEST(MiddlewareGuard, LogLinesHashIdentitiesByDefault) {
  KeyNamingStore store;
  {
    sluice::testing::LogCapture logs;
    std::unique_ptr<Middleware> middleware =
        Middleware::Create({.store = &store, .config = Rules(kRules)}).value();
    EXPECT_EQ(Send(*middleware, {.path = "/api/orders", .peer = "198.51.100.23"}).status, 503);
    EXPECT_EQ(logs.Count("198.51.100.23"), 0);
    EXPECT_EQ(logs.Count("check failed"), 1);
    EXPECT_EQ(logs.Count("{h:"), 1);
  }
  {
    sluice::testing::LogCapture logs;
    std::unique_ptr<Middleware> middleware =
        Middleware::Create({.store = &store,
                            .config = Rules(kRules),
                            .log_key_identities = FailurePolicy::KeyIdentities::kPlain})
            .value();
    EXPECT_EQ(Send(*middleware, {.path = "/api/orders", .peer = "198.51.100.23"}).status, 503);
    EXPECT_EQ(logs.Count("198.51.100.23"), 1);
  }
}

}  // namespace
}  // namespace sluice::http
