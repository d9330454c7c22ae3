// gcra: docs/algorithms.md, "gcra" and "The lease record".
#include <algorithm>
#include <cstdint>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/lease_record_internal.h"
#include "src/algorithm/math_internal.h"

namespace sluice::algorithm {

using internal::Admitted;
using internal::CeilDiv;
using internal::Denied;
using internal::ForEachWithUnits;
using internal::Never;
using internal::PlusUnits;
using internal::TatOffset;

// Overflow: the debt D = dt * rate + frac is never formed from an unbounded dt. After a backward
// time step dt is as long as the step, and an hour times rate = 2^32 - 1 is past 2^63. The
// comparisons and ceilings are done on (dt, frac) through the identities of docs/algorithms.md
// ("gcra"); D itself is formed only when it is at most B * P <= 2^50.
namespace {

class Tolerance {
 public:
  Tolerance(int64_t rate, int64_t burst, int64_t period)
      : rate_(rate), period_(period), full_(burst * period), q_(full_ / rate), r_(full_ % rate) {}

  // Whether D(x) <= B * P, i.e. x - now <= tau.
  bool Admits(TatOffset x) const { return x.dt < q_ || (x.dt == q_ && x.frac <= r_); }

  // (B * P - D(x)) div P, clamped at 0.
  int64_t Remaining(TatOffset x) const {
    return Admits(x) ? (full_ - (x.dt * rate_ + x.frac)) / period_ : 0;
  }

  // ceil(D(x) / rate): when the TAT reaches now.
  static int64_t ResetAfter(TatOffset x) { return x.dt + (x.frac > 0 ? 1 : 0); }

  // ceil((D(x) - B * P) / rate). REQUIRES: !Admits(x).
  int64_t RetryAfter(TatOffset x) const { return x.dt - q_ + (x.frac > r_ ? 1 : 0); }

