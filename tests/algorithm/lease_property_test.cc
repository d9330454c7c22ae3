// The exactness of leases (docs/algorithms.md, "The guarantee, per algorithm"), on simulations:
// N instances take leases from one state through the C++ reference and spend their units at
// random times before the leases end, while exact checks (want 0) and refunds are interleaved.
// Every unit is logged at the time it is really spent, and each algorithm's exact-mode bound is
// checked over every window or interval of that log:
//   fixed_window     every aligned window admits at most L;
//   sliding_window   the same, and at every spend t: previous * (P_ms - e_ms(t)) + (spent in this
//                    window up to t) * P_ms <= L * P_ms, the test every exact admission passes;
//   sliding_log      every interval (a, a + P] admits at most L;
//   token_bucket,    every interval [a, b] admits at most C + floor(L * (b - a) / P).
//   gcra
// Time never goes backwards here (a backward step weakens exact mode too).
//
// So that a passing run means something, the same simulations run against deliberately wrong
// rules (log entries at `now`, the bucket's floor read at `now` only, no floor, a window lease
// outliving its window), and the checks must catch each of them.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/lease.h"
#include "src/algorithm/math_internal.h"
#include "tests/algorithm/algorithm_testing.h"

namespace sluice::algorithm {
namespace {

using algorithm_testing::kMs;
using algorithm_testing::kT0;
using algorithm_testing::MakeLimit;

template <typename State>
using LeaseFn = LeaseDecision (*)(const Limit&, State&, int64_t, int64_t, int64_t, int64_t);
template <typename State>
using RefundFn = int64_t (*)(const Limit&, State&, int64_t, GrantedLease, int64_t);

// Units spent (admitted by the store or spent from a lease) at one time.
struct Spend {
  int64_t t;
  int64_t units;
};

// One state behind the calls of every instance, as the store's atomic script sees it.
struct Rules {
  std::function<LeaseDecision(int64_t now, int64_t cost, int64_t want, int64_t ttl)> lease;
  std::function<int64_t(int64_t now, GrantedLease lease, int64_t unspent)> refund;
};

// The reference's rules on a fresh state of `limit`'s algorithm.
Rules ReferenceRules(const Limit& limit) {
  const auto make = [&limit](auto state, auto lease, auto refund) {
    auto s = std::make_shared<decltype(state)>();
    return Rules{
        .lease = [limit, s, lease](int64_t now, int64_t cost, int64_t want,
                                   int64_t ttl) { return lease(limit, *s, now, cost, want, ttl); },
        .refund = [limit, s, refund](
                      int64_t now, GrantedLease l,
                      int64_t unspent) { return refund(limit, *s, now, l, unspent); }};
  };
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      return make(FixedWindowState{}, &LeaseFixedWindow, &RefundFixedWindow);
    case Algorithm::kSlidingWindow:
      return make(SlidingWindowState{}, &LeaseSlidingWindow, &RefundSlidingWindow);
    case Algorithm::kSlidingLog:
      return make(SlidingLogState{}, &LeaseSlidingLog, &RefundSlidingLog);
    case Algorithm::kTokenBucket:
      return make(TokenBucketState{}, &LeaseTokenBucket, &RefundTokenBucket);
    case Algorithm::kGcra:
      return make(GcraState{}, &LeaseGcra, &RefundGcra);
  }
  return {};
}

// What one instance holds of its current lease.
struct Held {
  GrantedLease lease;
  int64_t left = 0;
};

// Runs `events` random events of `instances` instances against `rules`; returns the spends in
// time order.
std::vector<Spend> Simulate(const Limit& limit, const Rules& rules, uint64_t seed,
                            int instances = 4, int events = 3000) {
  std::mt19937_64 rng(seed);
  const auto uniform = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t period = limit.period.count();
  const int64_t interval = std::max<int64_t>(1, period / limit.limit);  // about one unit's refill
  std::vector<Held> held(static_cast<size_t>(instances));
  std::vector<Spend> spends;
  const auto spend = [&spends](int64_t t, int64_t units) {
    if (units > 0) spends.push_back({t, units});
  };
  const auto live = [&](const Held& h, int64_t now) { return h.left > 0 && now < h.lease.ends_us; };
  int64_t now = kT0 + uniform(0, period);
  for (int event = 0; event < events; ++event) {
    Held& h = held[static_cast<size_t>(uniform(0, instances - 1))];
    // Time: mostly a few units' refill; now and then idle for a while (the bucket refills behind
    // the leases), or just before a lease's end (its units spent at the last moment).
    // Or not at all: a rush of requests in one instant, which drains what a check can see.
    switch (uniform(0, 19)) {
      case 0:
        now += uniform(period / 2, 2 * period);
        break;
      case 1:
      case 2:
        if (live(h, now)) now = std::max(now, h.lease.ends_us - uniform(1, 3));
        break;
      case 3:
      case 4:
      case 5:
        break;
      default:
        now += uniform(0, 2 * interval);
        break;
    }
    const int64_t cost = uniform(0, 9) == 0 ? uniform(2, 3) : 1;
    switch (uniform(0, 9)) {
      case 0: {  // An exact client.
        if (rules.lease(now, cost, 0, 0).decision.allowed) spend(now, cost);
        break;
      }
      case 1: {  // Give back part of what is left.
        if (!live(h, now)) break;
        // A lease is named as the store now records it: less what earlier refunds gave back.
        const int64_t unspent = uniform(1, h.left);
        h.lease.granted -= rules.refund(now, h.lease, unspent);
        h.left -= unspent;
        break;
      }
      case 2: {  // Spend everything left at once.
        if (!live(h, now)) break;
        spend(now, h.left);
        h.left = 0;
        break;
      }
      default: {  // A request: from the lease if it has enough, else from the store.
        if (live(h, now) && h.left >= cost) {
          spend(now, cost);
          h.left -= cost;
          break;
        }
        // What is left too little for this request is given back or stranded.
        if (live(h, now) && uniform(0, 1) == 0) {
          rules.refund(now, h.lease, h.left);
          h.left = 0;
        }
        const int64_t want = uniform(0, 3) == 0 ? 0 : uniform(1, 2 * limit.limit);
        const int64_t ttl = uniform(0, 5) == 0 ? uniform(0, 2 * period) : uniform(kMs, period);
        const LeaseDecision d = rules.lease(now, cost, want, ttl);
        if (!d.decision.allowed) break;
        spend(now, cost);
        if (d.granted > 0) {
          h = Held{.lease = {.ends_us = d.ends_us, .granted = d.granted}, .left = d.granted};
        }
        break;
      }
    }
  }
  return spends;
}

// The first violation of `limit`'s exact-mode bound in `spends` (time order), or "".
std::string Violation(const Limit& limit, const std::vector<Spend>& spends) {
  const int64_t l = limit.limit;
  const int64_t period = limit.period.count();
  const size_t n = spends.size();
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
    case Algorithm::kSlidingWindow: {
      const int64_t p_ms = period / 1000;
      int64_t window = -1;
      int64_t current = 0;
      int64_t previous = 0;
      for (size_t i = 0; i < n; ++i) {
        const int64_t w = internal::AlignDown(spends[i].t, period);
        if (w != window) {
          previous = w == window + period ? current : 0;
          current = 0;
          window = w;
        }
        current += spends[i].units;
        if (current > l) {
          return absl::StrCat(current, " spent in the window at T0 + ", window - kT0);
        }
        // Every spend at this time is in `current` once the last of them is.
        if (limit.algorithm == Algorithm::kSlidingWindow &&
            (i + 1 == n || spends[i + 1].t != spends[i].t)) {
          const int64_t e_ms = (spends[i].t - window) / 1000;
          if (previous * (p_ms - e_ms) + current * p_ms > l * p_ms) {
            return absl::StrCat("weighted ", previous, " * (", p_ms, " - ", e_ms, ") + ", current,
                                " * ", p_ms, " > ", l, " * ", p_ms, " at T0 + ", spends[i].t - kT0);
          }
        }
      }
      return "";
    }
    case Algorithm::kSlidingLog: {
      // Windows (a, a + P] starting just before a spend: [t_i, t_i + P).
      int64_t in_window = 0;
      size_t j = 0;
      for (size_t i = 0; i < n; ++i) {
        while (j < n && spends[j].t < spends[i].t + period) in_window += spends[j++].units;
        if (in_window > l) {
          return absl::StrCat(in_window, " spent in [T0 + ", spends[i].t - kT0, ", +P)");
        }
        in_window -= spends[i].units;
      }
      return "";
    }
    case Algorithm::kTokenBucket:
    case Algorithm::kGcra: {
      const int64_t capacity = limit.Capacity();
      int64_t total = 0;
      for (const Spend& s : spends) total += s.units;
      int64_t before_i = 0;
      for (size_t i = 0; i < n; ++i) {
        int64_t sum = 0;
        for (size_t j = i; j < n; ++j) {
          sum += spends[j].units;
          const int64_t bound = capacity + l * (spends[j].t - spends[i].t) / period;
          if (sum > bound) {
            return absl::StrCat(sum, " spent in [T0 + ", spends[i].t - kT0, ", T0 + ",
                                spends[j].t - kT0, "], bound ", bound);
          }
          if (bound >= total - before_i) break;  // no later j can exceed it
        }
        before_i += spends[i].units;
      }
      return "";
    }
  }
  return "unknown algorithm";
}

