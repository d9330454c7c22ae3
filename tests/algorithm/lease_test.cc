// Behaviour of the leases of src/algorithm/lease.h; docs/algorithms.md, "Leases".
#include "src/algorithm/lease.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "tests/algorithm/algorithm_testing.h"

namespace sluice::algorithm {

void PrintTo(const LeaseDecision& d, std::ostream* os) {
  PrintTo(d.decision, os);
  *os << " granted=" << d.granted << " ends_us=" << d.ends_us;
}

namespace {

using algorithm_testing::Allowed;
using algorithm_testing::Denied;
using algorithm_testing::kMs;
using algorithm_testing::kSec;
using algorithm_testing::kT0;
using algorithm_testing::MakeLimit;

LeaseDecision Granted(Decision decision, int64_t granted, int64_t ends_us) {
  return LeaseDecision{.decision = decision, .granted = granted, .ends_us = ends_us};
}

LeaseDecision NotGranted(Decision decision) { return Granted(decision, 0, 0); }

TEST(LeaseFixedWindow, GrantsHalfOfWhatRemainsUntilTheWindowEnds) {
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, 10, 1000);
  FixedWindowState state;
  // R = 9 after the request: g = min(100, 4); the decision reports the state after the grant.
  EXPECT_EQ(LeaseFixedWindow(limit, state, kT0 + 100 * kMs, 1, 100, 0),
            Granted(Allowed(10, 5, 900 * kMs), 4, kT0 + kSec));
  EXPECT_EQ(state, (FixedWindowState{.window_start_us = kT0, .count = 5}));
  EXPECT_EQ(LeaseFixedWindow(limit, state, kT0 + 200 * kMs, 1, 100, 0),
            Granted(Allowed(10, 2, 800 * kMs), 2, kT0 + kSec));
  // R = 1: nothing to share, the decision is the exact one.
  EXPECT_EQ(LeaseFixedWindow(limit, state, kT0 + 300 * kMs, 1, 100, 0),
            NotGranted(Allowed(10, 1, 700 * kMs)));
  // A denial grants nothing and records nothing.
  EXPECT_EQ(LeaseFixedWindow(limit, state, kT0 + 300 * kMs, 2, 100, 0),
            NotGranted(Denied(10, 1, 700 * kMs, 700 * kMs)));
  EXPECT_EQ(state.count, 9);
}

TEST(LeaseFixedWindow, WantZeroIsAnExactCheck) {
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, 10, 1000);
  FixedWindowState leased;
  FixedWindowState exact;
  EXPECT_EQ(LeaseFixedWindow(limit, leased, kT0, 3, 0, 0),
            NotGranted(DecideFixedWindow(limit, exact, kT0, 3)));
  EXPECT_EQ(leased, exact);
}

TEST(LeaseFixedWindow, RefundsOnlyWithinTheLeasesWindow) {
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, 10, 1000);
  FixedWindowState state;
  const LeaseDecision d = LeaseFixedWindow(limit, state, kT0, 0, 4, 0);
  ASSERT_EQ(d.granted, 4);
  const GrantedLease lease{.ends_us = d.ends_us, .granted = d.granted};
  EXPECT_EQ(RefundFixedWindow(limit, state, kT0 + 999 * kMs, lease, 3), 3);
  EXPECT_EQ(state.count, 1);
  // At the window's end the lease has ended: nothing to give back, nothing written.
  EXPECT_EQ(RefundFixedWindow(limit, state, kT0 + kSec, lease, 1), 0);
  EXPECT_EQ(state.count, 1);
  // Never below 0.
  EXPECT_EQ(RefundFixedWindow(limit, state, kT0 + 500 * kMs, lease, 4), 1);
  EXPECT_EQ(state.count, 0);
  // A window written since is another window.
  ASSERT_TRUE(DecideFixedWindow(limit, state, kT0 + kSec, 1).allowed);
  EXPECT_EQ(RefundFixedWindow(limit, state, kT0 + 500 * kMs, lease, 1), 0);
  EXPECT_EQ(state.count, 1);
}

