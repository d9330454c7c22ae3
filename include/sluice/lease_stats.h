// LeaseStats: the counters of leases (docs/redis.md, "Leases"), reported by a Redis store opened
// with `lease=true` (RedisStoreStats::lease).
//
// Thread safety: a value type.
#ifndef SLUICE_LEASE_STATS_H_
#define SLUICE_LEASE_STATS_H_

#include <cstdint>

namespace sluice {

// Counters since the store was made (values may be slightly outdated).
struct LeaseStats {
  uint64_t local_admits = 0;    // decisions admitted from a lease, with no Redis call
  uint64_t local_denials = 0;   // decisions denied from memory until the retry_after Redis gave
  uint64_t lease_calls = 0;     // leasing script calls made for a decision (no units held)
  uint64_t refills = 0;         // leasing script calls made in the background
  uint64_t refill_errors = 0;   // background calls that failed
  uint64_t exact_calls = 0;     // decisions passed on as plain checks (repeated key, table full)
  uint64_t grants = 0;          // grants of at least one unit
  uint64_t units_granted = 0;   // units granted in all
  uint64_t units_expired = 0;   // granted units whose lease ended unspent (stranded)
  uint64_t refunds = 0;         // refund script calls
  uint64_t units_refunded = 0;  // units given back
  // of which from sliding-log, token-bucket and GCRA leases about to end unspent
  uint64_t units_refunded_ending = 0;
  // instances (this one included) counted as leaseholders at the last announcement; 0 before
  // the first was answered
  uint64_t instances_seen = 0;
  uint64_t keys = 0;  // keys held now
};

}  // namespace sluice

#endif  // SLUICE_LEASE_STATS_H_
