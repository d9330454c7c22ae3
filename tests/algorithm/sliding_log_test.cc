// Behaviour of DecideSlidingLog(); docs/algorithms.md, "sliding_log".
#include <cstdint>
#include <deque>

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

Limit PerSecond(int64_t limit) { return MakeLimit(Algorithm::kSlidingLog, limit, 1000); }

// Verifies the boundary pair: an entry counts for exactly one period after it was made.
TEST(SlidingLog, EntryStopsCountingExactlyOnePeriodLater) {
  const Limit limit = PerSecond(1);
  SlidingLogState state;
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0, 1).allowed);
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + 999 * kMs, 1), Denied(1, 0, kMs, kMs));
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + 1000 * kMs, 1), Allowed(1, 0, kSec));
}

// Verifies that a request of cost c waits for the (n + c - L)-th oldest entry, not the oldest.
TEST(SlidingLog, RetryWaitsForKthOldestEntry) {
  const Limit limit = PerSecond(3);
  SlidingLogState state;
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0, 1).allowed);
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0 + 200 * kMs, 1).allowed);
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0 + 400 * kMs, 1).allowed);
  // k = 3 + 2 - 3 = 2: the entry at 200 ms leaves at 1200 ms.
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + 500 * kMs, 2), Denied(3, 0, 900 * kMs, 700 * kMs));
  EXPECT_FALSE(DecideSlidingLog(limit, state, kT0 + 1200 * kMs - 1, 2).allowed);
  EXPECT_TRUE(DecideSlidingLog(limit, state, kT0 + 1200 * kMs, 2).allowed);
}

TEST(SlidingLog, AddsOneEntryPerUnitOfCost) {
  const Limit limit = PerSecond(4);
  SlidingLogState state;
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0, 3).allowed);
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0 + 500 * kMs, 1).allowed);
  EXPECT_EQ(state.entries_us, (std::deque<int64_t>{kT0, kT0, kT0, kT0 + 500 * kMs}));
  // The three units of one request leave together.
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + kSec, 3), Allowed(4, 0, kSec));
  EXPECT_EQ(state.entries_us,
            (std::deque<int64_t>{kT0 + 500 * kMs, kT0 + kSec, kT0 + kSec, kT0 + kSec}));
}

// Verifies that only admissions write: expired entries are not even pruned by a denial or a peek.
TEST(SlidingLog, DenialAndPeekWriteNothing) {
  const Limit limit = PerSecond(2);
  SlidingLogState state;
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0, 1).allowed);
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0 + 700 * kMs, 1).allowed);
  const SlidingLogState before = state;
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + 1500 * kMs, 0), Allowed(2, 1, 200 * kMs));
  EXPECT_FALSE(DecideSlidingLog(limit, state, kT0 + 1500 * kMs, 2).allowed);
  EXPECT_EQ(state, before);
}

TEST(SlidingLog, CostAboveLimitIsNeverAdmitted) {
  const Limit limit = PerSecond(3);
  SlidingLogState state;
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0, 2).allowed);
  const SlidingLogState before = state;
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + 100 * kMs, 4),
            Denied(3, 1, 900 * kMs, Decision::kNever.count()));
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0, kMaxCost).retry_after, Decision::kNever);
  EXPECT_EQ(state, before);
}

// Verifies that an admission after a backward step keeps the log sorted, so "oldest" stays right.
TEST(SlidingLog, BackwardsTimeKeepsLogSorted) {
  const Limit limit = PerSecond(3);
  SlidingLogState state;
  ASSERT_TRUE(DecideSlidingLog(limit, state, kT0 + 500 * kMs, 2).allowed);
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + 200 * kMs, 1), Allowed(3, 0, 1300 * kMs));
  EXPECT_EQ(state.entries_us,
            (std::deque<int64_t>{kT0 + 200 * kMs, kT0 + 500 * kMs, kT0 + 500 * kMs}));
  // The oldest entry is the one made after the step back.
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + 200 * kMs, 1),
            Denied(3, 0, 1300 * kMs, 1000 * kMs));
}

// Verifies the largest log the limits allow: L = 100000 units in one request.
TEST(SlidingLog, LargestLogStaysExact) {
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, kMaxSlidingLogLimit, 60'000);
  ASSERT_TRUE(ValidateLimit(limit).ok());
  SlidingLogState state;
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0, kMaxSlidingLogLimit),
            Allowed(kMaxSlidingLogLimit, 0, 60 * kSec));
  EXPECT_EQ(state.entries_us.size(), static_cast<size_t>(kMaxSlidingLogLimit));
  EXPECT_EQ(DecideSlidingLog(limit, state, kT0 + kSec, kMaxSlidingLogLimit),
            Denied(kMaxSlidingLogLimit, 0, 59 * kSec, 59 * kSec));
}

TEST(SlidingLog, InvariantsHoldOnRandomSequences) {
  algorithm_testing::CheckInvariantsOnRandomSequences<SlidingLogState>(
      Algorithm::kSlidingLog, &DecideSlidingLog, /*seed=*/0x51);
}

}  // namespace
}  // namespace sluice::algorithm