TEST(LeaseSlidingWindow, GrantedUnitsWeighAsPreviousInTheNextWindow) {
  const Limit limit = MakeLimit(Algorithm::kSlidingWindow, 10, 1000);
  SlidingWindowState state;
  EXPECT_EQ(LeaseSlidingWindow(limit, state, kT0 + 100 * kMs, 1, 3, 0),
            Granted(Allowed(10, 6, 1900 * kMs), 3, kT0 + kSec));
  EXPECT_EQ(state.current, 4);
  // Half into the next window, the 4 weigh 4 * 500 / 1000 = 2.
  EXPECT_EQ(DecideSlidingWindow(limit, state, kT0 + 1500 * kMs, 0).remaining, 8);
  EXPECT_EQ(RefundSlidingWindow(limit, state, kT0 + 1500 * kMs, {kT0 + kSec, 3}, 3), 0);
  EXPECT_EQ(RefundSlidingWindow(limit, state, kT0 + 999 * kMs, {kT0 + kSec, 3}, 2), 2);
  EXPECT_EQ(state.current, 2);
}

TEST(LeaseSlidingLog, RecordsTheUnitsWhenTheLeaseEnds) {
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 10, 1000);
  SlidingLogState state;
  // One entry at now, four at now + ttl; the newest is what the log lives for.
  EXPECT_EQ(LeaseSlidingLog(limit, state, kT0, 1, 8, 200 * kMs),
            Granted(Allowed(10, 5, 1200 * kMs), 4, kT0 + 200 * kMs));
  EXPECT_EQ(state.entries_us, (std::deque<int64_t>{kT0, kT0 + 200 * kMs, kT0 + 200 * kMs,
                                                   kT0 + 200 * kMs, kT0 + 200 * kMs}));
  // Every check counts the entries later than now - P, those after now included: k = 5 + 6 - 10.
  SlidingLogState probe = state;
  EXPECT_EQ(DecideSlidingLog(limit, probe, kT0, 6), Denied(10, 5, 1200 * kMs, kSec));
  // The leased units count for P after the lease's end.
  probe = state;
  EXPECT_EQ(DecideSlidingLog(limit, probe, kT0 + 1200 * kMs - 1, 0).remaining, 6);
  EXPECT_EQ(DecideSlidingLog(limit, probe, kT0 + 1200 * kMs, 0), Allowed(10, 10, 0));
}

TEST(LeaseSlidingLog, ClampsTheTtlToOneMillisecondAndThePeriod) {
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 10, 1000);
  SlidingLogState state;
  EXPECT_EQ(LeaseSlidingLog(limit, state, kT0, 0, 1, 0).ends_us, kT0 + kMs);
  EXPECT_EQ(LeaseSlidingLog(limit, state, kT0, 0, 1, 5 * kSec).ends_us, kT0 + kSec);
  EXPECT_EQ(ClampLeaseTtl(1500, 1000 * kMs), 1500);
}

TEST(LeaseSlidingLog, RefundRemovesEntriesAtTheLeasesEnd) {
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 10, 1000);
  SlidingLogState state;
  const LeaseDecision d = LeaseSlidingLog(limit, state, kT0, 1, 8, 200 * kMs);
  const GrantedLease lease{.ends_us = d.ends_us, .granted = d.granted};
  EXPECT_EQ(RefundSlidingLog(limit, state, kT0 + 100 * kMs, lease, 3), 3);
  EXPECT_EQ(state.entries_us, (std::deque<int64_t>{kT0, kT0 + 200 * kMs}));
  EXPECT_EQ(RefundSlidingLog(limit, state, kT0 + 200 * kMs, lease, 1), 0);
  EXPECT_EQ(RefundSlidingLog(limit, state, kT0 + 100 * kMs, lease, 4), 1);
  EXPECT_EQ(state.entries_us, (std::deque<int64_t>{kT0}));
}

// 10 tokens per second and a burst of 10: P = 1 s, one token refills every 100 ms.
Limit Bucket(Algorithm algorithm) { return MakeLimit(algorithm, 10, 1000, 10); }

