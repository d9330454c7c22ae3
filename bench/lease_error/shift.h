// Shift: after a traffic shift (the rotating split's hot instance moves on), how long the instance
// that now carries the traffic takes to be admitted its share (issue 20: "after a traffic shift an
// instance reaches 95 % of its share within 2 refreshes", a refresh being lease_refresh_ms).
//
// Its share, per bin of a tenth of a refresh: what all the instances admitted in the bin times the
// fraction of the bin's checks it was offered. An exact store admits checks in the order they
// come, so there every instance is admitted that share (ratio 1, Poisson aside); a lease store
// may hold units at instances that no longer need them, and a new hot instance may hold too few.
// A bin counts when at least kMinAdmitted checks were admitted in it: with a window limit
// exhausted there is nothing to share, and the clock starts at the first bin after the shift that
// admitted anything (a shift into an exhausted window waits for the next one whatever the store).
//
// Example:
//   ShiftStats s = MeasureShifts(plan, analysis, start_us, /*refresh_us=*/500'000);
//   // s.t95_max: refreshes from a shift until the hot instance got >= 95 % of its share, worst
#ifndef SLUICE_BENCH_LEASE_ERROR_SHIFT_H_
#define SLUICE_BENCH_LEASE_ERROR_SHIFT_H_

#include <cstdint>

#include "bench/lease_error/analysis.h"
#include "bench/lease_error/plan.h"

namespace sluice::lease_error {

struct ShiftStats {
  int shifts = 0;     // shifts followed by a bin that counts, before the next shift
  int unreached = 0;  // of those, how many never reached 95 % before the next shift
  // Refreshes from a shift (its first bin that admitted anything) to the end of the first bin in
  // which the new hot instance got >= 95 % of its share: max and p50 over the shifts that did.
  double t95_max = 0, t95_p50 = 0;
  // The new hot instance's admitted / share per whole period starting 2 refreshes or more after
  // each shift (median): below 1 when the others keep more than their share of the limit.
  double steady_p50 = 0;
};

// MeasureShifts()
//
// Returns the shifts of a rotating-split run that started at `start_us` (zeros for other
// splits), against leases refreshed every `refresh_us`.
ShiftStats MeasureShifts(const Plan& plan, const Analysis& analysis, int64_t start_us,
                         int64_t refresh_us);

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_SHIFT_H_
