// token_bucket: docs/algorithms.md, "token_bucket".
#include <algorithm>
#include <cstdint>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/math_internal.h"

namespace sluice::algorithm {

using internal::Admitted;
using internal::CeilDiv;
using internal::Denied;
using internal::FloorDivNonNegative;
using internal::Never;

// Overflow: a stored deficit is at most B * P <= 2^50 of the limit it was written under, and every
// cost that reaches `cost * period` is <= B, so all sums below stay under 2^52. The lag is a
// difference of two times below 2^52.
Decision DecideTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                           int64_t cost) {
  const int64_t rate = limit.limit;
  const int64_t burst = limit.Capacity();
  const int64_t period = limit.period.count();
  const int64_t full = burst * period;

  // While the clock is behind `updated` (time went backwards) the bucket does not refill, and every
  // wait starts when the clock catches up again.
  const int64_t t = std::max(now_us, state.updated_us);
  const int64_t lag = t - now_us;
  int64_t deficit = state.deficit;
  // Compare before multiplying: elapsed * rate could overflow, but below ceil(deficit / rate) it is
  // smaller than the deficit.
  if (const int64_t elapsed = t - state.updated_us; elapsed >= CeilDiv(deficit, rate)) {
    deficit = 0;
  } else {
    deficit -= elapsed * rate;
  }
  const auto reset_after = [&](int64_t d) { return d == 0 ? 0 : lag + CeilDiv(d, rate); };

  if (cost > burst) {
    return Never(burst, FloorDivNonNegative(full - deficit, period), reset_after(deficit));
  }
  const int64_t needed = deficit + cost * period;
  if (cost == 0 || needed <= full) {
    if (cost > 0) {
      state = {.deficit = needed, .updated_us = t};
    }
    return Admitted(burst, FloorDivNonNegative(full - needed, period), reset_after(needed));
  }
  return Denied(burst, FloorDivNonNegative(full - deficit, period), reset_after(deficit),
                lag + CeilDiv(needed - full, rate));
}

}  // namespace sluice::algorithm
