// Tests of the middleware when the store does not simply answer: store errors, failure-policy
// answers (allow, deny, local fallback), late completion on another thread, and bad answers.
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/failure_policy.h"
#include "sluice/http/middleware.h"
#include "sluice/memory_store.h"

#include "tests/http/http_test_util.h"
#include "tests/mocks/mock_store.h"
#include "tests/testing/faulty_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice::http {
namespace {

using ::sluice::http::testing::HeaderOr;
using ::sluice::http::testing::Rules;
using ::sluice::http::testing::Send;
using ::sluice::http::testing::TestRequest;
using ::sluice::http::testing::ViewOf;
using std::chrono::seconds;
using ::testing::_;
using ::testing::HasSubstr;
using ::testing::StrictMock;

constexpr char kRules[] = R"(
routes:
  - name: orders
    method: GET
    path: /api/orders/{id}
    tiers:
      anonymous:
        - {name: burst, limit: 2, period: 1s}
        - {name: hourly, limit: 3, period: 1h}
)";

TEST(MiddlewareFailure, StoreErrorIs503WithoutRateLimitHeadersWhenSetToReject) {
  sluice::testing::ManualClock clock;
  sluice::testing::FaultyStore faulty(MemoryStore::Create({.clock = &clock}).value());
  faulty.Fail(absl::UnavailableError("redis down"));
  std::optional<RejectInfo> seen;
  std::unique_ptr<Middleware> middleware =
      Middleware::Create(
          {.store = &faulty,
           .config = Rules(absl::StrCat("response: {store_error: reject}\n", kRules)),
           .on_reject = [&](const RejectInfo& info, Verdict&) { seen = info; }})
          .value();
  const Verdict v = Send(*middleware, {.path = "/api/orders/1"});
  EXPECT_EQ(v.status, 503);
  EXPECT_EQ(HeaderOr(v, "Retry-After"), "1");
  EXPECT_EQ(v.FindHeader("RateLimit"), nullptr);
  EXPECT_THAT(v.body, HasSubstr("temporary-reduced-capacity"));
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->reason, RejectReason::kStoreError);
  EXPECT_EQ(seen->store_status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(middleware->Stats().error, 1u);
  EXPECT_EQ(middleware->Stats().enforced, 1u);
}

// Verifies the default (StoreErrorAction::kLocal): while the store fails, the middleware keeps
// limiting on its own limiter, the limit divided among local_fallback_instances; passes carry no
// RateLimit headers (they describe no real quota) and refusals are 503 with Retry-After. When the
// store is back, its counters decide again.
TEST(MiddlewareFailure, StoreErrorIsDecidedByTheLocalLimiterByDefault) {
  sluice::testing::ManualClock clock;
  sluice::testing::FaultyStore faulty(MemoryStore::Create({.clock = &clock}).value());
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &faulty, .config = Rules(kRules), .clock = &clock}).value();
  EXPECT_EQ(middleware->config()->spec().response.store_error, StoreErrorAction::kLocal);
  faulty.Fail(absl::UnavailableError("redis down"));
  // burst 2 and hourly 3: the first two pass, the third is refused by the local burst limit.
  for (int i = 0; i < 2; ++i) {
    const Verdict v = Send(*middleware, {.path = "/api/orders/1"});
    EXPECT_TRUE(v.passed()) << i;
    EXPECT_EQ(v.FindHeader("RateLimit"), nullptr);
  }
  const Verdict refused = Send(*middleware, {.path = "/api/orders/1"});
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(HeaderOr(refused, "Retry-After"), "1");
  // Another client has its own local bucket.
  EXPECT_TRUE(Send(*middleware, {.path = "/api/orders/1", .peer = "192.0.2.99"}).passed());
  MiddlewareStats stats = middleware->Stats();
  EXPECT_EQ(stats.error, 4u);
  EXPECT_EQ(stats.local_fallback, 4u);
  EXPECT_EQ(stats.over_limit, 0u);

  faulty.Heal();
  const Verdict back = Send(*middleware, {.path = "/api/orders/1"});
  EXPECT_TRUE(back.passed());
  EXPECT_NE(back.FindHeader("RateLimit"), nullptr);
  EXPECT_EQ(middleware->Stats().local_fallback, 4u);
}

