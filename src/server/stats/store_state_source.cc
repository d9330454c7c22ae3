#include "src/server/stats/store_state_source.h"

#include "sluice/memory_store.h"
#include "sluice/redis_store.h"

namespace sluice::server {

absl::AnyInvocable<StoreState() const> StoreStateSource(const FailurePolicyStore& policy_store,
                                                        const Store* backend) {
  const FailurePolicyStore* policy = &policy_store;
  // Each store type's own counters.
  const auto* redis = dynamic_cast<const RedisStore*>(backend);
  const auto* memory = dynamic_cast<const MemoryStore*>(backend);
  return [policy, redis, memory] {
    const FailureStats failure = policy->Stats();
    StoreState state{.breaker_open = failure.breaker_open,
                     .breaker_opens = failure.breaker_opens,
                     .breaker_closes = failure.breaker_closes};
    if (redis != nullptr) {
      state.redis = redis->Stats();
      state.redis_connected = state.redis->connects > state.redis->disconnects;
    }
    if (memory != nullptr) state.memory = memory->Stats();
    return state;
  };
}

}  // namespace sluice::server
