// StoreStateSource(): what Metrics::SetStoreStateSource() reads at each scrape: the failure
// policy's breaker, and the Redis or memory store's own counters.
//
// Thread safety: the source may be called from any thread; the stores must outlive it.
#ifndef SLUICE_SERVER_STATS_STORE_STATE_SOURCE_H_
#define SLUICE_SERVER_STATS_STORE_STATE_SOURCE_H_

#include "absl/functional/any_invocable.h"

#include "sluice/failure_policy.h"
#include "sluice/store.h"

#include "src/server/stats/metrics.h"

namespace sluice::server {

// StoreStateSource()
//
// Returns the source for `policy` and the store it wraps, `backend` (a RedisStore or a
// MemoryStore; any other kind reports only the breaker). A Redis connection counts as ready while
// more connections were established than lost.
absl::AnyInvocable<StoreState() const> StoreStateSource(const FailurePolicyStore& policy,
                                                        const Store* backend);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_STATS_STORE_STATE_SOURCE_H_
