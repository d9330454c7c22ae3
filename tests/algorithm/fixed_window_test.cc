// Behaviour of DecideFixedWindow(); docs/algorithms.md, "fixed_window".
#include <cstdint>

#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "tests/algorithm/algorithm_testing.h"

namespace sluice::algorithm {
namespace {

using algorithm_testing::Allowed;
using algorithm_testing::Denied;
using algorithm_testing::kMs;
using algorithm_testing::kSec;
using algorithm_testing::kT0;
using algorithm_testing::MakeLimit;

Limit PerSecond(int64_t limit) { return MakeLimit(Algorithm::kFixedWindow, limit, 1000); }

TEST(FixedWindow, AdmitsUpToLimitThenDenies) {
  const Limit limit = PerSecond(3);
  FixedWindowState state;
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0, 1), Allowed(3, 2, kSec));
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 100 * kMs, 2), Allowed(3, 0, 900 * kMs));
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 200 * kMs, 1),
            Denied(3, 0, 800 * kMs, 800 * kMs));
}

// Verifies the boundary pair: 999 ms into the window is the same window, 1000 ms is the next.
TEST(FixedWindow, WindowEndsExactlyAfterOnePeriod) {
  const Limit limit = PerSecond(1);
  FixedWindowState state;
  ASSERT_TRUE(DecideFixedWindow(limit, state, kT0, 1).allowed);
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 999 * kMs, 1), Denied(1, 0, kMs, kMs));
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 999'999, 1), Denied(1, 0, 1, 1));
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 1000 * kMs, 1), Allowed(1, 0, kSec));
}

// Verifies that windows start at epoch multiples of the period, not at the first request, so
// every instance agrees on them.
TEST(FixedWindow, WindowsAlignToEpochMultiplesOfPeriod) {
  // 1700000000 s is 20 s past a multiple of 60 s.
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, 2, 60'000);
  FixedWindowState state;
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0, 2), Allowed(2, 0, 40 * kSec));
  EXPECT_EQ(state.window_start_us, kT0 - 20 * kSec);
  EXPECT_FALSE(DecideFixedWindow(limit, state, kT0 + 40 * kSec - 1, 1).allowed);
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 40 * kSec, 1), Allowed(2, 1, 60 * kSec));
}

TEST(FixedWindow, DeniedRequestRecordsNothing) {
  const Limit limit = PerSecond(5);
  FixedWindowState state;
  ASSERT_TRUE(DecideFixedWindow(limit, state, kT0, 3).allowed);
  const FixedWindowState before = state;
  EXPECT_FALSE(DecideFixedWindow(limit, state, kT0, 3).allowed);
  EXPECT_EQ(state, before);
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0, 2), Allowed(5, 0, kSec));
}

TEST(FixedWindow, CostAboveLimitIsNeverAdmitted) {
  const Limit limit = PerSecond(3);
  FixedWindowState state;
  ASSERT_TRUE(DecideFixedWindow(limit, state, kT0, 1).allowed);
  const FixedWindowState before = state;
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 250 * kMs, 4),
            Denied(3, 2, 750 * kMs, Decision::kNever.count()));
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0, kMaxCost).retry_after, Decision::kNever);
  EXPECT_EQ(state, before);
}

TEST(FixedWindow, PeekWritesNothing) {
  const Limit limit = PerSecond(5);
  FixedWindowState state;
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 400 * kMs, 0), Allowed(5, 5, 600 * kMs));
  EXPECT_EQ(state, FixedWindowState{});
  ASSERT_TRUE(DecideFixedWindow(limit, state, kT0, 5).allowed);
  const FixedWindowState full = state;
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 1, 0), Allowed(5, 0, kSec - 1));
  EXPECT_EQ(state, full);
}

// Verifies that a clock stepping back into an earlier window neither resets the count nor moves
// the recorded window back, and that retry_after is measured on the current clock.
TEST(FixedWindow, BackwardsTimeKeepsRecordedWindow) {
  const Limit limit = PerSecond(2);
  FixedWindowState state;
  ASSERT_TRUE(DecideFixedWindow(limit, state, kT0 + kSec, 2).allowed);
  const FixedWindowState before = state;
  const Decision d = DecideFixedWindow(limit, state, kT0 + 500 * kMs, 1);
  EXPECT_EQ(d, Denied(2, 0, 1500 * kMs, 1500 * kMs));
  EXPECT_EQ(state, before);
  EXPECT_FALSE(DecideFixedWindow(limit, state, kT0 + 2 * kSec - 1, 1).allowed);
  EXPECT_TRUE(DecideFixedWindow(limit, state, kT0 + 2 * kSec, 1).allowed);
}

