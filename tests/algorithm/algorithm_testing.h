// Helpers shared by the algorithm tests: readable Decision output, limit builders, and the
// randomized invariant check every algorithm runs.
//
// The invariants are the Decision contract of docs/algorithms.md, checked on random sequences
// (including time going backwards) with a fixed seed, so a failure is reproducible:
//   - decision.limit is the capacity; 0 <= remaining <= capacity; reset_after >= 0;
//   - a peek is allowed, a cost above the capacity is denied with retry_after = kNever, an admitted
//     request has retry_after = 0 and a denied one 1 <= retry_after <= reset_after;
//   - only an admission with cost > 0 changes the state;
//   - `remaining`: that many cost-1 requests right after are admitted, and one more is denied;
//   - `retry_after`: the same request after exactly that wait is admitted, 1 us earlier denied;
//   - `reset_after`: from then on the state decides like no state (and, except for the fixed
//     window, whose reset_after is the window end, 1 us earlier it is not yet full).
//
// Thread safety: test-only helpers; not thread-safe.
#ifndef SLUICE_TESTS_ALGORITHM_ALGORITHM_TESTING_H_
#define SLUICE_TESTS_ALGORITHM_ALGORITHM_TESTING_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/math_internal.h"
#include "tests/testing/decision_printer.h"

