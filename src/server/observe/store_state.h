// StoreState: the decision store's state as the store wiring reads it (src/server/store_gauges.h):
// the failure policy's breaker and the memory or Redis store's own counters. The store's gauges
// on /metrics are rendered from it, and the dashboard shows part of it, each reading it when
// asked through a StoreStateSource.
//
// Only the stores' stats types are used here (include/sluice/), so a room that reads the state
// links no store.
//
// Thread safety: ReadStoreState() may be called from any thread.
#ifndef SLUICE_SERVER_OBSERVE_STORE_STATE_H_
#define SLUICE_SERVER_OBSERVE_STORE_STATE_H_

#include <cstdint>
#include <optional>

#include "sluice/memory_store.h"
#include "sluice/redis_store.h"

namespace sluice::server {

struct StoreState {
  // Redis: whether a connection is ready. Empty for the memory store.
  std::optional<bool> redis_connected{};
  // Whether the failure policy's circuit breaker is open (the store is skipped).
  bool breaker_open = false;
  uint64_t breaker_opens = 0;
  uint64_t breaker_closes = 0;
  // The Redis store's counters (connections, script calls, leases); empty for the memory store.
  std::optional<RedisStoreStats> redis{};
  // The memory store's entries, bytes and evictions; empty for Redis.
  std::optional<MemoryStoreStats> memory{};
};

class StoreStateSource {
 public:
  StoreStateSource() = default;
  StoreStateSource(const StoreStateSource&) = delete;
  StoreStateSource& operator=(const StoreStateSource&) = delete;
  virtual ~StoreStateSource() = default;

  // The state now.
  virtual StoreState ReadStoreState() const = 0;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_OBSERVE_STORE_STATE_H_
