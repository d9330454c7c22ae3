// Behaviour of DecideGcra(); docs/algorithms.md, "gcra".
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

// 10 per second: emission interval T = 100 ms.
Limit TenPerSecond(std::optional<int64_t> burst) {
  return MakeLimit(Algorithm::kGcra, 10, 1000, burst);
}

// Verifies redis-cell's documented example, CL.THROTTLE user123 15 30 60 (docs/algorithms.md,
// "What burst means"): 16 at once, then one every 2 s.
TEST(Gcra, MatchesRedisCellExample) {
  const Limit limit = MakeLimit(Algorithm::kGcra, 30, 60'000, 16);
  GcraState state;
  EXPECT_EQ(DecideGcra(limit, state, kT0, 1), Allowed(16, 15, 2 * kSec));
  for (int i = 0; i < 15; ++i) {
    ASSERT_TRUE(DecideGcra(limit, state, kT0, 1).allowed) << i;
  }
  EXPECT_EQ(DecideGcra(limit, state, kT0, 1), Denied(16, 0, 32 * kSec, 2 * kSec));
}

TEST(Gcra, DeniesBeyondBurst) {
  const Limit limit = TenPerSecond(5);
  GcraState state;
  EXPECT_EQ(DecideGcra(limit, state, kT0, 5), Allowed(5, 0, 500 * kMs));
  EXPECT_EQ(DecideGcra(limit, state, kT0, 1), Denied(5, 0, 500 * kMs, 100 * kMs));
}

// Verifies the boundary pair of the emission interval: the next request passes at exactly T.
TEST(Gcra, AdmitsAgainAfterExactlyOneEmissionInterval) {
  const Limit limit = TenPerSecond(1);
  GcraState state;
  ASSERT_TRUE(DecideGcra(limit, state, kT0, 1).allowed);
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 100 * kMs - 1, 1), Denied(1, 0, 1, 1));
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 100 * kMs, 1), Allowed(1, 0, 100 * kMs));
}

// Verifies that a TAT that is not a whole microsecond is kept exactly: three requests of T = 1/3 s
// add up to exactly 1 s, with no drift.
TEST(Gcra, KeepsFractionalTatExactly) {
  const Limit limit = MakeLimit(Algorithm::kGcra, 3, 1000);
  GcraState state;
  EXPECT_EQ(DecideGcra(limit, state, kT0, 1), Allowed(3, 2, 333'334));
  EXPECT_EQ(state, (GcraState{.tat_us = kT0 + 333'333, .tat_frac = 1}));
  EXPECT_EQ(DecideGcra(limit, state, kT0, 1), Allowed(3, 1, 666'667));
  EXPECT_EQ(DecideGcra(limit, state, kT0, 1), Allowed(3, 0, kSec));
  EXPECT_EQ(state, (GcraState{.tat_us = kT0 + kSec, .tat_frac = 0}));
  EXPECT_EQ(DecideGcra(limit, state, kT0, 1), Denied(3, 0, kSec, 333'334));
}

TEST(Gcra, RefillsToFullAfterResetAfter) {
  const Limit limit = TenPerSecond(5);
  GcraState state;
  ASSERT_TRUE(DecideGcra(limit, state, kT0, 5).allowed);
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 300 * kMs, 0), Allowed(5, 3, 200 * kMs));
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 500 * kMs, 0), Allowed(5, 5, 0));
}

TEST(Gcra, CostAboveBurstIsNeverAdmitted) {
  const Limit limit = TenPerSecond(5);
  GcraState state;
  EXPECT_EQ(DecideGcra(limit, state, kT0, 6), Denied(5, 5, 0, Decision::kNever.count()));
  EXPECT_EQ(DecideGcra(limit, state, kT0, kMaxCost).retry_after, Decision::kNever);
  EXPECT_EQ(state, GcraState{});
}

TEST(Gcra, PeekAndDenialWriteNothing) {
  const Limit limit = TenPerSecond(5);
  GcraState state;
  ASSERT_TRUE(DecideGcra(limit, state, kT0, 4).allowed);
  const GcraState before = state;
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 100 * kMs, 0), Allowed(5, 2, 300 * kMs));
  EXPECT_FALSE(DecideGcra(limit, state, kT0 + 100 * kMs, 3).allowed);
  EXPECT_EQ(state, before);
}

// Verifies that a backward step measures the debt from the earlier clock: the TAT stays put, so
// the key is further from full, and every wait still ends at the same absolute time.
TEST(Gcra, BackwardsTimeMeasuresDebtFromNow) {
  const Limit limit = TenPerSecond(5);
  GcraState state;
  ASSERT_TRUE(DecideGcra(limit, state, kT0 + kSec, 5).allowed);
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 500 * kMs, 0), Allowed(5, 0, kSec));
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 500 * kMs, 1), Denied(5, 0, kSec, 600 * kMs));
  EXPECT_FALSE(DecideGcra(limit, state, kT0 + 1100 * kMs - 1, 1).allowed);
  EXPECT_TRUE(DecideGcra(limit, state, kT0 + 1100 * kMs, 1).allowed);
}

// Verifies exactness where the debt D = dt * L would overflow int64: rate 2^32 - 1 per ms and a
// one-hour backward step (D would be about 1.5e19). A sanitizer build catches any overflow.
TEST(Gcra, HugeBackwardsStepStaysExact) {
  const Limit limit = MakeLimit(Algorithm::kGcra, kMaxLimit, 1);
  ASSERT_TRUE(ValidateLimit(limit).ok());
  GcraState state;
  ASSERT_EQ(DecideGcra(limit, state, kT0, kMaxLimit), Allowed(kMaxLimit, 0, kMs));
  EXPECT_EQ(DecideGcra(limit, state, kT0 - 3600 * kSec, 1),
            Denied(kMaxLimit, 0, 3600 * kSec + kMs, 3600 * kSec + 1));
  // (L - 1000) div 1000 after 1 us.
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 1, 1), Allowed(kMaxLimit, 4'294'966, kMs));
}

// Verifies that a fraction written under a larger limit is carried into whole microseconds.
TEST(Gcra, FractionFromLargerLimitIsCarried) {
  // Under L = 7 a fraction of 5 is 5/7 us; read under L = 2 it is 2 us + 1/2 us.
  GcraState state{.tat_us = kT0 + 10, .tat_frac = 5};
  const Limit limit = MakeLimit(Algorithm::kGcra, 2, 1, 1);  // T = 500 us, tau = 500 us
  // tat = (kT0 + 12, 1): D = 12 * 2 + 1 = 25; remaining = (1000 - 25) div 1000 = 0;
  // reset = 12 + 1. A request: new = (kT0 + 512, 1), dt = 512 > q_B = 500: retry = 12 + 1.
  EXPECT_EQ(DecideGcra(limit, state, kT0, 0), Allowed(1, 0, 13));
  EXPECT_EQ(DecideGcra(limit, state, kT0, 1), Denied(1, 0, 13, 13));
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 13, 1), Allowed(1, 0, 500));
  EXPECT_EQ(state, (GcraState{.tat_us = kT0 + 513, .tat_frac = 0}));
}

TEST(Gcra, InvariantsHoldOnRandomSequences) {
  algorithm_testing::CheckInvariantsOnRandomSequences<GcraState>(Algorithm::kGcra, &DecideGcra,
                                                                 /*seed=*/0x6C);
}

}  // namespace
}  // namespace sluice::algorithm