namespace sluice::algorithm_testing {

// 1700000000 s since the epoch: a multiple of every period below a minute that divides 10 s.
inline constexpr int64_t kT0 = 1'700'000'000'000'000;
inline constexpr int64_t kMs = 1'000;
inline constexpr int64_t kSec = 1'000'000;

inline Limit MakeLimit(Algorithm algorithm, int64_t limit, int64_t period_ms,
                       std::optional<int64_t> burst = std::nullopt) {
  return Limit{.algorithm = algorithm,
               .limit = limit,
               .period = std::chrono::milliseconds(period_ms),
               .burst = burst};
}

// Expected decisions are built by the same plain constructors the algorithms use.
inline Decision Allowed(int64_t capacity, int64_t remaining, int64_t reset_after_us) {
  return algorithm::internal::Admitted(capacity, remaining, reset_after_us);
}
using algorithm::internal::Denied;

template <typename State>
using DecideFn = Decision (*)(const Limit&, State&, int64_t, int64_t);

// A random valid limit of `algorithm` with small quotas, so that sequences reach every branch.
inline Limit RandomLimit(Algorithm algorithm, std::mt19937_64& rng) {
  constexpr std::array<int64_t, 5> kPeriodsMs = {1, 3, 10, 1000, 7000};
  const int64_t period_ms =
      kPeriodsMs[std::uniform_int_distribution<size_t>(0, kPeriodsMs.size() - 1)(rng)];
  const int64_t limit = std::uniform_int_distribution<int64_t>(1, 12)(rng);
  std::optional<int64_t> burst;
  if ((algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) &&
      std::bernoulli_distribution(0.6)(rng)) {
    burst = std::uniform_int_distribution<int64_t>(1, 20)(rng);
  }
  return MakeLimit(algorithm, limit, period_ms, burst);
}

// The next time: mostly small steps forward (so windows fill), some idle gaps, and 10% steps back.
inline int64_t NextNow(int64_t now, int64_t period, std::mt19937_64& rng) {
  const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
  if (kind == 0) {
    return now;
  }
  if (kind == 1) {
    return now + std::uniform_int_distribution<int64_t>(0, 3 * period)(rng);
  }
  if (kind == 2) {
    return now - std::uniform_int_distribution<int64_t>(0, period)(rng);
  }
  return now + std::uniform_int_distribution<int64_t>(0, period / 4)(rng);
}

inline int64_t RandomCost(int64_t capacity, std::mt19937_64& rng) {
  const int kind = std::uniform_int_distribution<int>(0, 19)(rng);
  if (kind == 0) {
    return 0;
  }
  if (kind == 1) {
    return capacity + 1;
  }
  if (kind == 2) {
    return kMaxCost;
  }
  if (kind < 8) {
    return std::uniform_int_distribution<int64_t>(0, capacity)(rng);
  }
  return 1;
}

// Decides `cost` at `now` on `state` and checks the invariants above on that one decision, with
// probes on copies of the state. Used per step by CheckInvariantsOnRandomSequences() and by the
// lease tests (whose states carry lease records).
template <typename State, typename Decide>
void CheckOneDecision(Algorithm algorithm, const Limit& limit, State& state, int64_t now,
                      int64_t cost, Decide decide, std::mt19937_64& rng) {
  const int64_t capacity = limit.Capacity();
  const State before = state;
  const Decision d = decide(limit, state, now, cost);
  const int64_t reset_after = d.reset_after.count();
  const int64_t retry_after = d.retry_after.count();

  ASSERT_EQ(d.limit, capacity);
  ASSERT_GE(d.remaining, 0);
  ASSERT_LE(d.remaining, capacity);
  ASSERT_GE(reset_after, 0);
  ASSERT_FALSE(d.from_fallback);
  if (cost == 0) {
    ASSERT_TRUE(d.allowed);
  }
  if (cost > capacity) {
    ASSERT_FALSE(d.allowed);
    ASSERT_EQ(d.retry_after, Decision::kNever);
  } else if (d.allowed) {
    ASSERT_EQ(retry_after, 0);
  } else {
    ASSERT_GE(retry_after, 1);
    ASSERT_LE(retry_after, reset_after);
  }
  if (!d.allowed || cost == 0) {
    ASSERT_TRUE(state == before) << "state changed";
  }

  // remaining: exactly that many cost-1 requests pass right after this decision.
  {
    State probe = state;
    for (int64_t i = 0; i < d.remaining; ++i) {
      ASSERT_TRUE(decide(limit, probe, now, 1).allowed) << "request " << i << " of remaining";
    }
    ASSERT_FALSE(decide(limit, probe, now, 1).allowed) << "one beyond remaining";
  }
  // retry_after: waiting exactly that long admits the same request, 1 us less does not.
  if (!d.allowed && cost <= capacity) {
    State at_retry = state;
    ASSERT_TRUE(decide(limit, at_retry, now + retry_after, cost).allowed);
    State just_before = state;
    ASSERT_FALSE(decide(limit, just_before, now + retry_after - 1, cost).allowed);
  }
  // reset_after: from then on the state is equivalent to no state.
  {
    const int64_t cost_then = std::uniform_int_distribution<int64_t>(0, capacity)(rng);
    State at_reset = state;
    State fresh;
    ASSERT_EQ(decide(limit, at_reset, now + reset_after, cost_then),
              decide(limit, fresh, now + reset_after, cost_then));
    if (algorithm != Algorithm::kFixedWindow && reset_after > 0) {
      State just_before = state;
      ASSERT_LT(decide(limit, just_before, now + reset_after - 1, 0).remaining, capacity);
    }
  }
}

// Checks the invariants above on `runs` random limits of `algorithm`, `steps` decisions each.
template <typename State>
void CheckInvariantsOnRandomSequences(Algorithm algorithm, DecideFn<State> decide, uint64_t seed,
                                      int runs = 150, int steps = 120) {
  std::mt19937_64 rng(seed);
  for (int run = 0; run < runs; ++run) {
    const Limit limit = RandomLimit(algorithm, rng);
    ASSERT_TRUE(ValidateLimit(limit).ok()) << Describe(limit);
    const int64_t period = limit.period.count();
    const int64_t capacity = limit.Capacity();
    State state;
    int64_t now = kT0 + std::uniform_int_distribution<int64_t>(0, period)(rng);
    for (int step = 0; step < steps; ++step) {
      now = NextNow(now, period, rng);
      const int64_t cost = RandomCost(capacity, rng);
      SCOPED_TRACE(absl::StrCat(Describe(limit), " run ", run, " step ", step, ": now = T0 + ",
                                now - kT0, "us, cost ", cost));
      CheckOneDecision(algorithm, limit, state, now, cost, decide, rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

}  // namespace sluice::algorithm_testing

#endif  // SLUICE_TESTS_ALGORITHM_ALGORITHM_TESTING_H_
