// StoreGauges: the decision store's state (src/server/observe/store_state.h), read from the main
// store chain whenever it is asked: the failure policy's breaker, and the Redis or memory store's
// own counters. It renders the store's families on /metrics (a GaugeSource) and gives the
// dashboard its store section (a StoreStateSource). It lives where the stores are wired, so that
// only the process links the stores to report them: the rooms that show them read a StoreState.
//
// Example:
//   StoreGauges store_gauges(*stores.main.store, stores.main.backend);
//   GaugeList gauges({&store_gauges, ...});
//   dashboard.SetStoreStateSource(&store_gauges);
//
// Thread safety: thread-safe; the stores must outlive the object.
#ifndef SLUICE_SERVER_STORE_GAUGES_H_
#define SLUICE_SERVER_STORE_GAUGES_H_

#include <string>

#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"
#include "sluice/redis_store.h"
#include "sluice/store.h"

#include "src/server/observe/gauge_source.h"
#include "src/server/observe/store_state.h"

namespace sluice::server {

// AppendStoreFamilies()
//
// Appends the families of `state` to `out` (Prometheus text format): sluice_redis_connected when
// it is known, the breaker's, the Redis store's counters (and its leases' when it leases) when
// they are there, and the memory store's when they are.
void AppendStoreFamilies(const StoreState& state, std::string& out);

class StoreGauges final : public GaugeSource, public StoreStateSource {
 public:
  // Reads `policy` and the store it wraps, `backend` (a RedisStore or a MemoryStore; any other
  // kind reports only the breaker).
  StoreGauges(const FailurePolicyStore& policy, const Store* backend);

  // A Redis connection counts as ready while more connections were established than lost.
  StoreState ReadStoreState() const override;
  // AppendStoreFamilies() of ReadStoreState().
  void AppendPrometheus(std::string& out) const override;

 private:
  const FailurePolicyStore& policy_;
  // The backend as the kind it is, or null.
  const RedisStore* const redis_;
  const MemoryStore* const memory_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_STORE_GAUGES_H_
