// Behaviour of DecideSlidingWindow(); docs/algorithms.md, "sliding_window".
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

// L = 10 per second: L * P_ms = 10000 is the scaled capacity in the comments below.
Limit TenPerSecond() { return MakeLimit(Algorithm::kSlidingWindow, 10, 1000); }

// Verifies the weighting: 6 in the previous window, 250 ms into this one, count 6 * 750 / 1000.
TEST(SlidingWindow, WeighsPreviousWindowByTheFractionStillInside) {
  const Limit limit = TenPerSecond();
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0 + 500 * kMs, 6).allowed);
  // U(0) = 6 * 750 = 4500 of 10000: 5 more fit, 6 do not.
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 1250 * kMs, 0), Allowed(10, 5, 750 * kMs));
  SlidingWindowState probe = state;
  EXPECT_EQ(DecideSlidingWindow(limit, probe, kT0 + 1250 * kMs, 5), Allowed(10, 0, 1750 * kMs));
  probe = state;
  EXPECT_FALSE(DecideSlidingWindow(limit, probe, kT0 + 1250 * kMs, 6).allowed);
}

// Verifies retry case 1 and its boundary pair: the previous window's weight decays by whole ms.
TEST(SlidingWindow, RetriesLaterInTheSameWindow) {
  const Limit limit = TenPerSecond();
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0 + 500 * kMs, 6).allowed);
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0 + 1250 * kMs, 5).allowed);
  // U(6) = 6 * 750 + 6000 > 10000. First ms with 6 * (1000 - t) <= 4 * 1000: t = 1000 - 666.
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 1250 * kMs, 1),
            Denied(10, 0, 1750 * kMs, 84 * kMs));
  EXPECT_FALSE(DecideSlidingWindow(limit, state, kT0 + 1334 * kMs - 1, 1).allowed);
  EXPECT_TRUE(DecideSlidingWindow(limit, state, kT0 + 1334 * kMs, 1).allowed);
}

// Verifies retry case 2: with the current window full, the wait reaches into the next window.
TEST(SlidingWindow, RetriesInTheNextWindow) {
  const Limit limit = TenPerSecond();
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0 + 100 * kMs, 10).allowed);
  // Next window: 10 * (1000 - t) <= 9 * 1000 first at t = 100 ms, so 100 ms + 100 ms from now.
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 900 * kMs, 1),
            Denied(10, 0, 1100 * kMs, 200 * kMs));
  EXPECT_FALSE(DecideSlidingWindow(limit, state, kT0 + 1100 * kMs - 1, 1).allowed);
  EXPECT_TRUE(DecideSlidingWindow(limit, state, kT0 + 1100 * kMs, 1).allowed);
}

// Verifies the clamp of case 2: when case 1 fails only because its t_ms reached P_ms, the request
// passes at the next window's start (the unclamped formula gave a wait of 0 for a denial).
TEST(SlidingWindow, RetryAtNextWindowStartWhenWeightingPassesAtOnce) {
  const Limit limit = MakeLimit(Algorithm::kSlidingWindow, 100, 10);  // P_ms = 10: scale 1000
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0, 100).allowed);
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0 + 19 * kMs, 10).allowed);
  // previous 100 at weight 1 ms, current 10: U(99) = 100 + 990 > 1000.
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 19 * kMs, 89), Denied(100, 80, 11 * kMs, kMs));
  EXPECT_FALSE(DecideSlidingWindow(limit, state, kT0 + 20 * kMs - 1, 89).allowed);
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 20 * kMs, 89), Allowed(100, 1, 20 * kMs));
}

TEST(SlidingWindow, ForgetsEverythingAfterTwoWindows) {
  const Limit limit = MakeLimit(Algorithm::kSlidingWindow, 3, 1000);
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0, 3).allowed);
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 1999 * kMs, 3), Denied(3, 2, kMs, kMs));
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 2 * kSec, 0), Allowed(3, 3, 0));
}