// The limits the simulations run: small quotas so that windows fill, periods of 10 ms to 1 s,
// bursts below and above the rate.
std::vector<Limit> Limits(Algorithm algorithm) {
  std::vector<Limit> limits;
  for (const int64_t period_ms : {10, 100, 1000}) {
    for (const int64_t l : {4, 10, 40}) {
      std::optional<int64_t> burst;
      if (algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) {
        burst = period_ms == 100 ? l / 2 : (period_ms == 1000 ? 2 * l : l);
      }
      limits.push_back(MakeLimit(algorithm, l, period_ms, burst));
    }
  }
  return limits;
}

// Simulations per limit.
constexpr uint64_t kSeeds = 5;

// Runs every limit of `algorithm` with kSeeds seeds against `make_rules`; returns the violations.
std::vector<std::string> Violations(Algorithm algorithm,
                                    const std::function<Rules(const Limit&)>& make_rules) {
  std::vector<std::string> found;
  for (const Limit& limit : Limits(algorithm)) {
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      const std::vector<Spend> spends = Simulate(limit, make_rules(limit), seed);
      if (std::string v = Violation(limit, spends); !v.empty()) {
        found.push_back(absl::StrCat(Describe(limit), " seed ", seed, ": ", v));
      }
    }
  }
  return found;
}

