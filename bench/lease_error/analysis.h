// The analysis of one configuration of the lease error harness: the admitted decisions of every
// instance, summed, against the exact-mode bound of the limit's algorithm.
//
// Bounds (what an exact store can never exceed; docs/algorithms.md):
//   fixed_window, sliding_window:  admitted per aligned window <= L. (The sliding window's
//       counter also weighs the previous window in, but what it guarantees per window is this,
//       the bound the exact-mode tests assert: tests/store/memory/memory_store_concurrency_test.cc.
//       Against the sliding log's bound the exact sliding window itself admits up to about 2L in
//       some (a, a + P], by design.)
//   sliding_log:                   admitted in every (a, a + P] <= L.
//   token_bucket, gcra:            admitted in every [a, b] with b - a <= P <= C + L (b - a) / P +
//   1
//       (C the burst capacity; + 1 for rounding).
//
// Time. Each decision is known only to lie between the moment it was issued and the moment its
// answer arrived (Redis decides somewhere in between). A window decision that straddles a window's
// edge is placed by its reset_after (which names its window's end); one that cannot be placed is
// "ambiguous" and left out of E. An interval bound only counts decisions that certainly fall in
// one interval (a group whose earliest issue and latest answer lie within the interval), so E never
// reports an excess that timing alone could explain; it may miss one smaller than the decisions a
// call latency holds.
//
// Per window k (aligned to the period, over the run):
//   E_k = max(0, admitted - bound) / L, for an interval bound the largest excess of the intervals
//         starting in the window;
//   U_k = max(0, min(offered, L) - admitted) / L, over the windows wholly inside the run (offered:
//         checks issued in the window, failed ones included).
#ifndef SLUICE_BENCH_LEASE_ERROR_ANALYSIS_H_
#define SLUICE_BENCH_LEASE_ERROR_ANALYSIS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/lease_error/plan.h"
#include "bench/lease_error/records.h"

namespace sluice::lease_error {

struct WindowStat {
  int64_t start_us = 0;
  int64_t offered = 0;
  int64_t admitted = 0;
  double e = 0;
  // Only for windows wholly inside the run.
  std::optional<double> u{};
};

struct Analysis {
  int64_t period_us = 0;
  int64_t limit = 0;
  std::vector<WindowStat> windows;  // every window overlapping the run, in order
  std::vector<Record> decisions;    // the valid records, ordered by send_us
  int64_t ambiguous = 0;            // admitted window decisions left out of E (see above)
};

// BoundText()
//
// Returns the bound of `limit`'s algorithm in words, for the output.
std::string BoundText(const Limit& limit);

// Analyze()
//
// Returns the windows and decisions of a run from `start_us` to `end_us` (CLOCK_REALTIME us).
Analysis Analyze(const Limit& limit, int64_t start_us, int64_t end_us, std::vector<Record> records);

struct Summary {
  int windows = 0;    // windows with an E
  int u_windows = 0;  // windows with a U
  double e_max = 0, e_p99 = 0, e_p50 = 0;
  double u_max = 0, u_p99 = 0, u_p50 = 0;
  int64_t decisions = 0, admitted = 0, errors = 0, fallback = 0;
  int64_t p50_us = 0, p99_us = 0, max_us = 0;  // decision latency (issue to answer)
  // The same split by who answered: the store (from a lease, or Redis) or the failure policy (an
  // error or a fallback decision). During an outage the first are what leases still decide, the
  // second what the policy answers instead, within the store's deadline or at once (breaker open).
  int64_t store_answers = 0, store_p99_us = 0;
  int64_t policy_answers = 0, policy_p99_us = 0, policy_max_us = 0;
  double offered_x = 0;  // offered checks per period, in limits
};

// Summarize()
//
// Returns the summary of the decisions issued in [from_us, to_us) and of the windows that start
// in [windows_from_us, windows_to_us) (each window belongs to one phase of a fault).
Summary Summarize(const Analysis& analysis, int64_t from_us, int64_t to_us, int64_t windows_from_us,
                  int64_t windows_to_us);

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_ANALYSIS_H_
