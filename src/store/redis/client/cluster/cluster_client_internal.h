// ClusterClient::Impl (internal): routing in cluster_client.cc, slot map refresh in
// cluster_refresh.cc.
//
// Threads: Route() runs on callers' threads. The cluster's one I/O thread (io_thread_) runs every
// node client's connection (each node client is made on it), so replies arrive there, and it also
// runs refreshes, backoff timers and the retirement of node clients. The ClusterClient and each
// node client hold the thread; the Impl holds only its io_context, as handlers on the thread hold
// the Impl (shared_from_this): the thread may outlive the ClusterClient, while a node client
// someone still holds (Primaries()) uses it. A node client destroyed on the thread closes after
// the handler returns; one destroyed in Shutdown() (off the thread) fails its commands first.
//
// Thread safety: as ClusterClient; members are annotated with what guards them.
#ifndef SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_CLIENT_INTERNAL_H_
#define SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_CLIENT_INTERNAL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "src/store/redis/client/cluster/cluster_client.h"
#include "src/store/redis/client/cluster/cluster_topology.h"
#include "src/store/redis/client/io_thread.h"
#include "src/store/redis/client/redis_endpoint.h"
#include "src/util/mutex.h"

namespace sluice {

using ClusterTimePoint = std::chrono::steady_clock::time_point;

// One slot map with the clients of its primaries. Immutable once published.
struct ClusterRouting {
  // Index = shard index of the map; null where the node's client could not be made.
  std::vector<std::shared_ptr<RedisClient>> primaries;
  std::vector<RedisNode> addresses;
  // For each slot, its primary's index, or -1.
  std::vector<int16_t> slot_owner;
  // Every slot has a primary with a client.
  bool complete = false;
  int covered_slots = 0;
  // Where to ask for the next map: primaries, then replicas.
  std::vector<RedisNode> candidates;
  // The node id of each node of the map (primaries and replicas) that has one, by "host:port":
  // the id a client made for that address checks on every connect (cluster_node_id).
  std::map<std::string, std::string> node_ids;

  // The primary for `slot` (any primary for -1) and its address; null if none.
  const std::shared_ptr<RedisClient>* ClientFor(int slot, const RedisNode** address) const;
};

// One routed command, carried from attempt to attempt.
struct ClusterCall {
  RedisCommand command;
  int slot = -1;
  ClusterTimePoint deadline;
  std::chrono::milliseconds timeout{0};
  int redirects = 0;
  int retries = 0;
  // The host of the node of the current attempt, for "MOVED <slot> :<port>".
  std::string sent_host;
  RedisRouter::ReplyCallback done;
};

class ClusterClient::Impl final : public std::enable_shared_from_this<Impl> {
 public:
  using PrimaryListener = RedisRouter::PrimaryListener;

  // `io_thread`: the thread of the node clients, held by the ClusterClient.
  Impl(ClusterClientOptions options, RedisEndpoint endpoint,
       const std::shared_ptr<internal::IoThread>& io_thread);
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  // Makes the first seed's client (before Start()); returns RedisClient::Create()'s error.
  absl::Status AddSeedClient();
  void Start();
  // Fails every pending command (in the node clients and waiting for a retry) with Unavailable
  // before it returns, except on the cluster thread, where it cannot wait for itself: there they
  // fail once the running handler returns.
  void Shutdown();

  // Routing (cluster_client.cc).
  void Dispatch(std::unique_ptr<ClusterCall> call, std::shared_ptr<RedisClient> target,
                bool asking);
  std::vector<std::shared_ptr<RedisClient>> Primaries() const;
  void SetPrimaryListener(PrimaryListener listener);
  absl::Status WaitForConnection(std::chrono::milliseconds timeout);
  RedisClientStats RouterStats() const;
  ClusterClientStats Stats() const;
  std::string Describe() const { return endpoint_.Redacted(); }
  std::chrono::milliseconds command_timeout() const { return options_.node.command_timeout; }

  // Refresh (cluster_refresh.cc). RequestRefresh() is thread-safe and coalesced.
  void RequestRefresh();