 private:
  int64_t rate_;
  int64_t period_;
  int64_t full_;  // B * P = q_ * rate + r_
  int64_t q_;
  int64_t r_;
};

}  // namespace

namespace internal {

TatOffset PlusUnits(TatOffset x, int64_t units, int64_t period, int64_t rate) {
  const int64_t increment = units * period;
  TatOffset next{.dt = x.dt + increment / rate, .frac = x.frac + increment % rate};
  if (next.frac >= rate) {
    next.frac -= rate;
    ++next.dt;
  }
  return next;
}

TatOffset MinusScaled(TatOffset x, int64_t scaled, int64_t rate) {
  TatOffset next{.dt = x.dt - scaled / rate, .frac = x.frac - scaled % rate};
  if (next.frac < 0) {
    next.frac += rate;
    --next.dt;
  }
  return next.dt < 0 ? TatOffset{.dt = 0, .frac = 0} : next;
}

GcraReading ReadGcra(const Limit& limit, const GcraState& state, int64_t now_us) {
  const int64_t rate = limit.limit;
  const int64_t burst = limit.Capacity();
  const int64_t period = limit.period.count();
  // A fraction >= rate was written under a larger limit: carry it so that 0 <= frac < rate holds.
  // It is below 2^32, so the carry is small.
  int64_t tat_us = state.tat_us + state.tat_frac / rate;
  int64_t tat_frac = state.tat_frac % rate;
  // tat = max(TAT, now). A TAT with tat_us == now and a fraction is still after now.
  if (tat_us < now_us) {
    tat_us = now_us;
    tat_frac = 0;
  }
  GcraReading r{
      .tat = {.dt = tat_us - now_us, .frac = tat_frac}, .floored = {}, .leases_reset_after = 0};
  int64_t running = 0;
  if (!state.leases.empty()) {
    running = RunningUnits(state.leases, burst, now_us);
    ForEachWithUnits(state.leases, burst, [&](const LeaseEntry& entry, int64_t units) {
      const int64_t increment = units * period;
      if (entry.ends_us <= now_us) {
        // The floor e_k + G_k * T of an ended lease, when it is still ahead of now.
        const int64_t ahead = entry.ends_us + increment / rate - now_us;
        if (ahead >= 0) r.tat = std::max(r.tat, TatOffset{.dt = ahead, .frac = increment % rate});
      } else {
        r.leases_reset_after =
            std::max(r.leases_reset_after, entry.ends_us - now_us + CeilDiv(increment, rate));
      }
    });
  }
  r.floored = std::max(r.tat, PlusUnits(TatOffset{.dt = 0, .frac = 0}, running, period, rate));
  return r;
}

}  // namespace internal

Decision DecideGcra(const Limit& limit, GcraState& state, int64_t now_us, int64_t cost) {
  const int64_t rate = limit.limit;
  const int64_t burst = limit.Capacity();
  const int64_t period = limit.period.count();
  const Tolerance tolerance(rate, burst, period);
  const internal::GcraReading r = internal::ReadGcra(limit, state, now_us);
  const auto reset_after = [&](TatOffset x) {
    return std::max(Tolerance::ResetAfter(x), r.leases_reset_after);
  };
  if (cost > burst) {
    return Never(burst, tolerance.Remaining(r.floored), reset_after(r.tat));
  }

  // new = tat + cost * T with T = period / rate, as q + r / rate; cost * period <= B * P <= 2^50.
  const TatOffset next = PlusUnits(r.floored, cost, period, rate);
  if (cost == 0 || tolerance.Admits(next)) {
    if (cost > 0) {
      state.tat_us = now_us + next.dt;
      state.tat_frac = next.frac;
      internal::PruneEnded(state.leases, now_us);
    }
    return Admitted(burst, tolerance.Remaining(next), reset_after(cost > 0 ? next : r.tat));
  }
  // Denied: the later of the wait on the TAT alone and the waits on the running leases' floors,
  // as in token_bucket.cc.
  const TatOffset unfloored = PlusUnits(r.tat, cost, period, rate);
  int64_t retry_after = tolerance.Admits(unfloored) ? 0 : tolerance.RetryAfter(unfloored);
  const int64_t room = (burst - cost) * period;
  ForEachWithUnits(state.leases, burst, [&](const LeaseEntry& entry, int64_t units) {
    if (entry.ends_us > now_us && units * period > room) {
      retry_after =
          std::max(retry_after, entry.ends_us - now_us + CeilDiv(units * period - room, rate));
    }
  });
  return Denied(burst, tolerance.Remaining(r.floored), reset_after(r.tat), retry_after);
}

Decision CreditGcra(const Limit& limit, GcraState& state, int64_t now_us, int64_t units) {
  const int64_t rate = limit.limit;
  const int64_t period = limit.period.count();
  const int64_t burst = limit.Capacity();
  const internal::GcraReading r = internal::ReadGcra(limit, state, now_us);
  const int64_t given = std::min(units, burst) * period;
  TatOffset tat{};
  if (r.floored.dt > 2 * (burst * period / rate) + 1) {
    // A debt above 2 * B * P (after a backward time step): never formed as one number, and the
    // credit cannot reach the running leases' floor (at most B * P), so it is the pair
    // tat_f - u' * T.
    tat = internal::MinusScaled(r.floored, given, rate);
  } else {
    // D(tat_f) <= 2 * B * P + 2 * rate < 2^52: as token_bucket.cc, on the debt.
    const int64_t debt = r.floored.dt * rate + r.floored.frac;
    const int64_t after =
        internal::CreditedScaled(state.leases, debt, units, burst, period, now_us);
    tat = {.dt = after / rate, .frac = after % rate};
  }
  if (tat < r.floored) {
    state.tat_us = now_us + tat.dt;
    state.tat_frac = tat.frac;
    internal::PruneEnded(state.leases, now_us);
  }
  return DecideGcra(limit, state, now_us, 0);
}

}  // namespace sluice::algorithm