TEST(MiddlewareFailure, LocalLimiterDividesLimitsAmongInstances) {
  sluice::testing::ManualClock clock;
  sluice::testing::FaultyStore faulty(MemoryStore::Create({.clock = &clock}).value());
  faulty.Fail(absl::DeadlineExceededError("slow"));
  std::unique_ptr<Middleware> middleware =
      Middleware::Create(
          {.store = &faulty,
           .config = Rules("response: {local_fallback_instances: 4}\nroutes:\n  - name: r\n"
                           "    path: /r\n    limits: [{limit: 8, period: 1h}]\n"),
           .clock = &clock})
          .value();
  int passed = 0;
  for (int i = 0; i < 20; ++i) passed += Send(*middleware, {.path = "/r"}).passed() ? 1 : 0;
  EXPECT_EQ(passed, 2);  // 8 / 4 instances.
}

TEST(MiddlewareFailure, StoreErrorCanFailOpen) {
  sluice::testing::FaultyStore faulty(MemoryStore::Create({}).value());
  faulty.Fail(absl::DeadlineExceededError("slow"));
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &faulty,
                          .config = Rules("response: {store_error: allow}\nroutes:\n  - name: r\n"
                                          "    path: /r\n    limits: [{limit: 1, period: 1s}]\n")})
          .value();
  const Verdict v = Send(*middleware, {.path = "/r"});
  EXPECT_TRUE(v.passed());
  EXPECT_TRUE(v.headers.empty());
  EXPECT_EQ(middleware->Stats().error, 1u);
}

TEST(MiddlewareFailure, FailurePolicyDenialIs503NotA429) {
  sluice::testing::ManualClock clock;
  auto faulty = std::make_unique<sluice::testing::FaultyStore>(MemoryStore::Create({}).value());
  sluice::testing::FaultyStore* fault = faulty.get();
  std::unique_ptr<FailurePolicyStore> store = WithFailurePolicy(
      std::move(faulty),
      {.mode = FailureMode::kDeny, .deny_retry_after = seconds(3), .clock = &clock});
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(), .config = Rules(kRules)}).value();
  fault->Fail(absl::UnavailableError("redis down"));
  const Verdict v = Send(*middleware, {.path = "/api/orders/1"});
  EXPECT_EQ(v.status, 503);
  // The policy's deny_retry_after, within the window of the longest refusing limit ("hourly").
  EXPECT_EQ(HeaderOr(v, "Retry-After"), "3");
  EXPECT_EQ(v.FindHeader("RateLimit"), nullptr);
  EXPECT_THAT(v.body, HasSubstr("temporary-reduced-capacity"));
  const MiddlewareStats stats = middleware->Stats();
  EXPECT_EQ(stats.error, 1u);
  EXPECT_EQ(stats.over_limit, 0u);
  EXPECT_EQ(stats.enforced, 1u);
  fault->Heal();
  EXPECT_TRUE(Send(*middleware, {.path = "/api/orders/1"}).passed());
}

TEST(MiddlewareFailure, FailurePolicyAllowPassesWithoutHeaders) {
  auto faulty = std::make_unique<sluice::testing::FaultyStore>(MemoryStore::Create({}).value());
  faulty->Fail(absl::UnavailableError("redis down"));
  std::unique_ptr<FailurePolicyStore> store =
      WithFailurePolicy(std::move(faulty), {.mode = FailureMode::kAllow});
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(), .config = Rules(kRules)}).value();
  for (int i = 0; i < 5; ++i) {
    const Verdict v = Send(*middleware, {.path = "/api/orders/1"});
    EXPECT_TRUE(v.passed());
    EXPECT_TRUE(v.headers.empty());
  }
  EXPECT_EQ(middleware->Stats().error, 5u);
}