 private:
  void OnReply(std::unique_ptr<ClusterCall> call, absl::StatusOr<RedisReply> reply);
  // Resends `call` to the slot's primary after a backoff, or completes it with `last` when its
  // deadline leaves no room for another attempt.
  void RetryLater(std::unique_ptr<ClusterCall> call, absl::StatusOr<RedisReply> last);
  // The client for a node named by a redirect: the primary's, or a new one.
  std::shared_ptr<RedisClient> ClientForNode(const RedisNode& node);
  std::shared_ptr<const ClusterRouting> Snapshot() const;
  // `node_id`: checked on every connect (RedisClientOptions::cluster_node_id); empty: unknown.
  RedisClientOptions NodeOptions(const RedisNode& node, const std::string& node_id) const;
  // A client for `node` on the cluster's thread; Unavailable once the ClusterClient is gone.
  absl::StatusOr<std::unique_ptr<RedisClient>> MakeNodeClient(const RedisNode& node,
                                                              const std::string& node_id) const;
  // The id the current map gives the node at `node`'s address; empty if none (a seed not in the
  // map yet, a server too old to report ids).
  std::string KnownNodeId(const RedisNode& node) const;
  bool OnClusterThread() const;

  // Cluster thread only (cluster_refresh.cc).
  void MaybeRefresh();
  void StartRefresh();
  void TryNextCandidate();
  void AskForMap(const RedisNode& node);
  void OnMapReply(const RedisNode& node, bool slots_command, absl::StatusOr<RedisReply> reply);
  void FinishRefresh();
  void Install(const ClusterMap& map);
  void SweepRetired();
  // Calls the listener with each of `primaries` (cluster thread).
  void NotifyPrimaries(const std::vector<std::shared_ptr<RedisClient>>& primaries);
  void ArmPeriodicRefresh();

  const ClusterClientOptions options_;  // node.* with the endpoint's overrides applied.
  const RedisEndpoint endpoint_;

  // The thread (not owned: see the top of this file) and its io_context (kept alive).
  const std::weak_ptr<internal::IoThread> io_thread_;
  const std::shared_ptr<boost::asio::io_context> io_holder_;
  boost::asio::io_context& io_;
  boost::asio::steady_timer periodic_timer_{io_};
  boost::asio::steady_timer gap_timer_{io_};

  // Cluster thread only.
  bool gap_timer_armed_ = false;
  bool refreshing_ = false;
  bool refresh_again_ = false;
  ClusterTimePoint last_refresh_end_{};
  std::vector<RedisNode> candidates_;
  size_t next_candidate_ = 0;
  std::optional<ClusterMap> best_map_;
  absl::Status refresh_error_;
  // The client of the node being asked for the map: a primary's, or one made for the purpose.
  std::shared_ptr<RedisClient> asked_client_;
  // The cluster answered CLUSTER SHARDS with "unknown subcommand" (Redis < 7): use CLUSTER SLOTS.
  bool use_cluster_slots_ = false;
  // Clients no longer in the map, destroyed here once nothing else holds them.
  std::vector<std::shared_ptr<RedisClient>> retired_;

  std::atomic<bool> refresh_posted_{false};
  std::atomic<uint64_t> moved_{0};
  std::atomic<uint64_t> asked_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<uint64_t> refreshes_{0};
  std::atomic<uint64_t> refresh_failures_{0};

  // Held while the listener runs, so that replacing it waits for a call in progress. Never
  // taken with mu_ held.
  internal::Mutex listener_mu_;
  PrimaryListener listener_ ABSL_GUARDED_BY(listener_mu_);

  mutable internal::Mutex mu_;
  std::condition_variable_any changed_;
  // Set once, under mu_, before the thread is told to finish: no timer is armed after it, so the
  // thread runs every timer armed before it.
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> closing_fast_{false};  // closing_, for lock-free early checks.
  std::shared_ptr<const ClusterRouting> routing_ ABSL_GUARDED_BY(mu_);
  // Backoff timers armed and not yet run (RetryLater()): Shutdown() cancels them and waits until
  // their commands are completed.
  std::vector<std::shared_ptr<boost::asio::steady_timer>> retry_timers_ ABSL_GUARDED_BY(mu_);
  // Node clients by "host:port": the current primaries and nodes reached by redirects.
  std::map<std::string, std::shared_ptr<RedisClient>> clients_ ABSL_GUARDED_BY(mu_);
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_CLUSTER_CLUSTER_CLIENT_INTERNAL_H_
