// Credits (docs/algorithms.md, "Credits: giving back charged units"): for every algorithm a credit
// is always allowed, never creates state, never goes below empty, and gives back exactly the units
// it names, so that over one period the units admitted are at most the limit plus those credited,
// and equal to it when the key is used to the end. The token bucket and GCRA stay equivalent with
// credits mixed in, and a credit deeper than the exact admissions shortens the running leases.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/lease.h"
#include "tests/algorithm/algorithm_testing.h"

namespace sluice::algorithm {
namespace {

using algorithm_testing::kT0;
using algorithm_testing::MakeLimit;

// One algorithm's state and its Decide/Credit functions behind one interface.
struct AnyState {
  FixedWindowState fixed_window;
  SlidingWindowState sliding_window;
  SlidingLogState sliding_log;
  TokenBucketState token_bucket;
  GcraState gcra;

  bool operator==(const AnyState&) const = default;
};

Decision Charge(const Limit& limit, AnyState& s, int64_t now, int64_t cost) {
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      return DecideFixedWindow(limit, s.fixed_window, now, cost);
    case Algorithm::kSlidingWindow:
      return DecideSlidingWindow(limit, s.sliding_window, now, cost);
    case Algorithm::kSlidingLog:
      return DecideSlidingLog(limit, s.sliding_log, now, cost);
    case Algorithm::kTokenBucket:
      return DecideTokenBucket(limit, s.token_bucket, now, cost);
    case Algorithm::kGcra:
      return DecideGcra(limit, s.gcra, now, cost);
  }
  return {};
}

Decision Credit(const Limit& limit, AnyState& s, int64_t now, int64_t units) {
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      return CreditFixedWindow(limit, s.fixed_window, now, units);
    case Algorithm::kSlidingWindow:
      return CreditSlidingWindow(limit, s.sliding_window, now, units);
    case Algorithm::kSlidingLog:
      return CreditSlidingLog(limit, s.sliding_log, now, units);
    case Algorithm::kTokenBucket:
      return CreditTokenBucket(limit, s.token_bucket, now, units);
    case Algorithm::kGcra:
      return CreditGcra(limit, s.gcra, now, units);
  }
  return {};
}

constexpr Algorithm kAll[] = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                              Algorithm::kSlidingLog, Algorithm::kTokenBucket, Algorithm::kGcra};

class CreditTest : public ::testing::TestWithParam<Algorithm> {};

TEST_P(CreditTest, ACreditToNoStateWritesNothingAndIsAPeek) {
  const Limit limit = MakeLimit(GetParam(), 10, 60'000);
  AnyState s;
  const Decision d = Credit(limit, s, kT0, 5);
  EXPECT_EQ(s, AnyState{});
  AnyState fresh;
  EXPECT_EQ(d, Charge(limit, fresh, kT0, 0));
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 10);
  EXPECT_EQ(d.retry_after.count(), 0);
}

TEST_P(CreditTest, GivesBackWhatWasChargedAndNeverGoesBelowEmpty) {
  const Limit limit = MakeLimit(GetParam(), 10, 60'000);
  AnyState s;
  int64_t now = kT0;
  ASSERT_TRUE(Charge(limit, s, now, 7).allowed);
  now += 1000;
  const Decision d = Credit(limit, s, now, 3);
  EXPECT_TRUE(d.allowed);
  // 7 charged, 3 given back: 6 left, as a peek now says (the bucket refilled nothing in 1 ms of a
  // minute at 10 a minute).
  EXPECT_EQ(d.remaining, 6);
  AnyState copy = s;
  EXPECT_EQ(d, Charge(limit, copy, now, 0));
  EXPECT_TRUE(Charge(limit, s, now, 6).allowed);
  EXPECT_FALSE(Charge(limit, s, now, 1).allowed);
  // More than was charged: back to full, no further.
  EXPECT_EQ(Credit(limit, s, now, 1000).remaining, 10);
  EXPECT_TRUE(Charge(limit, s, now, 10).allowed);
  EXPECT_FALSE(Charge(limit, s, now, 1).allowed);
}

// Random charges and credits within one period: the units admitted never pass the limit plus
// the units credited (each credit names units admitted before it), and using the key to the end
// reaches it exactly.
TEST_P(CreditTest, AdmitsTheLimitPlusWhatWasCreditedOnRandomSequences) {
  std::mt19937_64 rng(0xC3ED17 + static_cast<int>(GetParam()));
  for (int run = 0; run < 200; ++run) {
    const int64_t l = std::uniform_int_distribution<int64_t>(1, 50)(rng);
    // A day's period: no window ends and the bucket refills nothing that matters in the run's
    // few seconds, except that the windows' alignment places the run in one window.
    const Limit limit = MakeLimit(GetParam(), l, 24 * 3600 * 1000);
    AnyState s;
    int64_t now = kT0 - kT0 % (int64_t{24} * 3600 * 1'000'000) + 1;
    int64_t admitted = 0;
    int64_t credited = 0;
    for (int step = 0; step < 100; ++step) {
      now += std::uniform_int_distribution<int64_t>(0, 2000)(rng);
      if (admitted - credited > 0 && std::bernoulli_distribution(0.3)(rng)) {
        const int64_t units = std::uniform_int_distribution<int64_t>(1, admitted - credited)(rng);
        ASSERT_TRUE(Credit(limit, s, now, units).allowed);
        credited += units;
      } else {
        const int64_t cost = std::uniform_int_distribution<int64_t>(0, 3)(rng);
        if (Charge(limit, s, now, cost).allowed) admitted += cost;
      }
      // At most 200 ms pass: the bucket and GCRA refill far less than a unit of l a day.
      ASSERT_LE(admitted, l + credited) << "run " << run << " step " << step;
    }
    while (Charge(limit, s, now, 1).allowed) ++admitted;
    EXPECT_EQ(admitted, l + credited) << "run " << run;
  }
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, CreditTest, ::testing::ValuesIn(kAll),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(AlgorithmName(info.param));
                         });

