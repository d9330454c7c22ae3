// sliding_window: docs/algorithms.md, "sliding_window".
#include <algorithm>
#include <cstdint>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/math_internal.h"

namespace sluice::algorithm {
namespace {

using internal::Admitted;
using internal::AlignDown;
using internal::Denied;
using internal::FloorDivNonNegative;
using internal::Never;

// The state rolled forward to the decision's window, with the quantities every formula shares.
//
// Overflow: `current` and `previous` are capped at `l` and every cost reaching the products is
// <= l, so each product below is at most l * p_ms <= 2^50 (ValidateLimit) and a sum of three of
// them is below 2^52.
struct Window {
  int64_t l;
  int64_t period;
  int64_t p_ms;
  int64_t start;    // W
  int64_t elapsed;  // a = now - W; negative only after a backward time step
  int64_t e_ms;     // whole ms elapsed in the window, clamped at 0
  int64_t current;
  int64_t previous;

  // U(x): the weighted count with `x` in the current window, scaled by p_ms.
  int64_t Used(int64_t x) const { return previous * (p_ms - e_ms) + x * p_ms; }

  int64_t Remaining(int64_t current_after) const {
    return FloorDivNonNegative(l * p_ms - Used(current_after), p_ms);
  }

  int64_t ResetAfter(int64_t current_after) const {
    if (current_after > 0) {
      return 2 * period - elapsed;
    }
    if (previous > 0) {
      return period - elapsed;
    }
    return 0;
  }

  // The wait until `cost` (1 <= cost <= l, denied now) would be admitted.
  int64_t RetryAfter(int64_t cost) const {
    // 1. Later in this window, as the previous window's weight decays one whole ms at a time: the
    //    first t_ms with previous * (p_ms - t_ms) <= (l - current - cost) * p_ms.
    if (current + cost <= l && previous > 0) {
      const int64_t t_ms = p_ms - (l - current - cost) * p_ms / previous;
      if (t_ms < p_ms) {
        return t_ms * 1000 - elapsed;
      }
    }
    // 2. In the next window, where `current` becomes the previous count. Step 1 can fail only
    //    because its t_ms reached p_ms, and then this t_ms may come out negative: the request
    //    passes right at the next window's start.
    const int64_t to_next_window = period - elapsed;
    if (current == 0) {
      return to_next_window;
    }
    const int64_t t_ms = std::max<int64_t>(0, p_ms - (l - cost) * p_ms / current);
    return to_next_window + t_ms * 1000;
  }
};

Window Roll(const Limit& limit, const SlidingWindowState& state, int64_t now_us) {
  const int64_t l = limit.limit;
  const int64_t period = limit.period.count();
  // As for the fixed window: a backward time step keeps the recorded window current.
  const int64_t start = AlignDown(std::max(now_us, state.window_start_us), period);
  const int64_t elapsed = now_us - start;
  // Counts above l exist only in a state written under a larger limit; capping them keeps the
  // products bounded and changes no decision of a state written under this limit.
  int64_t current = std::min(state.current, l);
  int64_t previous = std::min(state.previous, l);
  if (state.window_start_us >= start) {
    // The recorded window is this one.
  } else if (state.window_start_us >= start - period) {
    previous = current;
    current = 0;
  } else {
    previous = 0;
    current = 0;
  }
  return Window{.l = l,
                .period = period,
                .p_ms = period / 1000,
                .start = start,
                .elapsed = elapsed,
                .e_ms = std::max<int64_t>(0, elapsed) / 1000,
                .current = current,
                .previous = previous};
}

}  // namespace

Decision DecideSlidingWindow(const Limit& limit, SlidingWindowState& state, int64_t now_us,
                             int64_t cost) {
  const Window w = Roll(limit, state, now_us);
  if (cost > w.l) {
    return Never(w.l, w.Remaining(w.current), w.ResetAfter(w.current));
  }
  if (cost == 0 || w.Used(w.current + cost) <= w.l * w.p_ms) {
    const int64_t current_after = w.current + cost;
    if (cost > 0) {
      state = {.window_start_us = w.start, .current = current_after, .previous = w.previous};
    }
    return Admitted(w.l, w.Remaining(current_after), w.ResetAfter(current_after));
  }
  return Denied(w.l, w.Remaining(w.current), w.ResetAfter(w.current), w.RetryAfter(cost));
}

Decision CreditSlidingWindow(const Limit& limit, SlidingWindowState& state, int64_t now_us,
                             int64_t units) {
  const Window w = Roll(limit, state, now_us);
  // Only the current window's count goes down: the previous window's weight is what it spent.
  const int64_t current_after = w.current - std::min(units, w.current);
  if (current_after < w.current) {
    state = {.window_start_us = w.start, .current = current_after, .previous = w.previous};
  }
  return Admitted(w.l, w.Remaining(current_after), w.ResetAfter(current_after));
}

}  // namespace sluice::algorithm