// Verifies that a count written under a larger limit reads as a full window, not as a negative
// remaining.
TEST(FixedWindow, CountFromLargerLimitReadsAsFull) {
  FixedWindowState state;
  ASSERT_TRUE(DecideFixedWindow(PerSecond(100), state, kT0, 80).allowed);
  EXPECT_EQ(DecideFixedWindow(PerSecond(10), state, kT0, 0), Allowed(10, 0, kSec));
  EXPECT_EQ(DecideFixedWindow(PerSecond(10), state, kT0, 1), Denied(10, 0, kSec, kSec));
  EXPECT_EQ(DecideFixedWindow(PerSecond(10), state, kT0 + kSec, 1), Allowed(10, 9, kSec));
}

// Verifies that a window recorded under a shorter period, which lies inside the current longer
// window, keeps its count (rather than resetting on a period change).
TEST(FixedWindow, CountFromShorterPeriodStaysInTheLongerWindow) {
  // The 60 s window holding kT0 + 6 s starts at kT0 - 20 s; kT0 + 5 s lies inside it.
  FixedWindowState state{.window_start_us = kT0 + 5 * kSec, .count = 4};
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, 10, 60'000);
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 6 * kSec, 0), Allowed(10, 6, 34 * kSec));
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0 + 6 * kSec, 6), Allowed(10, 0, 34 * kSec));
  EXPECT_EQ(state.window_start_us, kT0 - 20 * kSec);
}

// Verifies that a maximal limit and cost stay exact.
TEST(FixedWindow, ExtremeBoundsStayExact) {
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, kMaxLimit, 366LL * 24 * 3600 * 1000);
  ASSERT_TRUE(ValidateLimit(limit).ok());
  FixedWindowState state;
  const Decision d = DecideFixedWindow(limit, state, kT0, kMaxLimit);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0, kMaxCost).retry_after, Decision::kNever);
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0, 1).retry_after, d.reset_after);
}

TEST(FixedWindow, InvariantsHoldOnRandomSequences) {
  algorithm_testing::CheckInvariantsOnRandomSequences<FixedWindowState>(
      Algorithm::kFixedWindow, &DecideFixedWindow, /*seed=*/0xF1);
}

// Verifies the reference's counting (DecideFixedWindowCounting): the envoyproxy/ratelimit
// sequence of a limit of 3, where every hit is recorded, the counter stands past the limit, and a
// 0-hit check is admitted at exactly the limit and denied past it.
TEST(FixedWindowCounting, RecordsRejectedHitsAndDecidesOnTheCounterAfter) {
  const Limit limit = PerSecond(3);
  FixedWindowState state;
  EXPECT_EQ(DecideFixedWindowCounting(limit, state, kT0, 2), Allowed(3, 1, kSec));
  EXPECT_EQ(DecideFixedWindowCounting(limit, state, kT0, 0), Allowed(3, 1, kSec));
  EXPECT_EQ(DecideFixedWindowCounting(limit, state, kT0, 1), Allowed(3, 0, kSec));
  // At exactly the limit a 0-hit check passes (sluice's own counting denies it).
  EXPECT_EQ(DecideFixedWindowCounting(limit, state, kT0, 0), Allowed(3, 0, kSec));
  EXPECT_EQ(DecideFixedWindow(limit, state, kT0, 0), Allowed(3, 0, kSec));
  EXPECT_EQ(DecideFixedWindowCounting(limit, state, kT0, 1), Denied(3, 0, kSec, kSec));
  EXPECT_EQ(state.count, 4);
  EXPECT_EQ(DecideFixedWindowCounting(limit, state, kT0, 0), Denied(3, 0, kSec, kSec));
  EXPECT_EQ(state.count, 4);
  // A cost that can never pass is recorded too.
  EXPECT_EQ(DecideFixedWindowCounting(limit, state, kT0, 5).retry_after, Decision::kNever);
  EXPECT_EQ(state.count, 9);
  // The next window starts from 0.
  EXPECT_EQ(DecideFixedWindowCounting(limit, state, kT0 + kSec, 1), Allowed(3, 2, kSec));
  EXPECT_EQ(state.count, 1);
}

// Verifies that the recorded count stops at kFixedWindowCountCap, far above any limit.
TEST(FixedWindowCounting, CountStopsAtTheCap) {
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, kMaxLimit, 1000);
  FixedWindowState state{.window_start_us = kT0, .count = kFixedWindowCountCap - 1};
  EXPECT_FALSE(DecideFixedWindowCounting(limit, state, kT0, kMaxCost).allowed);
  EXPECT_EQ(state.count, kFixedWindowCountCap);
  EXPECT_FALSE(DecideFixedWindowCounting(limit, state, kT0, 1).allowed);
  EXPECT_EQ(state.count, kFixedWindowCountCap);
}

}  // namespace
}  // namespace sluice::algorithm
