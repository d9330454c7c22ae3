// token_bucket: docs/algorithms.md, "token_bucket" and "The lease record".
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
using internal::FloorDivNonNegative;
using internal::ForEachWithUnits;
using internal::Never;

namespace internal {

// Overflow: a stored deficit is at most B * P <= 2^50 of the limit it was written under. Lease
// units are capped at B (lease_record_internal.h), so their products with the period are at most
// B * P too. The lag is a difference of two times below 2^52.
TokenBucketReading ReadTokenBucket(const Limit& limit, const TokenBucketState& state,
                                   int64_t now_us) {
  const int64_t rate = limit.limit;
  const int64_t burst = limit.Capacity();
  const int64_t period = limit.period.count();
  // While the clock is behind `updated` (time went backwards) the bucket does not refill, and every
  // wait starts when the clock catches up again.
  const int64_t t = std::max(now_us, state.updated_us);
  TokenBucketReading r{.t = t,
                       .lag = t - now_us,
                       .deficit = Refill(state.deficit, t - state.updated_us, rate),
                       .floored = 0,
                       .leases_reset_after = 0};
  int64_t running = 0;
  if (!state.leases.empty()) {
    running = RunningUnits(state.leases, burst, now_us);
    ForEachWithUnits(state.leases, burst, [&](const LeaseEntry& entry, int64_t units) {
      if (entry.ends_us <= now_us) {
        // An ended lease's floor goes on refilling from its end, not from `updated`.
        r.deficit = std::max(
            r.deficit, Refill(units * period, t - std::max(entry.ends_us, state.updated_us), rate));
      } else {
        r.leases_reset_after =
            std::max(r.leases_reset_after,
                     std::max(entry.ends_us, t) + CeilDiv(units * period, rate) - now_us);
      }
    });
  }
  r.floored = std::max(r.deficit, running * period);
  return r;
}

}  // namespace internal

// Overflow: every cost that reaches `cost * period` is <= B, so all sums below stay under 2^52.
Decision DecideTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                           int64_t cost) {
  const int64_t rate = limit.limit;
  const int64_t burst = limit.Capacity();
  const int64_t period = limit.period.count();
  const int64_t full = burst * period;
  const internal::TokenBucketReading r = internal::ReadTokenBucket(limit, state, now_us);
  // Time until the bucket is full again and every lease's floor has refilled, for the deficit `d`
  // stored (at t).
  const auto reset_after = [&](int64_t d) {
    return std::max(d == 0 ? 0 : r.lag + CeilDiv(d, rate), r.leases_reset_after);
  };

  if (cost > burst) {
    return Never(burst, FloorDivNonNegative(full - r.floored, period), reset_after(r.deficit));
  }
  const int64_t needed = r.floored + cost * period;
  if (cost == 0 || needed <= full) {
    if (cost > 0) {
      state.deficit = needed;
      state.updated_us = r.t;
      internal::PruneEnded(state.leases, now_us);
    }
    return Admitted(burst, FloorDivNonNegative(full - needed, period),
                    reset_after(cost > 0 ? needed : r.deficit));
  }
  // Denied: the later of the wait for the refill alone and, for each running lease whose floor is
  // in the way, the wait for that floor to come down; each only decreases with time.
  const int64_t room = full - cost * period;
  int64_t retry_after = r.deficit > room ? r.lag + CeilDiv(r.deficit - room, rate) : 0;
  ForEachWithUnits(state.leases, burst, [&](const LeaseEntry& entry, int64_t units) {
    if (entry.ends_us > now_us && units * period > room) {
      retry_after = std::max(retry_after, std::max(entry.ends_us, r.t) +
                                              CeilDiv(units * period - room, rate) - now_us);
    }
  });
  return Denied(burst, FloorDivNonNegative(full - r.floored, period), reset_after(r.deficit),
                retry_after);
}

Decision CreditTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                           int64_t units) {
  const int64_t period = limit.period.count();
  const internal::TokenBucketReading r = internal::ReadTokenBucket(limit, state, now_us);
  // Up to a full bucket goes back (units * period stays <= 2^50), from the deficit a check would
  // decide on, and from the running leases' floors where the deficit alone falls short.
  const int64_t deficit =
      internal::CreditedScaled(state.leases, r.floored, units, limit.Capacity(), period, now_us);
  if (deficit < r.floored) {
    state.deficit = deficit;
    state.updated_us = r.t;
    internal::PruneEnded(state.leases, now_us);
  }
  return DecideTokenBucket(limit, state, now_us, 0);
}

}  // namespace sluice::algorithm