TEST(Credit, TokenBucketAndGcraStayEquivalentWithCredits) {
  std::mt19937_64 rng(0xE1);
  for (int run = 0; run < 200; ++run) {
    const int64_t rate = std::uniform_int_distribution<int64_t>(1, 5000)(rng);
    const Limit gcra = MakeLimit(Algorithm::kGcra, rate, 1000,
                                 std::uniform_int_distribution<int64_t>(1, 2 * rate)(rng));
    Limit bucket = gcra;
    bucket.algorithm = Algorithm::kTokenBucket;
    GcraState g;
    TokenBucketState b;
    int64_t now = kT0;
    for (int step = 0; step < 200; ++step) {
      now += std::uniform_int_distribution<int64_t>(0, 2 * 1'000'000 / rate)(rng);
      const int64_t units = std::uniform_int_distribution<int64_t>(0, gcra.Capacity())(rng);
      const bool credit = std::bernoulli_distribution(0.3)(rng);
      const Decision dg =
          credit ? CreditGcra(gcra, g, now, units) : DecideGcra(gcra, g, now, units);
      const Decision db = credit ? CreditTokenBucket(bucket, b, now, units)
                                 : DecideTokenBucket(bucket, b, now, units);
      ASSERT_EQ(dg, db) << "run " << run << " step " << step << (credit ? " credit " : " cost ")
                        << units;
    }
  }
}

// A credit deeper than the units admitted outside running leases takes the rest off the leases,
// earliest ending first, so that the next read does not floor it away.
TEST(Credit, ADeepCreditShortensTheRunningLeasesEarliestFirst) {
  const Limit limit = MakeLimit(Algorithm::kTokenBucket, 100, 60'000);
  TokenBucketState s;
  // 20 admitted exactly, then two leases: 40 (of 80 left) ending at +1 s, 20 (of 40) at +2 s.
  ASSERT_TRUE(DecideTokenBucket(limit, s, kT0, 20).allowed);
  ASSERT_EQ(LeaseTokenBucket(limit, s, kT0, 0, 40, 1'000'000).granted, 40);
  ASSERT_EQ(LeaseTokenBucket(limit, s, kT0, 0, 1000, 2'000'000).granted, 20);
  ASSERT_EQ(DecideTokenBucket(limit, s, kT0, 0).remaining, 20);
  // 50 back: 20 from the exact admissions' deficit, 30 off the leases (all of neither).
  const Decision d = CreditTokenBucket(limit, s, kT0, 50);
  EXPECT_EQ(d.remaining, 70);
  ASSERT_EQ(s.leases.size(), 2u);
  EXPECT_EQ(s.leases[0].granted, 10);  // the lease ending first lost 30
  EXPECT_EQ(s.leases[1].granted, 20);
  // And GCRA alike.
  const Limit g = MakeLimit(Algorithm::kGcra, 100, 60'000);
  GcraState gs;
  ASSERT_TRUE(DecideGcra(g, gs, kT0, 20).allowed);
  ASSERT_EQ(LeaseGcra(g, gs, kT0, 0, 40, 1'000'000).granted, 40);
  ASSERT_EQ(LeaseGcra(g, gs, kT0, 0, 1000, 2'000'000).granted, 20);
  EXPECT_EQ(CreditGcra(g, gs, kT0, 50), d);
  ASSERT_EQ(gs.leases.size(), 2u);
  EXPECT_EQ(gs.leases[0].granted, 10);
}

}  // namespace
}  // namespace sluice::algorithm
