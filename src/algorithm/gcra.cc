// gcra: docs/algorithms.md, "gcra".
#include <cstdint>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/math_internal.h"

namespace sluice::algorithm {
namespace {

using internal::Admitted;
using internal::Denied;
using internal::Never;

// A TAT relative to now: tat - now = dt + frac / rate, with dt >= 0 and 0 <= frac < rate.
//
// Overflow: the debt D = dt * rate + frac is never formed from an unbounded dt. After a backward
// time step dt is as long as the step, and an hour times rate = 2^32 - 1 is past 2^63. The
// comparisons and ceilings are done on (dt, frac) through the identities of docs/algorithms.md
// ("gcra"); D itself is formed only when it is at most B * P <= 2^50.
struct Offset {
  int64_t dt;
  int64_t frac;
};

class Tolerance {
 public:
  Tolerance(int64_t rate, int64_t burst, int64_t period)
      : rate_(rate), period_(period), full_(burst * period), q_(full_ / rate), r_(full_ % rate) {}

  // Whether D(x) <= B * P, i.e. x - now <= tau.
  bool Admits(Offset x) const { return x.dt < q_ || (x.dt == q_ && x.frac <= r_); }

  // (B * P - D(x)) div P, clamped at 0.
  int64_t Remaining(Offset x) const {
    return Admits(x) ? (full_ - (x.dt * rate_ + x.frac)) / period_ : 0;
  }

  // ceil(D(x) / rate): when the TAT reaches now.
  static int64_t ResetAfter(Offset x) { return x.dt + (x.frac > 0 ? 1 : 0); }

  // ceil((D(x) - B * P) / rate). REQUIRES: !Admits(x).
  int64_t RetryAfter(Offset x) const { return x.dt - q_ + (x.frac > r_ ? 1 : 0); }

 private:
  int64_t rate_;
  int64_t period_;
  int64_t full_;  // B * P = q_ * rate + r_
  int64_t q_;
  int64_t r_;
};

}  // namespace

Decision DecideGcra(const Limit& limit, GcraState& state, int64_t now_us, int64_t cost) {
  const int64_t rate = limit.limit;
  const int64_t burst = limit.Capacity();
  const int64_t period = limit.period.count();
  const Tolerance tolerance(rate, burst, period);

  // A fraction >= rate was written under a larger limit: carry it so that 0 <= frac < rate holds.
  // It is below 2^32, so the carry is small.
  int64_t tat_us = state.tat_us + state.tat_frac / rate;
  int64_t tat_frac = state.tat_frac % rate;
  // tat = max(TAT, now). A TAT with tat_us == now and a fraction is still after now.
  if (tat_us < now_us) {
    tat_us = now_us;
    tat_frac = 0;
  }
  const Offset tat{.dt = tat_us - now_us, .frac = tat_frac};
  if (cost > burst) {
    return Never(burst, tolerance.Remaining(tat), Tolerance::ResetAfter(tat));
  }

  // new = tat + cost * T with T = period / rate, as q + r / rate; cost * period <= B * P <= 2^50.
  const int64_t increment = cost * period;
  Offset next{.dt = tat.dt + increment / rate, .frac = tat.frac + increment % rate};
  if (next.frac >= rate) {
    next.frac -= rate;
    ++next.dt;
  }
  if (cost == 0 || tolerance.Admits(next)) {
    if (cost > 0) {
      state = {.tat_us = now_us + next.dt, .tat_frac = next.frac};
    }
    return Admitted(burst, tolerance.Remaining(next), Tolerance::ResetAfter(next));
  }
  return Denied(burst, tolerance.Remaining(tat), Tolerance::ResetAfter(tat),
                tolerance.RetryAfter(next));
}

}  // namespace sluice::algorithm
