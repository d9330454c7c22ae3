// sliding_log: docs/algorithms.md, "sliding_log".
#include <algorithm>
#include <cstdint>
#include <iterator>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/math_internal.h"

namespace sluice::algorithm {

using internal::Admitted;
using internal::Denied;
using internal::Never;

Decision DecideSlidingLog(const Limit& limit, SlidingLogState& state, int64_t now_us,
                          int64_t cost) {
  const int64_t l = limit.limit;
  const int64_t period = limit.period.count();
  auto& entries = state.entries_us;
  // An entry made at t counts during [t, t + P): entries at or before now - P no longer count. They
  // are only counted past here, not erased, because denials and peeks write nothing.
  const auto first_live = std::upper_bound(entries.begin(), entries.end(), now_us - period);
  const auto n = static_cast<int64_t>(std::distance(first_live, entries.end()));
  // The log is sorted, so the newest entry is the last one; it is live whenever any entry is.
  const int64_t reset_after = n > 0 ? entries.back() + period - now_us : 0;

  if (cost > l) {
    return Never(l, std::max<int64_t>(0, l - n), reset_after);
  }
  if (cost == 0) {
    return Admitted(l, std::max<int64_t>(0, l - n), reset_after);
  }
  if (n + cost <= l) {
    entries.erase(entries.begin(), first_live);
    // Normally `now` is the newest time and this appends; after a backward time step it keeps the
    // log sorted by inserting before the newer entries.
    entries.insert(std::upper_bound(entries.begin(), entries.end(), now_us),
                   static_cast<size_t>(cost), now_us);
    return Admitted(l, l - n - cost, entries.back() + period - now_us);
  }
  // The k-th oldest live entry must leave; 1 <= k <= n because cost <= l < n + cost.
  const int64_t k = n + cost - l;
  const int64_t kth_oldest = *std::next(first_live, k - 1);
  return Denied(l, std::max<int64_t>(0, l - n), reset_after, kth_oldest + period - now_us);
}

Decision CreditSlidingLog(const Limit& limit, SlidingLogState& state, int64_t now_us,
                          int64_t units) {
  auto& entries = state.entries_us;
  const auto first_live =
      std::upper_bound(entries.begin(), entries.end(), now_us - limit.period.count());
  const auto live = static_cast<int64_t>(std::distance(first_live, entries.end()));
  // The newest entries go (a lease's, at its end, included). Entries that no longer count stay,
  // as after any write but an admission: they count again after a backward time step, in the
  // Redis log too.
  const int64_t given = std::min(units, live);
  entries.erase(entries.end() - given, entries.end());
  return DecideSlidingLog(limit, state, now_us, 0);
}

}  // namespace sluice::algorithm