TEST(LeaseTokenBucket, TakesTheTokensAndKeepsARecord) {
  const Limit limit = Bucket(Algorithm::kTokenBucket);
  TokenBucketState state;
  // Full bucket; R = 9, g = 4. reset_after: the bucket is full 500 ms after, the lease's floor has
  // refilled 300 ms + 4 * 100 ms after now.
  EXPECT_EQ(LeaseTokenBucket(limit, state, kT0, 1, 100, 300 * kMs),
            Granted(Allowed(10, 5, 700 * kMs), 4, kT0 + 300 * kMs));
  EXPECT_EQ(state, (TokenBucketState{.deficit = 5 * kSec,
                                     .updated_us = kT0,
                                     .leases = {{.ends_us = kT0 + 300 * kMs, .granted = 4}}}));
}

// Verifies the floors: while the lease runs the bucket refills only up to C - G, and when it ends
// the deficit it held up refills at the usual rate rather than all at once.
TEST(LeaseTokenBucket, FloorsHoldBackRefillAndReleaseItAtTheRefillRate) {
  const Limit limit = Bucket(Algorithm::kTokenBucket);
  TokenBucketState state;
  ASSERT_EQ(LeaseTokenBucket(limit, state, kT0, 1, 100, 300 * kMs).granted, 4);
  const TokenBucketState granted = state;
  // 250 ms refill 2.5 tokens (5 + 2 = 7 left), but 4 are out in the lease: 6.
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 250 * kMs, 0), Allowed(10, 6, 450 * kMs));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 300 * kMs, 0), Allowed(10, 6, 400 * kMs));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 400 * kMs, 0), Allowed(10, 7, 300 * kMs));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 700 * kMs, 0), Allowed(10, 10, 0));
  EXPECT_EQ(state, granted);  // peeks write nothing
  // A denial waits for the later of the refill (100 ms) and the floor (ends + 100 ms).
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 100 * kMs, 7),
            Denied(10, 6, 600 * kMs, 300 * kMs));
  EXPECT_FALSE(DecideTokenBucket(limit, state, kT0 + 400 * kMs - 1, 7).allowed);
  TokenBucketState admitted = state;
  EXPECT_TRUE(DecideTokenBucket(limit, admitted, kT0 + 400 * kMs, 7).allowed);
  // That admission wrote the state: the ended entry is dropped, its floor is in the deficit.
  EXPECT_EQ(admitted, (TokenBucketState{.deficit = 10 * kSec, .updated_us = kT0 + 400 * kMs}));
}

TEST(LeaseTokenBucket, GrantsNothingWhenTheRecordIsFull) {
  const Limit limit = MakeLimit(Algorithm::kTokenBucket, 1000, 1000);
  TokenBucketState state;
  for (size_t i = 0; i < kMaxLeaseEntries; ++i) {
    ASSERT_EQ(
        LeaseTokenBucket(limit, state, kT0 + static_cast<int64_t>(i), 0, 1, 500 * kMs).granted, 1);
  }
  EXPECT_EQ(LeaseTokenBucket(limit, state, kT0 + kMs, 1, 1, 500 * kMs).granted, 0);
  EXPECT_EQ(state.leases.size(), kMaxLeaseEntries);
  // Once the first has ended there is room again, and the ended one is dropped.
  EXPECT_EQ(LeaseTokenBucket(limit, state, kT0 + 500 * kMs, 1, 1, 500 * kMs).granted, 1);
  EXPECT_EQ(state.leases.size(), kMaxLeaseEntries);
  EXPECT_EQ(state.leases.back().ends_us, kT0 + kSec);
}