TEST(MiddlewareFailure, LocalFallbackDenialIs503) {
  sluice::testing::ManualClock clock;
  auto faulty = std::make_unique<sluice::testing::FaultyStore>(MemoryStore::Create({}).value());
  faulty->Fail(absl::UnavailableError("redis down"));
  std::unique_ptr<FailurePolicyStore> store = WithFailurePolicy(
      std::move(faulty), {.mode = FailureMode::kLocal, .expected_instances = 2, .clock = &clock});
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(), .config = Rules(kRules)}).value();
  // burst 2 / 2 instances = 1 locally.
  EXPECT_TRUE(Send(*middleware, {.path = "/api/orders/1"}).passed());
  const Verdict refused = Send(*middleware, {.path = "/api/orders/1"});
  EXPECT_EQ(refused.status, 503);
  // An outage violates no policy: the body says the quota could not be checked and names none.
  EXPECT_THAT(refused.body, ::testing::HasSubstr("could not check"));
  EXPECT_THAT(refused.body, ::testing::Not(::testing::HasSubstr("violated-policies")));
}

// A store that waits on I/O (as Redis does) and fails every check.
class UnreachableStore final : public Store {
 public:
  std::string_view Name() const override { return "unreachable"; }

 protected:
  void Decide(std::span<const LimitCheck>, MultiDecisionCallback done) override {
    std::move(done)(absl::UnavailableError("connection refused"));
  }
};

// Verifies that a reload of the config changes what the middleware's failure policy answers for
// a failing store: local with 4 instances, then local with 2, then reject, then allow, then local
// again, each from the next request on (read from a file with Reload(), as on SIGHUP). The local
// answers are the failure policy's (counted as local_fallback); the reject and allow answers are
// the middleware's to the error the policy hands on.
TEST(MiddlewareFailure, ReloadChangesWhatTheFailurePolicyAnswers) {
  sluice::testing::ManualClock clock;
  UnreachableStore store;
  const std::string path = ::testing::TempDir() + "/middleware_failure_reload.yaml";
  const auto write = [&](std::string_view response) {
    std::ofstream(path) << "response: " << response
                        << "\nroutes:\n  - name: r\n    path: /r\n"
                           "    limits: [{name: hourly, limit: 8, period: 1h}]\n";
  };
  write("{store_error: local, local_fallback_instances: 4}");
  std::optional<RejectInfo> seen;
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &store,
                          .config = LoadMiddlewareConfig(path).value(),
                          .on_reject = [&](const RejectInfo& info, Verdict&) { seen = info; },
                          .clock = &clock})
          .value();
  // Each step asks for another client, so that each has a bucket of its own on the local limiter.
  const auto passed_of_20 = [&](const std::string& peer) {
    int passed = 0;
    for (int i = 0; i < 20; ++i) {
      passed += Send(*middleware, {.path = "/r", .peer = peer}).passed() ? 1 : 0;
    }
    return passed;
  };
  EXPECT_EQ(passed_of_20("192.0.2.1"), 2);  // 8 / 4 instances.
  EXPECT_EQ(middleware->Stats().local_fallback, 20u);

  write("{store_error: local, local_fallback_instances: 2}");
  ASSERT_TRUE(middleware->Reload(path).ok());
  EXPECT_EQ(passed_of_20("192.0.2.2"), 4);  // 8 / 2 instances.
  EXPECT_EQ(middleware->Stats().local_fallback, 40u);

  write("{store_error: reject}");
  ASSERT_TRUE(middleware->Reload(path).ok());
  const Verdict rejected = Send(*middleware, {.path = "/r", .peer = "192.0.2.3"});
  EXPECT_EQ(rejected.status, 503);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->reason, RejectReason::kStoreError);
  EXPECT_EQ(seen->store_status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(middleware->Stats().local_fallback, 40u);

  write("{store_error: allow}");
  ASSERT_TRUE(middleware->Reload(path).ok());
  EXPECT_EQ(passed_of_20("192.0.2.4"), 20);
  MiddlewareStats stats = middleware->Stats();
  EXPECT_EQ(stats.local_fallback, 40u);
  EXPECT_EQ(stats.error, 61u);
  EXPECT_EQ(stats.ok, 6u);  // The local limiter's passes; a store error let through is no `ok`.

  write("{store_error: local, local_fallback_instances: 8}");
  ASSERT_TRUE(middleware->Reload(path).ok());
  EXPECT_EQ(passed_of_20("192.0.2.5"), 1);  // 8 / 8 instances.
  EXPECT_EQ(middleware->Stats().local_fallback, 60u);
}