class LeaseExactness : public ::testing::TestWithParam<Algorithm> {};

TEST_P(LeaseExactness, SpendsStayWithinTheExactModeBound) {
  int64_t spent = 0;
  int64_t from_leases = 0;
  for (const Limit& limit : Limits(GetParam())) {
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      // Count what the leases carried, so that the test cannot pass by granting nothing.
      Rules rules = ReferenceRules(limit);
      auto granted = std::make_shared<int64_t>(0);
      Rules counting{.lease =
                         [rules, granted](int64_t now, int64_t cost, int64_t want, int64_t ttl) {
                           const LeaseDecision d = rules.lease(now, cost, want, ttl);
                           *granted += d.granted;
                           return d;
                         },
                     .refund = rules.refund};
      const std::vector<Spend> spends = Simulate(limit, counting, seed);
      for (const Spend& s : spends) spent += s.units;
      from_leases += *granted;
      EXPECT_EQ(Violation(limit, spends), "") << Describe(limit) << " seed " << seed;
    }
  }
  EXPECT_GT(from_leases, spent / 4) << "the simulations hardly used leases";
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LeaseExactness,
                         ::testing::Values(Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                           Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                           Algorithm::kGcra),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           std::string name(AlgorithmName(info.param));
                           name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
                           return name;
                         });

// ---------------------------------------------------------------------------------------------
// Deliberately wrong rules, which the checks must catch.

// A window lease that outlives its window by one period.
Rules LeaseOutlivesItsWindow(const Limit& limit) {
  Rules rules = ReferenceRules(limit);
  const int64_t period = limit.period.count();
  return Rules{.lease =
                   [rules, period](int64_t now, int64_t cost, int64_t want, int64_t ttl) {
                     LeaseDecision d = rules.lease(now, cost, want, ttl);
                     if (d.granted > 0) d.ends_us += period;
                     return d;
                   },
               .refund = rules.refund};
}

TEST(LeaseExactnessCheck, CatchesAWindowLeaseOutlivingItsWindow) {
  EXPECT_FALSE(Violations(Algorithm::kFixedWindow, &LeaseOutlivesItsWindow).empty());
  EXPECT_FALSE(Violations(Algorithm::kSlidingWindow, &LeaseOutlivesItsWindow).empty());
}

// The sliding log recording leased units at `now`, as an exact admission would.
Rules LogEntriesAtNow(const Limit& limit) {
  auto state = std::make_shared<SlidingLogState>();
  return Rules{.lease =
                   [limit, state](int64_t now, int64_t cost, int64_t want, int64_t ttl) {
                     const LeaseDecision d = LeaseSlidingLog(limit, *state, now, cost, want, ttl);
                     auto& entries = state->entries_us;
                     for (int64_t i = 0; i < d.granted; ++i) {
                       entries.erase(std::lower_bound(entries.begin(), entries.end(), d.ends_us));
                       entries.insert(std::upper_bound(entries.begin(), entries.end(), now), now);
                     }
                     return d;
                   },
               .refund =
                   [limit, state](int64_t now, GrantedLease l, int64_t unspent) {
                     return RefundSlidingLog(limit, *state, now, l, unspent);
                   }};
}