TEST(LeaseTokenBucket, RefundGivesTokensBackAndKeepsWhatIsStillLeased) {
  const Limit limit = Bucket(Algorithm::kTokenBucket);
  TokenBucketState state;
  const LeaseDecision d = LeaseTokenBucket(limit, state, kT0, 1, 100, 300 * kMs);
  const GrantedLease lease{.ends_us = d.ends_us, .granted = d.granted};
  // Not this lease: nothing changes.
  const TokenBucketState before = state;
  EXPECT_EQ(RefundTokenBucket(limit, state, kT0 + 100 * kMs, {d.ends_us, 3}, 1), 0);
  EXPECT_EQ(RefundTokenBucket(limit, state, kT0 + 100 * kMs, {d.ends_us + 1, 4}, 1), 0);
  EXPECT_EQ(state, before);
  // At 100 ms the deficit a check sees is 4 tokens (the floor); 3 go back, and the record keeps
  // the unit the holder may still spend.
  EXPECT_EQ(RefundTokenBucket(limit, state, kT0 + 100 * kMs, lease, 3), 3);
  EXPECT_EQ(state, (TokenBucketState{.deficit = 1 * kSec,
                                     .updated_us = kT0 + 100 * kMs,
                                     .leases = {{.ends_us = d.ends_us, .granted = 1}}}));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 100 * kMs, 0), Allowed(10, 9, 300 * kMs));
  // The lease is now named by what the record holds of it; a resend of the first refund finds
  // nothing.
  EXPECT_EQ(RefundTokenBucket(limit, state, kT0 + 100 * kMs, lease, 3), 0);
  EXPECT_EQ(RefundTokenBucket(limit, state, kT0 + 100 * kMs, {d.ends_us, 1}, 1), 1);
  EXPECT_EQ(state, (TokenBucketState{.deficit = 0, .updated_us = kT0 + 100 * kMs}));
  EXPECT_EQ(DecideTokenBucket(limit, state, kT0 + 100 * kMs, 0), Allowed(10, 10, 0));
}

TEST(LeaseTokenBucket, RefundOfAnEndedLeaseGivesNothing) {
  const Limit limit = Bucket(Algorithm::kTokenBucket);
  TokenBucketState state;
  const LeaseDecision d = LeaseTokenBucket(limit, state, kT0, 1, 100, 300 * kMs);
  const TokenBucketState before = state;
  EXPECT_EQ(RefundTokenBucket(limit, state, d.ends_us, {d.ends_us, d.granted}, 1), 0);
  EXPECT_EQ(state, before);
}

TEST(LeaseGcra, MatchesTheTokenBucketOnTheWorkedExample) {
  const Limit limit = Bucket(Algorithm::kGcra);
  GcraState state;
  EXPECT_EQ(LeaseGcra(limit, state, kT0, 1, 100, 300 * kMs),
            Granted(Allowed(10, 5, 700 * kMs), 4, kT0 + 300 * kMs));
  EXPECT_EQ(state.tat_us, kT0 + 500 * kMs);
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 250 * kMs, 0), Allowed(10, 6, 450 * kMs));
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 400 * kMs, 0), Allowed(10, 7, 300 * kMs));
  EXPECT_EQ(DecideGcra(limit, state, kT0 + 100 * kMs, 7), Denied(10, 6, 600 * kMs, 300 * kMs));
  EXPECT_EQ(RefundGcra(limit, state, kT0 + 100 * kMs, {kT0 + 300 * kMs, 4}, 3), 3);
  EXPECT_EQ(state, (GcraState{.tat_us = kT0 + 200 * kMs,
                              .tat_frac = 0,
                              .leases = {{.ends_us = kT0 + 300 * kMs, .granted = 1}}}));
}

// Verifies GCRA's pair arithmetic with a fraction: 3 per second, so T = 333333 + 1/3 us.
TEST(LeaseGcra, RefundBorrowsForTheFraction) {
  const Limit limit = MakeLimit(Algorithm::kGcra, 3, 1000, 6);
  GcraState state;
  const LeaseDecision d = LeaseGcra(limit, state, kT0, 1, 2, 500 * kMs);
  ASSERT_EQ(d.granted, 2);  // R = 5
  // TAT = now + 3T = now + 1 s exactly.
  EXPECT_EQ(state.tat_us, kT0 + kSec);
  EXPECT_EQ(state.tat_frac, 0);
  EXPECT_EQ(RefundGcra(limit, state, kT0, {d.ends_us, d.granted}, 1), 1);
  EXPECT_EQ(state, (GcraState{.tat_us = kT0 + 666'666,
                              .tat_frac = 2,
                              .leases = {{.ends_us = d.ends_us, .granted = 1}}}));
}