// Verifies that reloads racing requests leave every request answered and counted once: while the
// store fails, four threads send requests and another swaps store_error between local, reject and
// allow. Every request is a store failure (`error`), and passes or gets 503.
TEST(MiddlewareFailure, ReloadsRacingRequestsCountEveryRequestOnce) {
  UnreachableStore store;
  const std::string routes =
      "\nroutes:\n  - name: r\n    path: /r\n    limits: [{name: hourly, limit: 8, period: 1h}]\n";
  const std::vector<std::shared_ptr<const MiddlewareConfig>> configs = {
      Rules("response: {store_error: local, local_fallback_instances: 2}" + routes),
      Rules("response: {store_error: reject}" + routes),
      Rules("response: {store_error: allow}" + routes)};
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &store, .config = configs[0]}).value();
  constexpr int kThreads = 4;
  constexpr int kRequestsEach = 500;
  std::atomic<int> unexpected{0};
  std::atomic<bool> done{false};
  std::thread reloader([&] {
    for (size_t i = 1; !done.load(); ++i) {
      EXPECT_TRUE(middleware->SetConfig(configs[i % configs.size()]).ok());
    }
  });
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kRequestsEach; ++i) {
        const Verdict v =
            Send(*middleware, {.path = "/r", .peer = absl::StrCat("192.0.2.", t + 1)});
        if (!v.passed() && v.status != 503) unexpected.fetch_add(1);
      }
    });
  }
  for (std::thread& sender : senders) sender.join();
  done.store(true);
  reloader.join();
  EXPECT_EQ(unexpected.load(), 0);
  const MiddlewareStats stats = middleware->Stats();
  EXPECT_EQ(stats.enabled, uint64_t{kThreads * kRequestsEach});
  EXPECT_EQ(stats.error, uint64_t{kThreads * kRequestsEach});
  EXPECT_EQ(stats.over_limit, 0u);
  EXPECT_LE(stats.local_fallback, stats.error);
}

// Verifies that the middleware keeps what it needs: the request is destroyed before the store
// answers, as happens when the Redis store completes on its I/O thread.
TEST(MiddlewareAsync, CompletesLaterAfterTheRequestIsGone) {
  StrictMock<sluice::testing::MockStore> store;
  Store::MultiDecisionCallback pending;
  std::vector<std::string> keys;
  EXPECT_CALL(store, Decide(_, _))
      .WillOnce([&](std::span<const LimitCheck> checks, Store::MultiDecisionCallback done) {
        for (const LimitCheck& c : checks) keys.push_back(c.key);
        pending = std::move(done);
      });
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &store, .config = Rules(kRules)}).value();
  std::optional<Verdict> verdict;
  {
    auto request = std::make_unique<TestRequest>(TestRequest{.path = "/api/orders/9"});
    ViewOf view(*request);
    middleware->DecideAsync(view.view(), [&](Verdict v) { verdict = std::move(v); });
  }
  EXPECT_FALSE(verdict.has_value());
  ASSERT_EQ(keys.size(), 2u);
  std::move(pending)(MultiDecision{
      .allowed = false,
      .decisions = {
          Decision{.allowed = false,
                   .limit = 2,
                   .remaining = 0,
                   .reset_after = std::chrono::milliseconds(400),
                   .retry_after = std::chrono::milliseconds(400)},
          Decision{.allowed = true, .limit = 3, .remaining = 2, .reset_after = seconds(100)}}});
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->status, 429);
  EXPECT_EQ(HeaderOr(*verdict, "RateLimit"), R"("burst";r=0;t=1, "hourly";r=2;t=100)");
  EXPECT_EQ(middleware->Stats().over_limit, 1u);
}

