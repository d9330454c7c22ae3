#include <chrono>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"

#include "tests/mocks/mock_store.h"
#include "tests/testing/faulty_store.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/manual_clock.h"

namespace sluice {
namespace {

using std::chrono::seconds;
using testing::FaultyStore;
using testing::ManualClock;

constexpr Limit kTenPerMinute{.limit = 10, .period = std::chrono::minutes(1)};

struct Fixture {
  explicit Fixture(FailurePolicy policy) {
    policy.clock = &clock;
    auto memory = MemoryStore::Create({.clock = &clock});
    EXPECT_TRUE(memory.ok());
    auto faulty_owned = std::make_unique<FaultyStore>(*std::move(memory));
    faulty = faulty_owned.get();
    store = WithFailurePolicy(std::move(faulty_owned), policy);
  }
  ManualClock clock;
  FaultyStore* faulty = nullptr;
  std::unique_ptr<FailurePolicyStore> store;
};

TEST(FailurePolicyStore, PassesDecisionsThroughWhileTheStoreAnswers) {
  Fixture f({.mode = FailureMode::kDeny});
  absl::StatusOr<Decision> d = f.store->Check("k", kTenPerMinute, 1);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_FALSE(d->from_fallback);
  EXPECT_EQ(d->remaining, 9);
  EXPECT_EQ(f.store->Stats().fallback_decisions, 0u);
}

TEST(FailurePolicyStore, PropagateReturnsTheStoreError) {
  Fixture f({.mode = FailureMode::kPropagate});
  f.faulty->Fail(absl::UnavailableError("redis down"));
  absl::StatusOr<Decision> d = f.store->Check("k", kTenPerMinute, 1);
  EXPECT_TRUE(absl::IsUnavailable(d.status()));
  EXPECT_EQ(f.store->Stats().store_errors, 1u);
}

TEST(FailurePolicyStore, AllowFailsOpenAndMarksTheDecision) {
  Fixture f({.mode = FailureMode::kAllow});
  f.faulty->Fail(absl::DeadlineExceededError("timed out"));
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<Decision> d = f.store->Check("k", kTenPerMinute, 1);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->allowed);
    EXPECT_TRUE(d->from_fallback);
  }
  EXPECT_EQ(f.store->Stats().fallback_decisions, 20u);
}

TEST(FailurePolicyStore, DenyFailsClosedWithTheConfiguredRetryAfter) {
  Fixture f({.mode = FailureMode::kDeny, .deny_retry_after = seconds(2)});
  f.faulty->Fail(absl::UnavailableError("redis down"));
  absl::StatusOr<Decision> d = f.store->Check("k", kTenPerMinute, 1);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_TRUE(d->from_fallback);
  EXPECT_EQ(d->retry_after, seconds(2));
}

// Verifies the local fallback enforces this instance's share of the limit.
TEST(FailurePolicyStore, LocalFallbackEnforcesTheInstanceShare) {
  Fixture f({.mode = FailureMode::kLocal, .expected_instances = 4});
  f.faulty->Fail(absl::UnavailableError("redis down"));
  int admitted = 0;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<Decision> d = f.store->Check("k", kTenPerMinute, 1);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->from_fallback);
    admitted += d->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 10 / 4);
}

TEST(FailurePolicyStore, InvalidArgumentIsNotAStoreFailure) {
  Fixture f({.mode = FailureMode::kAllow});
  f.faulty->Fail(absl::InvalidArgumentError("bad key"));
  absl::StatusOr<Decision> d = f.store->Check("k", kTenPerMinute, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(d.status()));
  EXPECT_EQ(f.store->Stats().store_errors, 0u);
}

