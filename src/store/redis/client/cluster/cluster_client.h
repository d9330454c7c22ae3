// ClusterClient: the router of a Redis Cluster (redis-cluster://, rediss-cluster://).
//
// The slot map comes from any node (first the seeds of the endpoint, later the primaries and
// replicas it names) through CLUSTER SHARDS, or CLUSTER SLOTS on servers before Redis 7. Each
// primary gets one RedisClient (its auto-pipelined connection, from endpoint.ForNode()), and
// Route() sends a command to the primary serving the CRC16 slot of its key. Each node client
// checks on every connect that the server is the node the map named (CLUSTER MYID against the
// node id of the map, RedisClientOptions::cluster_node_id): a server that took a dead node's
// address is never sent a command; its connects fail, so do the slot's commands, which makes the
// map refresh until it names the promoted replica. The map is an immutable
// snapshot swapped whole, so routing takes one short lock to copy a pointer and never waits for a
// refresh.
//
// What the client does with the cluster's answers (each one proves the command did not run):
//   MOVED        resend at once to the node named, and refresh the map (coalesced);
//   ASK          resend once to the node named, as the pipeline ASKING + command;
//   TRYAGAIN, CLUSTERDOWN, LOADING, READONLY, MASTERDOWN, or no primary known for the slot:
//                resend after a short backoff (doubling from retry_backoff_min to _max) while the
//                command's deadline allows, then return the last answer: the error reply, which
//                the store maps to Unavailable, so its failure policy answers.
// Redirects are bounded (max_redirects); the last one is returned as is. A command whose outcome
// is unknown (it timed out after being written, or its connection dropped) is returned as an
// error, never resent. The map is also refreshed every refresh_interval, on CLUSTERDOWN and
// READONLY, and when a command fails because a node could not be reached.
//
// Pipelines (RedisCommand::Pipeline) are routed by `key` like any command, and redirected or
// retried as a whole when their FIRST reply says so. REQUIRES for a pipeline: its first command
// carries the key and the others do not write (WAIT after EVALSHA, as ScriptRunner sends).
//
// Example:
//   RedisEndpoint seeds = RedisEndpointFromUrl(*ParseStoreUrl(
//       "redis-cluster://10.0.0.5:7000,10.0.0.6:7000")).value();  // At the store level.
//   auto cluster = ClusterClient::Create({.node = {.endpoint = seeds, .command_timeout = 20ms}});
//   if (!cluster.ok()) return cluster.status();
//   (*cluster)->Route(RedisCommand::Format({"INCR", "{user:1}:hits"}), "{user:1}:hits", 20ms,
//                     [](absl::StatusOr<RedisReply> reply) { ... });
//
// Threads: one. Every node client's connection, the refreshes and the backoff timers run on the
// cluster client's I/O thread, so the client's CPU cost per command does not grow with the number
// of primaries.
//
// Thread safety: thread-safe. Callbacks run on the cluster client's I/O thread, or inline before
// Route() returns when the command is refused up front (empty command, a node's client refusing
// it). The primary listener runs on that thread too, so it must not block (SendSync() there
// returns FailedPrecondition).
#ifndef SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_CLIENT_H_
#define SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_router.h"

namespace sluice {

struct ClusterClientOptions {
  // Options of every node's client. `node.endpoint` is the Cluster's (topology kCluster): its hosts
  // are the seeds, and its credentials, TLS settings and parameters apply to each node.
  RedisClientOptions node = {};
  // The slot map is refreshed this often even when nothing prompts it. Default: 5 s.
  std::chrono::milliseconds refresh_interval{5000};
  // The least time between two refreshes, so that an outage (every command failing) or a burst
  // of MOVED does not become a storm of CLUSTER SHARDS. MOVED is followed at once regardless.
  // Default: 100 ms.
  std::chrono::milliseconds min_refresh_gap{100};
  // Redirects (MOVED, ASK) followed per command. Default: 5, more than one resharding step needs.
  int max_redirects = 5;
  // Backoff before resending after TRYAGAIN, CLUSTERDOWN, LOADING or READONLY, doubling per
  // retry. Defaults: 2 ms and 50 ms (a failover takes about twice cluster-node-timeout; a
  // command's deadline, 50 ms by default, ends the wait long before).
  std::chrono::milliseconds retry_backoff_min{2};
  std::chrono::milliseconds retry_backoff_max{50};
};

// Counters of the cluster layer (values may be slightly outdated relative to each other).
struct ClusterClientStats {
  uint64_t moved = 0;             // MOVED replies followed.
  uint64_t asked = 0;             // ASK replies followed.
  uint64_t retries = 0;           // Resends after TRYAGAIN, CLUSTERDOWN, LOADING, READONLY.
  uint64_t refreshes = 0;         // Slot maps installed.
  uint64_t refresh_failures = 0;  // Refreshes that found no node answering with a map.
  int primaries = 0;              // Primaries in the current map.
  int covered_slots = 0;          // Slots with a primary in the current map.
};

class ClusterClient final : public RedisRouter {
 public:
  // ClusterClient::Create()
  //
  // Validates `options`, starts the client's thread and the first refresh from the seeds, and
  // returns without waiting for it (see WaitForConnection()). Returns InvalidArgument for an
  // endpoint that is not a Cluster's, or options RedisClient::Create() refuses.
  static absl::StatusOr<std::shared_ptr<ClusterClient>> Create(const ClusterClientOptions& options);

  ClusterClient(const ClusterClient&) = delete;
  ClusterClient& operator=(const ClusterClient&) = delete;
  // Fails every pending command with Unavailable and stops every node's client.
  ~ClusterClient() override;

  // RedisRouter. Route() sends to the primary of ClusterHashSlot(key) (any primary for an empty
  // key); see the header comment for redirects and retries. Commands routed before the first
  // slot map is known wait for it within their deadline.
  void Route(RedisCommand command, std::string_view key, std::chrono::milliseconds timeout,
             ReplyCallback done) override;
  std::vector<std::shared_ptr<RedisClient>> Primaries() const override;
  // Blocks until every slot has a primary and every primary's connection is ready; returns the
  // connection error of a primary (PermissionDenied for credentials) or DeadlineExceeded with
  // what was missing.
  absl::Status WaitForConnection(std::chrono::milliseconds timeout) override;
  // Calls `listener` for the current primaries and for every node that becomes a primary later,
  // on the cluster client's thread.
  void SetPrimaryListener(PrimaryListener listener) override;
  RedisClientStats RouterStats() const override;
  std::string Describe() const override;
  std::chrono::milliseconds DefaultTimeout() const override;

  // ClusterClient::Stats()
  ClusterClientStats Stats() const;

  // ClusterClient::RefreshForTest()
  //
  // Asks for a refresh of the slot map now (it is coalesced and asynchronous, as a MOVED one).
  void RefreshForTest();

 private:
  class Impl;
  ClusterClient(std::shared_ptr<internal::IoThread> io_thread, std::shared_ptr<Impl> impl);

  // The one I/O thread of every node client, and of the refreshes and backoffs. Declared first,
  // let go of last: unless a node client is still held elsewhere (Primaries()), it is joined here.
  std::shared_ptr<internal::IoThread> io_thread_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_CLIENT_H_
