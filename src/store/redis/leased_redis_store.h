// WithLeases(): a Redis store with a lease store in front (`lease=true` in the store URL; docs/
// redis.md, "Leases"). It is still a RedisStore (connection, warnings, stats), and its stats add
// the leases' counters.
//
// Thread safety: thread-safe.
#ifndef SLUICE_STORE_REDIS_LEASED_REDIS_STORE_H_
#define SLUICE_STORE_REDIS_LEASED_REDIS_STORE_H_

#include <memory>

#include "sluice/redis_store.h"
#include "sluice/store_url.h"

#include "src/store/lease/lease_source.h"
#include "src/store/lease/lease_store.h"

namespace sluice::internal {

// LeaseOptionsFromUrl()
//
// The lease store's options that `url`'s lease_* parameters set, the defaults otherwise.
LeaseOptions LeaseOptionsFromUrl(const StoreUrl& url, Clock* clock);

// WithLeases()
//
// Returns `store` behind a lease store that leases from `source` (the store's own lease side,
// which must live as long as `store`). Owns `store`.
std::unique_ptr<RedisStore> WithLeases(std::unique_ptr<RedisStore> store, LeaseSource& source,
                                       const LeaseOptions& options);

}  // namespace sluice::internal

#endif  // SLUICE_STORE_REDIS_LEASED_REDIS_STORE_H_
