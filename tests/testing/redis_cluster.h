// RedisCluster: a real Redis Cluster for tests, of redis-server processes on free loopback ports.
//
// Start() launches `primaries * (1 + replicas_per_primary)` servers with --cluster-enabled yes
// (each in its own directory, with its own cluster bus port and a short cluster-node-timeout),
// joins them with `redis-cli --cluster create ... --cluster-replicas N --cluster-yes`, and waits
// until every node reports cluster_state:ok, all nodes agree on who serves which slot, and every
// replica is in sync. Tests can then kill a node (SIGKILL), ask which node serves a slot, and move
// slots between primaries (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE), either in
// one go or step by step to leave a slot half-migrated. Everything stops on destruction.
//
// Example:
//   auto cluster = RedisCluster::Start({.primaries = 3, .replicas_per_primary = 1});
//   ASSERT_TRUE(cluster.ok()) << cluster.status();
//   std::string url = (*cluster)->Url();  // "redis-cluster://127.0.0.1:P1,127.0.0.1:P2,..."
//   int port = *(*cluster)->PrimaryForSlot(ClusterHashSlot("{user:1}"));
//
// Thread safety: not thread-safe; drive it from the test's main thread (the servers die with the
// thread that started them, see redis_server.h).
#ifndef SLUICE_TESTS_TESTING_REDIS_CLUSTER_H_
#define SLUICE_TESTS_TESTING_REDIS_CLUSTER_H_

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "tests/testing/redis_server.h"

namespace sluice::testing {

// One line of CLUSTER NODES, as one node sees it.
struct ClusterNodeInfo {
  std::string id = {};
  int port = 0;
  bool primary = false;
  bool myself = false;
  bool failing = false;                         // Flagged fail or fail? (PFAIL).
  std::string primary_id = {};                  // For a replica: its primary's id.
  std::vector<std::pair<int, int>> slots = {};  // Inclusive ranges served (primaries).
};

class RedisCluster {
 public:
  struct Options {
    // Primaries, and replicas of each. Default: 3 and 1.
    int primaries = 3;
    int replicas_per_primary = 1;
    // cluster-node-timeout: how long a node may be unreachable before it is failed over.
    // Default: 1000 ms, so a killed primary's replica takes over within about 2-3 s.
    std::chrono::milliseconds node_timeout{1000};
    // Extra redis.conf directives for every node, e.g. {"cluster-require-full-coverage", "no"}.
    std::vector<std::pair<std::string, std::string>> config = {};
  };

  // RedisCluster::Start()
  //
  // Starts the servers, creates the cluster and waits until it is healthy (WaitUntilHealthy()).
  // Returns Unavailable when a server or redis-cli cannot be started or the cluster never
  // becomes healthy (within about 20 s), with the reason.
  static absl::StatusOr<std::unique_ptr<RedisCluster>> Start(const Options& options);
  static absl::StatusOr<std::unique_ptr<RedisCluster>> Start() { return Start(Options{}); }

  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;
  ~RedisCluster();

  // "redis-cluster://127.0.0.1:P1,...": every node that was started, as seeds.
  std::string Url() const;
  // The ports of every node started, alive or killed.
  std::vector<int> Ports() const;
  // The server on `port`. REQUIRES: a port of Ports().
  RedisServer& Node(int port);

  // RedisCluster::Nodes()
  //
  // Returns CLUSTER NODES as the live node on `via_port` (or, for 0, the first live node) sees it.
  absl::StatusOr<std::vector<ClusterNodeInfo>> Nodes(int via_port = 0) const;

  // RedisCluster::PrimaryPorts()
  //
  // Returns the ports of the primaries that serve slots, in the first live node's view.
  absl::StatusOr<std::vector<int>> PrimaryPorts() const;

  // RedisCluster::PrimaryForSlot()
  //
  // Returns the port of the primary that serves `slot`, in the first live node's view; NotFound
  // for an unassigned slot.
  absl::StatusOr<int> PrimaryForSlot(int slot) const;

  // RedisCluster::ReplicaOf()
  //
  // Returns the port of a live replica of the primary on `primary_port`; NotFound if none.
  absl::StatusOr<int> ReplicaOf(int primary_port) const;

  // RedisCluster::Kill()
  //
  // SIGKILLs the node on `port` and remembers it as dead (it is left out of health checks).
  void Kill(int port);

  // RedisCluster::Restart()
  //
  // Starts the killed node on `port` again, with its cluster state (nodes.conf): it rejoins the
  // cluster, as a replica if its slots were failed over meanwhile. Returns the launch error.
  absl::Status Restart(int port);

  // RedisCluster::WaitUntilHealthy()
  //
  // Waits until every live node says cluster_state:ok with all 16384 slots assigned, all live
  // nodes agree on the slot map and on which nodes are primaries, none of them sees a live node
  // as failing, and every live replica's link to its primary is up. Returns OK, or Unavailable
  // with the last thing that was wrong after `timeout`.
  absl::Status WaitUntilHealthy(std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;

  // RedisCluster::BeginSlotMigration()
  //
  // Marks `slot` IMPORTING on the primary on `to_port` and MIGRATING on its current primary. The
  // source then answers ASK for keys it no longer has. REQUIRES: no migration of `slot` pending,
  // `to_port` a primary that does not serve `slot`.
  absl::Status BeginSlotMigration(int slot, int to_port);

  // RedisCluster::MigrateSlotKeys()
  //
  // MIGRATEs every key of `slot` still on the source, in batches of `batch` keys. REQUIRES:
  // BeginSlotMigration(slot, ...) done and not finished.
  absl::Status MigrateSlotKeys(int slot, int batch = 100);

  // RedisCluster::FinishSlotMigration()
  //
  // Assigns `slot` to the target on the target, the source and every other primary (CLUSTER
  // SETSLOT NODE), so the move is complete, and waits until every node agrees on the new map
  // (WaitUntilHealthy()). REQUIRES: its keys migrated.
  absl::Status FinishSlotMigration(int slot);

  // RedisCluster::MoveSlot()
  //
  // Begin, migrate keys, finish: moves `slot` and its keys to the primary on `to_port`.
  absl::Status MoveSlot(int slot, int to_port);

  // RedisCluster::Command()
  //
  // Runs one command on the node on `port` (see RedisServer::Command()).
  absl::StatusOr<std::string> Command(int port, const std::vector<std::string>& argv) const;

  // RedisCluster::CommandArray()
  //
  // Runs one command whose reply is an array of strings (CLUSTER GETKEYSINSLOT, KEYS) and returns
  // them; Internal for any other reply.
  absl::StatusOr<std::vector<std::string>> CommandArray(int port,
                                                        const std::vector<std::string>& argv) const;

 private:
  struct Migration {
    int from_port = 0;
    int to_port = 0;
    std::string to_id = {};
  };

  explicit RedisCluster(Options options) : options_(std::move(options)) {}
  absl::Status Launch();
  absl::Status Create() const;
  // The first node not killed; 0 if none.
  int FirstLivePort() const;
  absl::Status CheckHealthy() const;
  absl::StatusOr<std::string> NodeId(int port) const;

  Options options_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::set<int> dead_;
  std::map<int, Migration> migrations_;
};

// ParseClusterNodes()
//
// Parses the text of CLUSTER NODES; InvalidArgument for a line it cannot read.
absl::StatusOr<std::vector<ClusterNodeInfo>> ParseClusterNodes(const std::string& text);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_REDIS_CLUSTER_H_