TEST(SlidingWindow, CostAboveLimitIsNeverAdmitted) {
  const Limit limit = TenPerSecond();
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0 + 300 * kMs, 3).allowed);
  const SlidingWindowState before = state;
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 300 * kMs, 11),
            Denied(10, 7, 1700 * kMs, Decision::kNever.count()));
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 300 * kMs, kMaxCost).retry_after,
            Decision::kNever);
  EXPECT_EQ(state, before);
}

TEST(SlidingWindow, PeekAndDenialWriteNothing) {
  const Limit limit = TenPerSecond();
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0, 7).allowed);
  const SlidingWindowState before = state;
  // In the next window a write would roll the state; a peek and a denial must not.
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 1400 * kMs, 0), Allowed(10, 5, 600 * kMs));
  EXPECT_FALSE(DecideSlidingWindow(limit, state, kT0 + 1400 * kMs, 6).allowed);
  EXPECT_EQ(state, before);
}

// Verifies a backward step into the previous aligned window: the recorded window stays current
// and the waits are measured from the earlier clock.
TEST(SlidingWindow, BackwardsTimeBeforeRecordedWindowKeepsIt) {
  const Limit limit = TenPerSecond();
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0 + 1200 * kMs, 4).allowed);
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 900 * kMs, 6), Allowed(10, 0, 2100 * kMs));
  EXPECT_EQ(state.window_start_us, kT0 + kSec);
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 900 * kMs, 1),
            Denied(10, 0, 2100 * kMs, 1200 * kMs));
}

// Verifies a backward step within the window: elapsed time is clamped, so the previous window
// weighs more again; a peek is still allowed and reports 0 remaining.
TEST(SlidingWindow, BackwardsTimeWithinWindowWeighsPreviousMore) {
  const Limit limit = TenPerSecond();
  SlidingWindowState state;
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0, 5).allowed);
  ASSERT_TRUE(DecideSlidingWindow(limit, state, kT0 + 1800 * kMs, 8).allowed);
  // U(8) = 5 * 800 + 8000 = 12000 > 10000.
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 1200 * kMs, 0), Allowed(10, 0, 1800 * kMs));
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 1200 * kMs, 1),
            Denied(10, 0, 1800 * kMs, 600 * kMs));
}

// Verifies that counts written under a much larger limit are capped: without the cap,
// previous * P_ms would overflow int64 here (a sanitizer build turns that into a failure).
TEST(SlidingWindow, CountsFromLargerLimitAreCapped) {
  SlidingWindowState state{.window_start_us = kT0 - kSec, .current = kMaxLimit, .previous = 0};
  const Limit year = MakeLimit(Algorithm::kSlidingWindow, 1, 366LL * 24 * 3600 * 1000);
  ASSERT_TRUE(ValidateLimit(year).ok());
  // The old window [kT0 - 1 s, kT0) lies inside the year-long window holding kT0 (it is aligned
  // to the old 1 s period only), so its count stays current, capped at L = 1.
  const Decision d = DecideSlidingWindow(year, state, kT0, 0);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_FALSE(DecideSlidingWindow(year, state, kT0, 1).allowed);
}

// Verifies that counts recorded under a shorter period, whose window lies inside the current
// longer one, stay current rather than resetting on a period change.
TEST(SlidingWindow, CountsFromShorterPeriodStayInTheLongerWindow) {
  // The 60 s window holding kT0 + 6 s starts at kT0 - 20 s; kT0 + 5 s lies inside it.
  SlidingWindowState state{.window_start_us = kT0 + 5 * kSec, .current = 4, .previous = 7};
  const Limit limit = MakeLimit(Algorithm::kSlidingWindow, 10, 60'000);
  // a = 26 s: U(4) = 7 * 34000 + 4 * 60000 = 478000 of 600000, so 2 more fit.
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 6 * kSec, 0), Allowed(10, 2, 94 * kSec));
  EXPECT_FALSE(DecideSlidingWindow(limit, state, kT0 + 6 * kSec, 3).allowed);
}

TEST(SlidingWindow, InvariantsHoldOnRandomSequences) {
  algorithm_testing::CheckInvariantsOnRandomSequences<SlidingWindowState>(
      Algorithm::kSlidingWindow, &DecideSlidingWindow, /*seed=*/0x5A);
}

}  // namespace
}  // namespace sluice::algorithm
