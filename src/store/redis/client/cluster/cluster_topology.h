// ClusterMap: which primary serves which slots of a Redis Cluster, as one node reported it.
//
// Parsed from CLUSTER SHARDS (Redis 7+) or, on older servers, CLUSTER SLOTS. Only what routing
// needs is kept: each primary's address, node id and slot ranges, and the replicas' addresses and
// ids (other nodes to ask for the map when the primaries do not answer). The node ids let the
// client check, on every connect, that the server at an address is still the node the map named
// (CLUSTER MYID, RedisClientOptions::cluster_node_id). ClusterSlotTable() turns a map into the
// 16384-entry table the client routes with.
//
// Example:
//   absl::StatusOr<ClusterMap> map = ParseClusterShards(reply, "10.0.0.5", /*tls=*/false);
//   if (!map.ok()) return map.status();
//   absl::StatusOr<std::vector<int16_t>> table = ClusterSlotTable(*map);
//   int owner = (*table)[ClusterHashSlot(key)];  // index into map->shards, or -1
//
// Thread safety: value types and pure functions.
#ifndef SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_TOPOLOGY_H_
#define SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_endpoint.h"
#include "src/store/redis/client/redis_reply.h"

namespace sluice {

// One primary with the slots it serves.
struct ClusterShard {
  RedisNode primary = {};
  // The primary's node id (40 hex characters); empty when the reply carried none (CLUSTER SLOTS
  // before Redis 4).
  std::string primary_id = {};
  // Inclusive slot ranges, in the order reported.
  std::vector<std::pair<int, int>> slots = {};
  // Replicas reported online; not routed to, only asked for the map.
  std::vector<RedisNode> replicas = {};
  // The replicas' node ids, in the order of `replicas` (one each; empty when not reported).
  std::vector<std::string> replica_ids = {};

  friend bool operator==(const ClusterShard&, const ClusterShard&) = default;
};

struct ClusterMap {
  // Primaries serving at least one slot, in the order reported; one entry per address.
  std::vector<ClusterShard> shards = {};

  // How many of the 16384 slots have a primary.
  int CoveredSlots() const;

  friend bool operator==(const ClusterMap&, const ClusterMap&) = default;
};

// ParseClusterShards()
//
// Returns the map in a CLUSTER SHARDS reply. A node's address is its "endpoint" (else its "ip");
// one that is empty or "?" (unknown) is `asked_host`, the node that answered. Its id is its "id".
// With `tls`, a node's "tls-port" is used when present. Returns Internal for a reply of the wrong
// shape, a slot out of range or two primaries claiming one slot.
absl::StatusOr<ClusterMap> ParseClusterShards(const RedisReply& reply, std::string_view asked_host,
                                              bool tls);

// ParseClusterSlots()
//
// As ParseClusterShards(), for a CLUSTER SLOTS reply (Redis 3 to 6; still served by 7). A node
// entry is [host, port, id, ...]; the id is there since Redis 4, and empty when absent.
absl::StatusOr<ClusterMap> ParseClusterSlots(const RedisReply& reply, std::string_view asked_host);

// ClusterSlotTable()
//
// Returns, for each slot, the index in `map.shards` of its primary, or -1 when no primary serves
// it. Returns Internal when two shards claim one slot.
absl::StatusOr<std::vector<int16_t>> ClusterSlotTable(const ClusterMap& map);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_TOPOLOGY_H_
