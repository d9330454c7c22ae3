// Behaviour of DecideTokenBucket(); docs/algorithms.md, "token_bucket".
#include <cstdint>
#include <optional>

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

// 10 tokens per second, so one token refills every 100 ms.
Limit TenPerSecond(std::optional<int64_t> burst) {
  return MakeLimit(Algorithm::kTokenBucket, 10, 1000, burst);
}

TEST(TokenBucket, AdmitsBurstAtOnceFromRestedState) {
  const Limit limit = TenPerSecond(5);
  TokenBucketState state;
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0, 5), Allowed(5, 0, 500 * kMs));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0, 1), Denied(5, 0, 500 * kMs, 100 * kMs));
}

TEST(TokenBucket, BurstDefaultsToLimit) {
  const Limit limit = TenPerSecond(std::nullopt);
  TokenBucketState state;
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0, 10), Allowed(10, 0, kSec));
  EXPECT_FALSE(DecideTokenBucket(limit, state, kT0, 1).allowed);
}

// Verifies the boundary pair of a refill: one token is back exactly 100 ms later, not 1 us before.
TEST(TokenBucket, RefillsOneTokenPerEmissionInterval) {
  const Limit limit = TenPerSecond(5);
  TokenBucketState state;
  ASSERT_TRUE(DecideTokenBucket(limit, state, kT0, 5).allowed);
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 100 * kMs - 1, 1), Denied(5, 0, 400'001, 1));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 100 * kMs, 1), Allowed(5, 0, 500 * kMs));
}

TEST(TokenBucket, RefillsToFullAndNoFurther) {
  const Limit limit = TenPerSecond(5);
  TokenBucketState state;
  ASSERT_TRUE(DecideTokenBucket(limit, state, kT0, 5).allowed);
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 300 * kMs, 0), Allowed(5, 3, 200 * kMs));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 500 * kMs, 0), Allowed(5, 5, 0));
  // An hour idle still holds only the burst.
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 3600 * kSec, 5), Allowed(5, 0, 500 * kMs));
  EXPECT_FALSE(DecideTokenBucket(limit, state, kT0 + 3600 * kSec, 1).allowed);
}

// Verifies that waits round up when the emission interval is not a whole microsecond.
TEST(TokenBucket, RetryAfterRoundsUp) {
  const Limit limit = MakeLimit(Algorithm::kTokenBucket, 3, 1000);  // T = 333333.3 us
  TokenBucketState state;
  ASSERT_TRUE(DecideTokenBucket(limit, state, kT0, 3).allowed);
  const Decision d = DecideTokenBucket(limit, state, kT0, 1);
  EXPECT_EQ(d, Denied(3, 0, kSec, 333'334));
  EXPECT_FALSE(DecideTokenBucket(limit, state, kT0 + 333'333, 1).allowed);
  EXPECT_TRUE(DecideTokenBucket(limit, state, kT0 + 333'334, 1).allowed);
}

TEST(TokenBucket, CostAboveBurstIsNeverAdmitted) {
  const Limit limit = TenPerSecond(5);
  TokenBucketState state;
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0, 6), Denied(5, 5, 0, Decision::kNever.count()));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0, kMaxCost).retry_after, Decision::kNever);
  EXPECT_EQ(state, TokenBucketState{});
}

TEST(TokenBucket, PeekAndDenialWriteNothing) {
  const Limit limit = TenPerSecond(5);
  TokenBucketState state;
  ASSERT_TRUE(DecideTokenBucket(limit, state, kT0, 4).allowed);
  const TokenBucketState before = state;
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 100 * kMs, 0), Allowed(5, 2, 300 * kMs));
  EXPECT_FALSE(DecideTokenBucket(limit, state, kT0 + 100 * kMs, 3).allowed);
  EXPECT_EQ(state, before);
}

// Verifies that after a backward step the bucket stops refilling until the clock catches up, and
// that the waits include that lag so they stay true.
TEST(TokenBucket, BackwardsTimeFreezesRefillAndDelaysWaits) {
  const Limit limit = TenPerSecond(std::nullopt);
  TokenBucketState state;
  ASSERT_TRUE(DecideTokenBucket(limit, state, kT0 + kSec, 10).allowed);
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 500 * kMs, 1),
            Denied(10, 0, 1500 * kMs, 600 * kMs));
  EXPECT_FALSE(DecideTokenBucket(limit, state, kT0 + 1100 * kMs - 1, 1).allowed);
  EXPECT_TRUE(DecideTokenBucket(limit, state, kT0 + 1100 * kMs, 1).allowed);
  // The admission did not move `updated` back.
  EXPECT_EQ(state.updated_us, kT0 + 1100 * kMs);
}

// Verifies exactness at the bounds ValidateLimit allows: rate 2^32 - 1 per ms, and a one-hour
// backward step on it (the lag is added, never multiplied by the rate).
TEST(TokenBucket, ExtremeBoundsStayExact) {
  const Limit limit = MakeLimit(Algorithm::kTokenBucket, kMaxLimit, 1);
  ASSERT_TRUE(ValidateLimit(limit).ok());
  TokenBucketState state;
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0, kMaxLimit), Allowed(kMaxLimit, 0, kMs));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0, 1), Denied(kMaxLimit, 0, kMs, 1));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 - 3600 * kSec, 1),
            Denied(kMaxLimit, 0, 3600 * kSec + kMs, 3600 * kSec + 1));
  // (L - 1000) div 1000 after 1 us of refill.
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 1, 1), Allowed(kMaxLimit, 4'294'966, kMs));
}

TEST(TokenBucket, InvariantsHoldOnRandomSequences) {
  algorithm_testing::CheckInvariantsOnRandomSequences<TokenBucketState>(
      Algorithm::kTokenBucket, &DecideTokenBucket, /*seed=*/0x7B);
}

}  // namespace
}  // namespace sluice::algorithm
