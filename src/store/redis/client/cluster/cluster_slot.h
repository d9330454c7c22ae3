// Redis Cluster key slots: which of the 16384 slots a key belongs to.
//
// Thread safety: pure functions.
#ifndef SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_SLOT_H_
#define SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_SLOT_H_

#include <cstdint>
#include <string_view>

namespace sluice {

// The number of slots of a Redis Cluster.
inline constexpr int kClusterSlots = 16384;

// ClusterHashSlot()
//
// Returns the Redis Cluster slot of `redis_key` (CRC16 of the hash tag, or of the whole key when it
// has no non-empty tag, modulo 16384), as Redis's keyHashSlot() computes it.
uint16_t ClusterHashSlot(std::string_view redis_key);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_SLOT_H_