// ---------------------------------------------------------------------------------------------
// Random sequences of grants, refunds and checks on one state.

template <typename State>
using LeaseFn = LeaseDecision (*)(const Limit&, State&, int64_t, int64_t, int64_t, int64_t);
template <typename State>
using RefundFn = int64_t (*)(const Limit&, State&, int64_t, GrantedLease, int64_t);

template <typename State>
size_t RunningEntriesOf(const State& state, int64_t now) {
  if constexpr (requires { state.leases; }) {
    return static_cast<size_t>(
        std::count_if(state.leases.begin(), state.leases.end(),
                      [now](const LeaseEntry& e) { return e.ends_us > now; }));
  } else {
    return 0;
  }
}

// Verifies, on random sequences (time going backwards included), that every decision on a state
// with leases keeps the Decision contract (algorithm_testing.h), that grants follow the rule, and
// that refunds give back at most what was asked and nothing once a lease has ended.
template <typename State>
void CheckLeaseSequences(Algorithm algorithm, algorithm_testing::DecideFn<State> decide,
                         LeaseFn<State> lease, RefundFn<State> refund, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int run = 0; run < 120; ++run) {
    const Limit limit = algorithm_testing::RandomLimit(algorithm, rng);
    const int64_t period = limit.period.count();
    const int64_t capacity = limit.Capacity();
    State state;
    std::vector<GrantedLease> leases;
    int64_t now = kT0 + std::uniform_int_distribution<int64_t>(0, period)(rng);
    for (int step = 0; step < 150; ++step) {
      now = algorithm_testing::NextNow(now, period, rng);
      const int op = std::uniform_int_distribution<int>(0, 9)(rng);
      SCOPED_TRACE(absl::StrCat(Describe(limit), " run ", run, " step ", step, " op ", op,
                                ": now = T0 + ", now - kT0));
      if (op < 3) {
        const int64_t cost = algorithm_testing::RandomCost(capacity, rng);
        const int64_t want = std::uniform_int_distribution<int64_t>(0, 2 * capacity)(rng);
        const int64_t ttl = std::uniform_int_distribution<int64_t>(0, 2 * period)(rng);
        const size_t running = RunningEntriesOf(state, now);
        State exact = state;
        const Decision expected = decide(limit, exact, now, cost);
        const LeaseDecision d = lease(limit, state, now, cost, want, ttl);
        ASSERT_EQ(d.decision.allowed, expected.allowed);
        if (d.granted == 0) {
          ASSERT_EQ(d.decision, expected);
          ASSERT_EQ(d.ends_us, 0);
          ASSERT_TRUE(state == exact);
          // Nothing granted only when nothing could be, or the record was full.
          if (expected.allowed && want > 0 && running < kMaxLeaseEntries) {
            ASSERT_LT(expected.remaining, 2);
          }
          continue;
        }
        ASSERT_TRUE(expected.allowed);
        ASSERT_EQ(d.granted, std::min(want, expected.remaining / 2));
        ASSERT_EQ(d.decision.remaining, expected.remaining - d.granted);
        State peek = state;
        ASSERT_EQ(d.decision, decide(limit, peek, now, 0));
        if (algorithm == Algorithm::kFixedWindow || algorithm == Algorithm::kSlidingWindow) {
          ASSERT_GT(d.ends_us, now);
          ASSERT_EQ(d.ends_us % period, 0);
        } else {
          ASSERT_EQ(d.ends_us, now + ClampLeaseTtl(ttl, period));
        }
        leases.push_back({.ends_us = d.ends_us, .granted = d.granted});
      } else if (op < 4 && !leases.empty()) {
        const GrantedLease l =
            leases[std::uniform_int_distribution<size_t>(0, leases.size() - 1)(rng)];
        const int64_t unspent = std::uniform_int_distribution<int64_t>(1, l.granted)(rng);
        const State before = state;
        const int64_t given = refund(limit, state, now, l, unspent);
        ASSERT_GE(given, 0);
        ASSERT_LE(given, unspent);
        if (now >= l.ends_us || given == 0) {
          ASSERT_EQ(given, 0);
          ASSERT_TRUE(state == before);
        }
      } else {
        algorithm_testing::CheckOneDecision(algorithm, limit, state, now,
                                            algorithm_testing::RandomCost(capacity, rng), decide,
                                            rng);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(LeaseSequences, FixedWindow) {
  CheckLeaseSequences<FixedWindowState>(Algorithm::kFixedWindow, &DecideFixedWindow,
                                        &LeaseFixedWindow, &RefundFixedWindow, 11);
}

TEST(LeaseSequences, SlidingWindow) {
  CheckLeaseSequences<SlidingWindowState>(Algorithm::kSlidingWindow, &DecideSlidingWindow,
                                          &LeaseSlidingWindow, &RefundSlidingWindow, 12);
}

TEST(LeaseSequences, SlidingLog) {
  CheckLeaseSequences<SlidingLogState>(Algorithm::kSlidingLog, &DecideSlidingLog, &LeaseSlidingLog,
                                       &RefundSlidingLog, 13);
}

TEST(LeaseSequences, TokenBucket) {
  CheckLeaseSequences<TokenBucketState>(Algorithm::kTokenBucket, &DecideTokenBucket,
                                        &LeaseTokenBucket, &RefundTokenBucket, 14);
}

TEST(LeaseSequences, Gcra) {
  CheckLeaseSequences<GcraState>(Algorithm::kGcra, &DecideGcra, &LeaseGcra, &RefundGcra, 15);
}

// Verifies that the token bucket and GCRA stay equivalent with leases and refunds, while time
// never goes backwards (docs/algorithms.md, "The lease record", "Equivalence").
TEST(LeaseSequences, TokenBucketAndGcraStayEquivalent) {
  std::mt19937_64 rng(16);
  for (int run = 0; run < 200; ++run) {
    const Limit bucket = algorithm_testing::RandomLimit(Algorithm::kTokenBucket, rng);
    Limit gcra = bucket;
    gcra.algorithm = Algorithm::kGcra;
    const int64_t period = bucket.period.count();
    TokenBucketState tb;
    GcraState gc;
    std::vector<GrantedLease> leases;
    int64_t now = kT0;
    for (int step = 0; step < 150; ++step) {
      now += std::uniform_int_distribution<int64_t>(0, period / 3)(rng);
      const int64_t cost = algorithm_testing::RandomCost(bucket.Capacity(), rng);
      SCOPED_TRACE(absl::StrCat(Describe(bucket), " run ", run, " step ", step));
      const int op = std::uniform_int_distribution<int>(0, 3)(rng);
      if (op == 0 && !leases.empty()) {
        const GrantedLease l =
            leases[std::uniform_int_distribution<size_t>(0, leases.size() - 1)(rng)];
        const int64_t unspent = std::uniform_int_distribution<int64_t>(1, l.granted)(rng);
        ASSERT_EQ(RefundTokenBucket(bucket, tb, now, l, unspent),
                  RefundGcra(gcra, gc, now, l, unspent));
      } else if (op == 1) {
        ASSERT_EQ(DecideTokenBucket(bucket, tb, now, cost), DecideGcra(gcra, gc, now, cost));
      } else {
        const int64_t want = std::uniform_int_distribution<int64_t>(0, bucket.Capacity())(rng);
        const int64_t ttl = std::uniform_int_distribution<int64_t>(0, period)(rng);
        const LeaseDecision d = LeaseTokenBucket(bucket, tb, now, cost, want, ttl);
        ASSERT_EQ(d, LeaseGcra(gcra, gc, now, cost, want, ttl));
        if (d.granted > 0) leases.push_back({.ends_us = d.ends_us, .granted = d.granted});
      }
      ASSERT_EQ(tb.leases, gc.leases);
    }
  }
}

}  // namespace
}  // namespace sluice::algorithm
