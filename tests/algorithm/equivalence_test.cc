// GCRA and the token bucket with equal limit, period and burst make the same decisions while time
// never goes backwards (docs/algorithms.md, "What burst means"): a token bucket's deficit is
// GCRA's debt. They differ only in what they store.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "tests/algorithm/algorithm_testing.h"

namespace sluice::algorithm {
namespace {

using algorithm_testing::kMs;
using algorithm_testing::kSec;
using algorithm_testing::kT0;
using algorithm_testing::MakeLimit;

Limit AsTokenBucket(Limit limit) {
  limit.algorithm = Algorithm::kTokenBucket;
  return limit;
}

TEST(Equivalence, TokenBucketAndGcraDecideAlikeOnRandomInputs) {
  std::mt19937_64 rng(0xE0);
  constexpr std::array<int64_t, 4> kPeriodsMs = {1, 7, 1000, 60'000};
  int64_t admitted = 0;
  int64_t denied = 0;
  for (int run = 0; run < 300; ++run) {
    const int64_t period_ms =
        kPeriodsMs[std::uniform_int_distribution<size_t>(0, kPeriodsMs.size() - 1)(rng)];
    // Small and large quotas, so that T = P / L is both above and below one microsecond.
    const int64_t rate = std::bernoulli_distribution(0.5)(rng)
                             ? std::uniform_int_distribution<int64_t>(1, 20)(rng)
                             : std::uniform_int_distribution<int64_t>(1, 5'000'000)(rng);
    std::optional<int64_t> burst;
    if (std::bernoulli_distribution(0.7)(rng)) {
      burst = std::uniform_int_distribution<int64_t>(1, 2 * rate)(rng);
    }
    const Limit gcra = MakeLimit(Algorithm::kGcra, rate, period_ms, burst);
    const Limit bucket = AsTokenBucket(gcra);
    ASSERT_TRUE(ValidateLimit(gcra).ok()) << Describe(gcra);
    const int64_t period = gcra.period.count();
    const int64_t capacity = gcra.Capacity();

    GcraState gcra_state;
    TokenBucketState bucket_state;
    int64_t now = kT0 + std::uniform_int_distribution<int64_t>(0, period)(rng);
    for (int step = 0; step < 200; ++step) {
      // Non-decreasing time: mostly within one emission interval, sometimes idle for long.
      const int64_t interval = std::max<int64_t>(1, period / rate);
      now += std::bernoulli_distribution(0.1)(rng)
                 ? std::uniform_int_distribution<int64_t>(0, 2 * period)(rng)
                 : std::uniform_int_distribution<int64_t>(0, 2 * interval)(rng);
      const int64_t cost = std::bernoulli_distribution(0.05)(rng)
                               ? capacity + 1
                               : std::uniform_int_distribution<int64_t>(0, capacity)(rng);
      const Decision g = DecideGcra(gcra, gcra_state, now, cost);
      const Decision b = DecideTokenBucket(bucket, bucket_state, now, cost);
      ASSERT_EQ(g, b) << Describe(gcra) << " run " << run << " step " << step << ": now = T0 + "
                      << now - kT0 << "us, cost " << cost;
      (g.allowed ? admitted : denied) += 1;
    }
  }
  // Both outcomes occur often, so the comparison above is not vacuous.
  EXPECT_GT(admitted, 10'000);
  EXPECT_GT(denied, 10'000);
}

// Verifies the one documented difference: after time steps back, the token bucket freezes its
// refill (so it still holds the tokens it had), while GCRA measures its debt from the earlier
// clock (so the step counts as debt). Both still report the same time to full.
TEST(Equivalence, PartAfterTimeGoesBackwards) {
  const Limit gcra = MakeLimit(Algorithm::kGcra, 10, 1000);
  const Limit bucket = AsTokenBucket(gcra);
  GcraState gcra_state;
  TokenBucketState bucket_state;
  ASSERT_TRUE(DecideGcra(gcra, gcra_state, kT0, 5).allowed);
  ASSERT_TRUE(DecideTokenBucket(bucket, bucket_state, kT0, 5).allowed);

  const int64_t back = kT0 - 500 * kMs;
  const Decision g = DecideGcra(gcra, gcra_state, back, 0);
  const Decision b = DecideTokenBucket(bucket, bucket_state, back, 0);
  EXPECT_EQ(g.remaining, 0);
  EXPECT_EQ(b.remaining, 5);
  EXPECT_EQ(g.reset_after, std::chrono::microseconds(kSec));
  EXPECT_EQ(b.reset_after, g.reset_after);
  EXPECT_FALSE(DecideGcra(gcra, gcra_state, back, 5).allowed);
  EXPECT_TRUE(DecideTokenBucket(bucket, bucket_state, back, 5).allowed);
}

}  // namespace
}  // namespace sluice::algorithm