TEST(LeaseExactnessCheck, CatchesLogEntriesRecordedAtNow) {
  EXPECT_FALSE(Violations(Algorithm::kSlidingLog, &LogEntriesAtNow).empty());
}

// The bucket's lease record kept, but only the running leases' floor applied: an ended lease's
// floor vanishes at once (the record is pruned before every call).
template <typename State>
Rules FloorAtNowOnly(const Limit& limit, LeaseFn<State> lease, RefundFn<State> refund) {
  auto state = std::make_shared<State>();
  const auto prune = [state](int64_t now) {
    std::erase_if(state->leases, [now](const LeaseEntry& e) { return e.ends_us <= now; });
  };
  return Rules{
      .lease =
          [limit, state, prune, lease](int64_t now, int64_t cost, int64_t want, int64_t ttl) {
            prune(now);
            return lease(limit, *state, now, cost, want, ttl);
          },
      .refund =
          [limit, state, prune, refund](int64_t now, GrantedLease l, int64_t unspent) {
            prune(now);
            return refund(limit, *state, now, l, unspent);
          }};
}

// No floor at all: the record is dropped after every call.
template <typename State>
Rules NoFloor(const Limit& limit, LeaseFn<State> lease, RefundFn<State> refund) {
  auto state = std::make_shared<State>();
  return Rules{.lease =
                   [limit, state, lease](int64_t now, int64_t cost, int64_t want, int64_t ttl) {
                     const LeaseDecision d = lease(limit, *state, now, cost, want, ttl);
                     state->leases.clear();
                     return d;
                   },
               .refund = [limit, state, refund](
                             int64_t now, GrantedLease l,
                             int64_t unspent) { return refund(limit, *state, now, l, unspent); }};
}

TEST(LeaseExactnessCheck, CatchesABucketFloorReadAtNowOnly) {
  EXPECT_FALSE(Violations(Algorithm::kTokenBucket, [](const Limit& limit) {
                 return FloorAtNowOnly<TokenBucketState>(limit, &LeaseTokenBucket,
                                                         &RefundTokenBucket);
               }).empty());
  EXPECT_FALSE(Violations(Algorithm::kGcra, [](const Limit& limit) {
                 return FloorAtNowOnly<GcraState>(limit, &LeaseGcra, &RefundGcra);
               }).empty());
}

TEST(LeaseExactnessCheck, CatchesABucketWithoutFloor) {
  EXPECT_FALSE(Violations(Algorithm::kTokenBucket, [](const Limit& limit) {
                 return NoFloor<TokenBucketState>(limit, &LeaseTokenBucket, &RefundTokenBucket);
               }).empty());
  EXPECT_FALSE(Violations(Algorithm::kGcra, [](const Limit& limit) {
                 return NoFloor<GcraState>(limit, &LeaseGcra, &RefundGcra);
               }).empty());
}

// A refund that ends the whole lease in the record although its holder may still spend the units
// it did not give back.
template <typename State>
Rules RefundDropsTheLease(const Limit& limit, LeaseFn<State> lease, RefundFn<State> refund) {
  auto state = std::make_shared<State>();
  return Rules{.lease = [limit, state, lease](
                            int64_t now, int64_t cost, int64_t want,
                            int64_t ttl) { return lease(limit, *state, now, cost, want, ttl); },
               .refund =
                   [limit, state, refund](int64_t now, GrantedLease l, int64_t unspent) {
                     const int64_t given = refund(limit, *state, now, l, unspent);
                     std::erase_if(state->leases,
                                   [&l](const LeaseEntry& e) { return e.ends_us == l.ends_us; });
                     return given;
                   }};
}

TEST(LeaseExactnessCheck, CatchesARefundDroppingAStillSpendableLease) {
  EXPECT_FALSE(Violations(Algorithm::kTokenBucket, [](const Limit& limit) {
                 return RefundDropsTheLease<TokenBucketState>(limit, &LeaseTokenBucket,
                                                              &RefundTokenBucket);
               }).empty());
  EXPECT_FALSE(Violations(Algorithm::kGcra, [](const Limit& limit) {
                 return RefundDropsTheLease<GcraState>(limit, &LeaseGcra, &RefundGcra);
               }).empty());
}

}  // namespace
}  // namespace sluice::algorithm
