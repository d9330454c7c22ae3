// Leases in the five algorithms (docs/algorithms.md, "Leases"): the check of algorithm.h with a
// grant of up to `want` more units for the caller to spend in memory, and the refund of units
// not spent. The C++ reference of the Redis scripts lease_all and lease_refund, which the test
// vectors and the differential tests hold to the same results.
//
// A grant is decided after the request, on what remains: g = min(want, remaining div 2), recorded
// as an admission of g more units at `now` (the sliding log records them at the lease's end
// instead, and the token bucket and GCRA note them in their lease record). The leases of the
// window algorithms end with the window; the others after `ttl`, clamped to [1 ms, period].
//
// Example:
//   TokenBucketState state;
//   LeaseDecision d = LeaseTokenBucket(limit, state, now_us, 1, /*want=*/50, /*ttl_us=*/100'000);
//   if (d.decision.allowed) { /* admitted; d.granted more units until d.ends_us */ }
//   ...
//   RefundTokenBucket(limit, state, later_us, {.ends_us = d.ends_us, .granted = d.granted}, 7);
//
// REQUIRES: as algorithm.h; 0 <= want <= kMaxCost; ttl_us >= 0.
//
// Thread safety: pure functions; the caller serialises access to one state.
#ifndef SLUICE_ALGORITHM_LEASE_H_
#define SLUICE_ALGORITHM_LEASE_H_

#include <cstdint>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"

namespace sluice::algorithm {

struct LeaseDecision {
  // The request's decision. When units were granted, `remaining` and `reset_after` are those of
  // the state after the grant (a peek right after it), so remaining = R - granted.
  Decision decision;
  // Units granted, 0 <= granted <= want; 0 when denied, when want is 0, or when remaining < 2.
  int64_t granted = 0;
  // When the lease ends (its units may be spent while now < ends_us); 0 when granted is 0.
  int64_t ends_us = 0;

  friend bool operator==(const LeaseDecision&, const LeaseDecision&) = default;
};

// A lease as a refund names it: as it was granted.
struct GrantedLease {
  int64_t ends_us = 0;
  int64_t granted = 0;
};

// ClampLeaseTtl()
//
// Returns min(max(ttl_us, 1 ms), period_us): how long a sliding log, token bucket or GCRA lease
// lasts.
int64_t ClampLeaseTtl(int64_t ttl_us, int64_t period_us);

// Lease<Algorithm>()
//
// Decides `cost` at `now_us` as Decide<Algorithm>() does and, when admitted, grants up to `want`
// more units (docs/algorithms.md, "The grant rule").
LeaseDecision LeaseFixedWindow(const Limit& limit, FixedWindowState& state, int64_t now_us,
                               int64_t cost, int64_t want, int64_t ttl_us);
LeaseDecision LeaseSlidingWindow(const Limit& limit, SlidingWindowState& state, int64_t now_us,
                                 int64_t cost, int64_t want, int64_t ttl_us);
LeaseDecision LeaseSlidingLog(const Limit& limit, SlidingLogState& state, int64_t now_us,
                              int64_t cost, int64_t want, int64_t ttl_us);
LeaseDecision LeaseTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                               int64_t cost, int64_t want, int64_t ttl_us);
LeaseDecision LeaseGcra(const Limit& limit, GcraState& state, int64_t now_us, int64_t cost,
                        int64_t want, int64_t ttl_us);

// Refund<Algorithm>()
//
// Gives back `unspent` units of `lease` (docs/algorithms.md, "Refunds") and returns how many were
// given back: 0 when the lease has ended (now_us >= ends_us) or is not in `state`. Writes nothing
// then. The token bucket and GCRA find the lease in their record by (ends_us, granted) and keep
// the units not given back there, so a later refund of the same lease names it with `granted`
// less what this one gave back. REQUIRES: 0 < unspent <= lease.granted; the units were not spent
// and will not be.
int64_t RefundFixedWindow(const Limit& limit, FixedWindowState& state, int64_t now_us,
                          GrantedLease lease, int64_t unspent);
int64_t RefundSlidingWindow(const Limit& limit, SlidingWindowState& state, int64_t now_us,
                            GrantedLease lease, int64_t unspent);
int64_t RefundSlidingLog(const Limit& limit, SlidingLogState& state, int64_t now_us,
                         GrantedLease lease, int64_t unspent);
int64_t RefundTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                          GrantedLease lease, int64_t unspent);
int64_t RefundGcra(const Limit& limit, GcraState& state, int64_t now_us, GrantedLease lease,
                   int64_t unspent);

}  // namespace sluice::algorithm

#endif  // SLUICE_ALGORITHM_LEASE_H_