// Verifies the breaker skips a failing store, probes it after the open period, and closes again.
TEST(FailurePolicyStore, BreakerOpensProbesAndCloses) {
  Fixture f({.mode = FailureMode::kAllow,
             .breaker_failure_threshold = 3,
             .breaker_open_for = seconds(1)});
  f.faulty->Fail(absl::UnavailableError("redis down"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.store->Check("k", kTenPerMinute, 1).ok());
  EXPECT_EQ(f.faulty->failed(), 3);
  EXPECT_TRUE(f.store->Stats().breaker_open);

  // Open: answered by the policy without touching the store.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.store->Check("k", kTenPerMinute, 1).ok());
  EXPECT_EQ(f.faulty->failed(), 3);

  // After the open period one probe goes through; it fails, so the breaker stays open.
  f.clock.Advance(seconds(1));
  ASSERT_TRUE(f.store->Check("k", kTenPerMinute, 1).ok());
  EXPECT_EQ(f.faulty->failed(), 4);
  ASSERT_TRUE(f.store->Check("k", kTenPerMinute, 1).ok());
  EXPECT_EQ(f.faulty->failed(), 4);

  // The store heals; the next probe succeeds and closes the breaker.
  f.faulty->Heal();
  f.clock.Advance(seconds(1));
  absl::StatusOr<Decision> d = f.store->Check("k", kTenPerMinute, 1);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->from_fallback);
  EXPECT_FALSE(f.store->Stats().breaker_open);
  EXPECT_EQ(f.faulty->forwarded(), 1);
}

// Verifies an outage is logged, but not once per request: 1,000 failed checks in one second give
// one warning (then one a second, saying how many were suppressed), and each breaker transition
// gives one line, all counted in Stats().
TEST(FailurePolicyStore, LogsStoreErrorsThrottledAndBreakerTransitions) {
  testing::LogCapture logs;
  Fixture f({.mode = FailureMode::kLocal,
             .breaker_failure_threshold = 1000,
             .breaker_open_for = seconds(1)});
  f.faulty->Fail(absl::UnavailableError("redis 127.0.0.1:6379: connection refused"));
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(f.store->Check("k", kTenPerMinute, 1).ok());
  EXPECT_EQ(f.faulty->failed(), 1000);
  EXPECT_EQ(logs.Count("warning store faulty: check failed (limiting locally): UNAVAILABLE: redis "
                       "127.0.0.1:6379: connection refused"),
            1)
      << logs.Dump();
  EXPECT_EQ(logs.Count("circuit breaker open after 1000 consecutive failures; limiting locally "
                       "for 1000 ms"),
            1)
      << logs.Dump();
  EXPECT_EQ(logs.Lines().size(), 2u) << logs.Dump();
  FailureStats stats = f.store->Stats();
  EXPECT_EQ(stats.store_errors, 1000u);
  EXPECT_EQ(stats.breaker_opens, 1u);
  EXPECT_EQ(stats.breaker_closes, 0u);
  EXPECT_EQ(stats.log_lines_suppressed, 999u);

  // A second later the probe fails: one more warning, carrying the count; no new transition.
  f.clock.Advance(seconds(1));
  ASSERT_TRUE(f.store->Check("k", kTenPerMinute, 1).ok());
  EXPECT_EQ(logs.Count("(999 similar lines suppressed)"), 1) << logs.Dump();
  EXPECT_EQ(logs.Lines().size(), 3u) << logs.Dump();

  f.faulty->Heal();
  f.clock.Advance(seconds(1));
  ASSERT_TRUE(f.store->Check("k", kTenPerMinute, 1).ok());
  EXPECT_EQ(logs.Count("info store faulty: circuit breaker closed, the store answers again after "
                       "2000 ms"),
            1)
      << logs.Dump();
  stats = f.store->Stats();
  EXPECT_EQ(stats.breaker_opens, 1u);
  EXPECT_EQ(stats.breaker_closes, 1u);
  EXPECT_FALSE(stats.breaker_open);
}

TEST(FailurePolicyStore, AsyncFallbackRunsTheCallbackOnce) {
  Fixture f({.mode = FailureMode::kDeny});
  f.faulty->Fail(absl::UnavailableError("redis down"));
  int calls = 0;
  f.store->CheckAsync("k", kTenPerMinute, 1, [&](absl::StatusOr<Decision> d) {
    ++calls;
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->allowed);
    EXPECT_TRUE(d->from_fallback);
  });
  EXPECT_EQ(calls, 1);
}

TEST(FailurePolicyStore, CheckAllFallsBackForEveryCheck) {
  Fixture f({.mode = FailureMode::kLocal, .expected_instances = 1});
  f.faulty->Fail(absl::UnavailableError("redis down"));
  std::vector<LimitCheck> checks = {{.key = "a", .limit = kTenPerMinute, .cost = 10},
                                    {.key = "b", .limit = kTenPerMinute, .cost = 11}};
  absl::StatusOr<MultiDecision> m = f.store->CheckAll(checks);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->allowed);
  ASSERT_EQ(m->decisions.size(), 2u);
  EXPECT_TRUE(m->decisions[0].from_fallback);
  // All-or-nothing: "a" was not charged, so its full quota is still there.
  absl::StatusOr<Decision> a = f.store->Check("a", kTenPerMinute, 10);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->allowed);
}

