// fixed_window: docs/algorithms.md, "fixed_window".
#include <algorithm>
#include <cstdint>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/math_internal.h"

namespace sluice::algorithm {

using internal::Admitted;
using internal::AlignDown;
using internal::Denied;
using internal::Never;

Decision DecideFixedWindow(const Limit& limit, FixedWindowState& state, int64_t now_us,
                           int64_t cost) {
  const int64_t l = limit.limit;
  const int64_t period = limit.period.count();
  // After a backward time step `now` may fall before the recorded window; that window stays the
  // current one, so a step back never hands out a fresh quota.
  const int64_t window = AlignDown(std::max(now_us, state.window_start_us), period);
  const int64_t count = state.window_start_us < window ? 0 : state.count;
  // Positive, and larger than the period only after a backward step.
  const int64_t reset_after = window + period - now_us;

  // `count` <= 2^32 - 1 (it only grows by admitted cost under some limit <= kMaxLimit), so the sums
  // below stay far from overflow even with cost = kMaxCost. (A count written with count_rejected is
  // at most kFixedWindowCountCap = 2^50, as far from overflow.)
  if (cost > l) {
    return Never(l, std::max<int64_t>(0, l - count), reset_after);
  }
  if (cost == 0 || count + cost <= l) {
    if (cost > 0) {
      state = {.window_start_us = window, .count = count + cost};
    }
    return Admitted(l, std::max<int64_t>(0, l - count - cost), reset_after);
  }
  // The next window starts empty and cost <= l, so it admits the request.
  return Denied(l, std::max<int64_t>(0, l - count), reset_after, reset_after);
}

Decision DecideFixedWindowCounting(const Limit& limit, FixedWindowState& state, int64_t now_us,
                                   int64_t cost) {
  const int64_t l = limit.limit;
  const int64_t period = limit.period.count();
  // The window and reset exactly as DecideFixedWindow() finds them.
  const int64_t window = AlignDown(std::max(now_us, state.window_start_us), period);
  const int64_t count = state.window_start_us < window ? 0 : state.count;
  const int64_t reset_after = window + period - now_us;
  // The reference's counting: every hit is recorded, admitted or not, and the window is over once
  // the counter stands past the limit. The counter stops at kFixedWindowCountCap, far above any
  // limit, so that it cannot overflow and no decision changes.
  const int64_t after = std::min(count + cost, kFixedWindowCountCap);
  if (cost > 0) state = {.window_start_us = window, .count = after};
  if (after <= l) return Admitted(l, l - after, reset_after);
  // A denial reports the count it found, as every denial does, although it recorded its cost: the
  // reference's stats need the counter before the hits (how many of them went past the limit).
  const int64_t remaining = std::max<int64_t>(0, l - count);
  if (cost > l) return Never(l, remaining, reset_after);
  // The next window starts empty and cost <= l, so it admits the request.
  return Denied(l, remaining, reset_after, reset_after);
}

Decision CreditFixedWindow(const Limit& limit, FixedWindowState& state, int64_t now_us,
                           int64_t units) {
  const int64_t l = limit.limit;
  const int64_t period = limit.period.count();
  // The window a check would count in; a credit to an earlier window finds nothing to give back.
  const int64_t window = AlignDown(std::max(now_us, state.window_start_us), period);
  const int64_t count = state.window_start_us < window ? 0 : state.count;
  const int64_t after = count - std::min(units, count);
  if (after < count) state = {.window_start_us = window, .count = after};
  return Admitted(l, std::max<int64_t>(0, l - after), window + period - now_us);
}

}  // namespace sluice::algorithm