// Verifies that one limit is one check (the store picks its single-key path itself), and that the
// key it was given stays valid until the store answers after the request is gone.
TEST(MiddlewareAsync, OneLimitIsOneCheckThatOutlivesTheRequest) {
  StrictMock<sluice::testing::MockStore> store;
  Store::MultiDecisionCallback pending;
  std::string_view key_seen;
  EXPECT_CALL(store, Decide(_, _))
      .WillOnce([&](std::span<const LimitCheck> checks, Store::MultiDecisionCallback done) {
        ASSERT_EQ(checks.size(), 1u);
        EXPECT_EQ(checks[0].cost, 1);
        EXPECT_EQ(checks[0].limit.limit, 5);
        key_seen = checks[0].key;
        pending = std::move(done);
      });
  std::unique_ptr<Middleware> middleware = Middleware::Create({.store = &store, .config = Rules(R"(
routes:
  - {name: one, path: /api/one, limits: [{name: only, limit: 5, period: 1m}]}
)")})
                                               .value();
  std::optional<Verdict> verdict;
  {
    auto request = std::make_unique<TestRequest>(TestRequest{.path = "/api/one"});
    ViewOf view(*request);
    middleware->DecideAsync(view.view(), [&](Verdict v) { verdict = std::move(v); });
  }
  EXPECT_FALSE(verdict.has_value());
  // Still readable: the middleware owns the key until the answer comes.
  EXPECT_THAT(std::string(key_seen), HasSubstr("/api/one"));
  std::move(pending)(MultiDecision{.allowed = false,
                                   .decisions = {Decision{.allowed = false,
                                                          .limit = 5,
                                                          .remaining = 0,
                                                          .reset_after = seconds(30),
                                                          .retry_after = seconds(30)}}});
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->status, 429);
  EXPECT_EQ(HeaderOr(*verdict, "Retry-After"), "30");
  EXPECT_EQ(HeaderOr(*verdict, "RateLimit"), R"("only";r=0;t=30)");
  EXPECT_EQ(middleware->Stats().over_limit, 1u);
}

// A store that says it answers inline is asked synchronously: DecideAsync() completes before it
// returns, with no state kept for a late answer.
class InlineMockStore : public sluice::testing::MockStore {
 public:
  bool AnswersInline() const override { return true; }
};

TEST(MiddlewareAsync, InlineStoreIsAskedSynchronously) {
  StrictMock<InlineMockStore> store;
  EXPECT_CALL(store, Decide(_, _))
      .WillOnce([](std::span<const LimitCheck> checks, Store::MultiDecisionCallback done) {
        std::move(done)(MultiDecision{.allowed = true,
                                      .decisions = {Decision{.allowed = true,
                                                             .limit = checks[0].limit.limit,
                                                             .remaining = 4,
                                                             .reset_after = seconds(60)}}});
      });
  std::unique_ptr<Middleware> middleware = Middleware::Create({.store = &store, .config = Rules(R"(
routes:
  - {name: one, path: /api/one, limits: [{name: only, limit: 5, period: 1m}]}
)")})
                                               .value();
  EXPECT_TRUE(middleware->store_answers_inline());
  std::optional<Verdict> verdict;
  TestRequest request{.path = "/api/one"};
  ViewOf view(request);
  middleware->DecideAsync(view.view(), [&](Verdict v) { verdict = std::move(v); });
  ASSERT_TRUE(verdict.has_value());
  EXPECT_TRUE(verdict->passed());
  EXPECT_EQ(HeaderOr(*verdict, "RateLimit"), R"("only";r=4;t=60)");
}

TEST(MiddlewareAsync, StoreAnsweringTheWrongNumberOfDecisionsIsAnError) {
  StrictMock<sluice::testing::MockStore> store;
  EXPECT_CALL(store, Decide(_, _))
      .WillOnce([](std::span<const LimitCheck>, Store::MultiDecisionCallback done) {
        std::move(done)(MultiDecision{.allowed = true, .decisions = {}});
      });
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &store, .config = Rules(kRules)}).value();
  EXPECT_EQ(Send(*middleware, {.path = "/api/orders/9"}).status, 503);
}

}  // namespace
}  // namespace sluice::http