// Verifies SetAnswer() changes how the next failed check is answered: the mode, and the share of
// kLocal, whose limiter is made when first asked for; the local decisions are counted.
TEST(FailurePolicyStore, SetAnswerChangesTheAnswerOfTheNextCheck) {
  // No breaker: every check reaches the store and fails.
  Fixture f({.mode = FailureMode::kPropagate, .breaker_failure_threshold = 0});
  f.faulty->Fail(absl::UnavailableError("redis down"));
  EXPECT_TRUE(absl::IsUnavailable(f.store->Check("k", kTenPerMinute, 1).status()));

  f.store->SetAnswer(FailureMode::kLocal, 5);
  int admitted = 0;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<Decision> d = f.store->Check("five", kTenPerMinute, 1);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->from_fallback);
    admitted += d->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 10 / 5);
  EXPECT_EQ(f.store->Stats().local_decisions, 10u);

  f.store->SetAnswer(FailureMode::kLocal, 2);
  admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += f.store->Check("two", kTenPerMinute, 1)->allowed;
  EXPECT_EQ(admitted, 10 / 2);

  f.store->SetAnswer(FailureMode::kDeny, 1);
  absl::StatusOr<Decision> denied = f.store->Check("k", kTenPerMinute, 1);
  ASSERT_TRUE(denied.ok());
  EXPECT_FALSE(denied->allowed);
  EXPECT_TRUE(denied->from_fallback);

  f.store->SetAnswer(FailureMode::kPropagate, 1);
  EXPECT_TRUE(absl::IsUnavailable(f.store->Check("k", kTenPerMinute, 1).status()));
  EXPECT_EQ(f.store->Stats().local_decisions, 20u);
  EXPECT_EQ(f.store->Stats().store_errors, 23u);
}

// Verifies a check in flight is answered as it was when it started: the store answers late (on
// its own thread, as Redis does), after SetAnswer() changed the answer.
TEST(FailurePolicyStore, CheckInFlightKeepsTheAnswerItStartedWith) {
  ManualClock clock;
  ::testing::StrictMock<testing::MockStore> primary;
  std::vector<Store::MultiDecisionCallback> pending;
  EXPECT_CALL(primary, Name()).WillRepeatedly(::testing::Return("primary"));
  EXPECT_CALL(primary, Decide(::testing::_, ::testing::_))
      .Times(2)
      .WillRepeatedly([&](std::span<const LimitCheck>, Store::MultiDecisionCallback done) {
        pending.push_back(std::move(done));
      });
  std::unique_ptr<FailurePolicyStore> store =
      WithFailurePolicy(primary, {.mode = FailureMode::kLocal, .clock = &clock});
  std::vector<absl::StatusOr<Decision>> answers;
  auto record = [&](absl::StatusOr<Decision> d) { answers.push_back(std::move(d)); };
  store->CheckAsync("k", kTenPerMinute, 1, record);
  store->SetAnswer(FailureMode::kPropagate, 1);
  store->CheckAsync("k", kTenPerMinute, 1, record);
  ASSERT_EQ(pending.size(), 2u);
  for (Store::MultiDecisionCallback& done : pending) {
    std::move(done)(absl::UnavailableError("redis down"));
  }
  ASSERT_EQ(answers.size(), 2u);
  ASSERT_TRUE(answers[0].ok()) << answers[0].status();
  EXPECT_TRUE(answers[0]->from_fallback);
  EXPECT_TRUE(absl::IsUnavailable(answers[1].status()));
}

TEST(FailureMode, ParsesEveryNameAndRejectsOthers) {
  for (FailureMode m :
       {FailureMode::kPropagate, FailureMode::kAllow, FailureMode::kDeny, FailureMode::kLocal}) {
    absl::StatusOr<FailureMode> parsed = ParseFailureMode(FailureModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_TRUE(absl::IsInvalidArgument(ParseFailureMode("open").status()));
}

}  // namespace
}  // namespace sluice
