#include "tests/testing/redis_cluster.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include <hiredis/hiredis.h>
#include <unistd.h>

#include "tests/testing/child_process.h"

namespace sluice::testing {
namespace {

constexpr int kSlots = 16384;

// redis-cli from PATH (ChildProcess does not search PATH).
absl::StatusOr<std::string> FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir, "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::UnavailableError(absl::StrCat(program, " not found in PATH (package redis-tools)"));
}

// "ip:port@cport[,hostname]" -> port.
bool ParseNodePort(absl::string_view address, int* port) {
  address = address.substr(0, address.find('@'));
  const size_t colon = address.rfind(':');
  return colon != absl::string_view::npos && absl::SimpleAtoi(address.substr(colon + 1), port);
}

// A slot-map and role fingerprint of one node's view, to compare views: "id role [primary] ranges"
// per node, sorted, for nodes in `live_ids` only.
std::string Fingerprint(const std::vector<ClusterNodeInfo>& nodes,
                        const std::set<std::string>& live_ids) {
  std::vector<std::string> lines;
  for (const ClusterNodeInfo& n : nodes) {
    if (live_ids.count(n.id) == 0) continue;
    std::string line = absl::StrCat(n.id, n.primary ? " primary" : " replica-of ", n.primary_id);
    for (const auto& [first, last] : n.slots) absl::StrAppend(&line, " ", first, "-", last);
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  return absl::StrJoin(lines, "\n");
}

std::string InfoField(const std::string& info, absl::string_view field) {
  for (absl::string_view line : absl::StrSplit(info, absl::ByAnyChar("\r\n"), absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, field) && absl::ConsumePrefix(&line, ":")) {
      return std::string(line);
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<std::vector<ClusterNodeInfo>> ParseClusterNodes(const std::string& text) {
  std::vector<ClusterNodeInfo> nodes;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    ClusterNodeInfo node;
    if (f.size() < 8 || !ParseNodePort(f[1], &node.port)) {
      return absl::InvalidArgumentError(absl::StrCat("CLUSTER NODES: cannot parse \"", line, "\""));
    }
    node.id = std::string(f[0]);
    for (absl::string_view flag : absl::StrSplit(f[2], ',')) {
      if (flag == "master") node.primary = true;
      if (flag == "myself") node.myself = true;
      if (flag == "fail" || flag == "fail?") node.failing = true;
    }
    if (f[3] != "-") node.primary_id = std::string(f[3]);
    for (size_t i = 8; i < f.size(); ++i) {
      if (absl::StartsWith(f[i], "[")) continue;  // A migration mark, [slot->-id] / [slot-<-id].
      std::pair<absl::string_view, absl::string_view> range = absl::StrSplit(f[i], '-');
      int first = 0;
      int last = 0;
      if (!absl::SimpleAtoi(range.first, &first) ||
          !absl::SimpleAtoi(range.second.empty() ? range.first : range.second, &last)) {
        return absl::InvalidArgumentError(absl::StrCat("CLUSTER NODES: bad slots \"", f[i], "\""));
      }
      node.slots.emplace_back(first, last);
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

absl::StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::Start(const Options& options) {
  if (options.primaries < 3 || options.replicas_per_primary < 0) {
    // redis-cli --cluster create refuses fewer than 3 primaries.
    return absl::InvalidArgumentError("RedisCluster: needs at least 3 primaries");
  }
  std::unique_ptr<RedisCluster> cluster(new RedisCluster(options));
  if (absl::Status launched = cluster->Launch(); !launched.ok()) return launched;
  if (absl::Status created = cluster->Create(); !created.ok()) return created;
  if (absl::Status healthy = cluster->WaitUntilHealthy(); !healthy.ok()) return healthy;
  return cluster;
}

RedisCluster::~RedisCluster() = default;  // Each RedisServer kills its process.

absl::Status RedisCluster::Launch() {
  const int count = options_.primaries * (1 + options_.replicas_per_primary);
  for (int i = 0; i < count; ++i) {
    absl::Status last;
    std::unique_ptr<RedisServer> node;
    // The bus port is picked apart from the server's: a few tries for the rare collision.
    for (int attempt = 0; attempt < 3 && node == nullptr; ++attempt) {
      absl::StatusOr<int> bus_port = FreeLoopbackPort();
      if (!bus_port.ok()) return bus_port.status();
      RedisServer::Options server_options{
          .config = {
              {"cluster-enabled", "yes"},
              {"cluster-config-file", "nodes.conf"},
              {"cluster-port", absl::StrCat(*bus_port)},
              {"cluster-node-timeout", absl::StrCat(options_.node_timeout.count())},
              // Any replica may take over, however stale.
              {"cluster-replica-validity-factor", "0"},
              // Replicas stay where the test put them.
              {"cluster-allow-replica-migration", "no"},
              // Replicas sync at once, not after 5 s.
              {"repl-diskless-sync-delay", "0"},
          }};
      for (const auto& entry : options_.config) server_options.config.push_back(entry);
      absl::StatusOr<std::unique_ptr<RedisServer>> started = RedisServer::Start(server_options);
      if (started.ok()) {
        node = *std::move(started);
      } else {
        last = started.status();
      }
    }
    if (node == nullptr) return last;
    nodes_.push_back(std::move(node));
  }
  return absl::OkStatus();
}

absl::Status RedisCluster::Create() const {
  absl::StatusOr<std::string> cli = FindInPath("redis-cli");
  if (!cli.ok()) return cli.status();
  std::vector<std::string> argv = {*cli, "--cluster", "create"};
  for (const auto& node : nodes_) argv.push_back(absl::StrCat("127.0.0.1:", node->port()));
  argv.insert(argv.end(),
              {"--cluster-replicas", absl::StrCat(options_.replicas_per_primary), "--cluster-yes"});
  absl::StatusOr<std::pair<int, std::string>> ran = RunToExit(argv, 30'000);
  if (!ran.ok()) return ran.status();
  if (ran->first != 0) {
    return absl::UnavailableError(
        absl::StrCat("redis-cli --cluster create exited with ", ran->first, ": ", ran->second));
  }
  return absl::OkStatus();
}

std::string RedisCluster::Url() const {
  std::vector<std::string> seeds;
  for (const auto& node : nodes_) seeds.push_back(absl::StrCat("127.0.0.1:", node->port()));
  return absl::StrCat("redis-cluster://", absl::StrJoin(seeds, ","));
}

std::vector<int> RedisCluster::Ports() const {
  std::vector<int> ports;
  for (const auto& node : nodes_) ports.push_back(node->port());
  return ports;
}

RedisServer& RedisCluster::Node(int port) {
  for (auto& node : nodes_) {
    if (node->port() == port) return *node;
  }
  std::abort();  // REQUIRES violated: not a port of this cluster.
}

int RedisCluster::FirstLivePort() const {
  for (const auto& node : nodes_) {
    if (dead_.count(node->port()) == 0) return node->port();
  }
  return 0;
}

absl::StatusOr<std::string> RedisCluster::Command(int port,
                                                  const std::vector<std::string>& argv) const {
  for (const auto& node : nodes_) {
    if (node->port() == port) return node->Command(argv);
  }
  return absl::NotFoundError(absl::StrCat("no cluster node on port ", port));
}

absl::StatusOr<std::vector<std::string>> RedisCluster::CommandArray(
    int port, const std::vector<std::string>& argv) const {
  timeval timeout{5, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeout);
  if (c == nullptr || c->err != 0) {
    std::string err = c != nullptr ? c->errstr : "out of memory";
    if (c != nullptr) redisFree(c);
    return absl::UnavailableError(err);
  }
  redisSetTimeout(c, timeout);
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data()));
  absl::StatusOr<std::vector<std::string>> out;
  if (reply == nullptr) {
    out = absl::UnavailableError(c->errstr);
  } else if (reply->type != REDIS_REPLY_ARRAY) {
    out = absl::InternalError(absl::StrCat(argv[0], ": not an array reply",
                                           reply->type == REDIS_REPLY_ERROR ? ": " : "",
                                           reply->type == REDIS_REPLY_ERROR ? reply->str : ""));
  } else {
    out.emplace();
    for (size_t i = 0; i < reply->elements; ++i) {
      out->emplace_back(reply->element[i]->str, reply->element[i]->len);
    }
  }
  if (reply != nullptr) freeReplyObject(reply);
  redisFree(c);
  return out;
}

absl::StatusOr<std::vector<ClusterNodeInfo>> RedisCluster::Nodes(int via_port) const {
  const int port = via_port != 0 ? via_port : FirstLivePort();
  absl::StatusOr<std::string> text = Command(port, {"CLUSTER", "NODES"});
  if (!text.ok()) return text.status();
  if (absl::StartsWith(*text, "ERR:")) return absl::UnavailableError(*text);
  return ParseClusterNodes(*text);
}

absl::StatusOr<std::string> RedisCluster::NodeId(int port) const {
  absl::StatusOr<std::string> id = Command(port, {"CLUSTER", "MYID"});
  if (!id.ok()) return id.status();
  if (absl::StartsWith(*id, "ERR:")) return absl::UnavailableError(*id);
  return id;
}

absl::StatusOr<std::vector<int>> RedisCluster::PrimaryPorts() const {
  absl::StatusOr<std::vector<ClusterNodeInfo>> nodes = Nodes();
  if (!nodes.ok()) return nodes.status();
  std::vector<int> ports;
  for (const ClusterNodeInfo& n : *nodes) {
    if (n.primary && !n.slots.empty() && dead_.count(n.port) == 0) ports.push_back(n.port);
  }
  std::sort(ports.begin(), ports.end());
  return ports;
}

absl::StatusOr<int> RedisCluster::PrimaryForSlot(int slot) const {
  absl::StatusOr<std::vector<ClusterNodeInfo>> nodes = Nodes();
  if (!nodes.ok()) return nodes.status();
  for (const ClusterNodeInfo& n : *nodes) {
    if (!n.primary) continue;
    for (const auto& [first, last] : n.slots) {
      if (slot >= first && slot <= last) return n.port;
    }
  }
  return absl::NotFoundError(absl::StrCat("slot ", slot, " is not assigned"));
}

absl::StatusOr<int> RedisCluster::ReplicaOf(int primary_port) const {
  absl::StatusOr<std::vector<ClusterNodeInfo>> nodes = Nodes();
  if (!nodes.ok()) return nodes.status();
  std::string primary_id;
  for (const ClusterNodeInfo& n : *nodes) {
    if (n.port == primary_port) primary_id = n.id;
  }
  for (const ClusterNodeInfo& n : *nodes) {
    if (!n.primary && n.primary_id == primary_id && dead_.count(n.port) == 0) return n.port;
  }
  return absl::NotFoundError(absl::StrCat("no live replica of ", primary_port));
}

void RedisCluster::Kill(int port) {
  Node(port).Kill();
  dead_.insert(port);
}

absl::Status RedisCluster::Restart(int port) {
  absl::Status restarted = Node(port).Restart();
  if (restarted.ok()) dead_.erase(port);
  return restarted;
}

absl::Status RedisCluster::CheckHealthy() const {
  std::set<std::string> live_ids;
  for (const auto& node : nodes_) {
    if (dead_.count(node->port()) != 0) continue;
    absl::StatusOr<std::string> id = NodeId(node->port());
    if (!id.ok()) return id.status();
    live_ids.insert(*id);
  }
  std::string first_view;
  for (const auto& node : nodes_) {
    const int port = node->port();
    if (dead_.count(port) != 0) continue;
    absl::StatusOr<std::string> info = Command(port, {"CLUSTER", "INFO"});
    if (!info.ok()) return info.status();
    if (InfoField(*info, "cluster_state") != "ok" ||
        InfoField(*info, "cluster_slots_assigned") != absl::StrCat(kSlots)) {
      return absl::UnavailableError(
          absl::StrCat("node ", port, ": cluster_state ", InfoField(*info, "cluster_state"), ", ",
                       InfoField(*info, "cluster_slots_assigned"), " slots assigned"));
    }
    absl::StatusOr<std::vector<ClusterNodeInfo>> nodes = Nodes(port);
    if (!nodes.ok()) return nodes.status();
    std::set<std::string> seen;
    for (const ClusterNodeInfo& n : *nodes) {
      if (live_ids.count(n.id) == 0) continue;
      seen.insert(n.id);
      if (n.failing) {
        return absl::UnavailableError(
            absl::StrCat("node ", port, " sees live node ", n.port, " as failing"));
      }
    }
    if (seen.size() != live_ids.size()) {
      return absl::UnavailableError(absl::StrCat("node ", port, " knows ", seen.size(), " of ",
                                                 live_ids.size(), " live nodes"));
    }
    std::string view = Fingerprint(*nodes, live_ids);
    if (first_view.empty()) {
      first_view = std::move(view);
    } else if (view != first_view) {
      return absl::UnavailableError(absl::StrCat("node ", port, " disagrees on the slot map"));
    }
    absl::StatusOr<std::string> replication = Command(port, {"INFO", "replication"});
    if (!replication.ok()) return replication.status();
    if (InfoField(*replication, "role") == "slave" &&
        InfoField(*replication, "master_link_status") != "up") {
      return absl::UnavailableError(absl::StrCat("replica ", port, ": link to its primary down"));
    }
  }
  return absl::OkStatus();
}

absl::Status RedisCluster::WaitUntilHealthy(std::chrono::milliseconds timeout) const {
  // Real time only as a bound: the cluster converges by gossip between processes.
  absl::Status last;
  const bool healthy = WaitFor(
      [&] {
        last = CheckHealthy();
        return last.ok();
      },
      static_cast<int>(timeout.count()));
  if (healthy) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("cluster not healthy after ", timeout.count(), "ms: ", last.message()));
}

absl::Status RedisCluster::BeginSlotMigration(int slot, int to_port) {
  if (migrations_.count(slot) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("slot ", slot, " is already migrating"));
  }
  absl::StatusOr<int> from_port = PrimaryForSlot(slot);
  if (!from_port.ok()) return from_port.status();
  if (*from_port == to_port) {
    return absl::FailedPreconditionError(absl::StrCat("slot ", slot, " is on ", to_port));
  }
  absl::StatusOr<std::string> from_id = NodeId(*from_port);
  absl::StatusOr<std::string> to_id = NodeId(to_port);
  if (!from_id.ok()) return from_id.status();
  if (!to_id.ok()) return to_id.status();
  // The target first, so that a client sent there by ASK is never refused.
  const std::string s = absl::StrCat(slot);
  for (const auto& [port, argv] : std::vector<std::pair<int, std::vector<std::string>>>{
           {to_port, {"CLUSTER", "SETSLOT", s, "IMPORTING", *from_id}},
           {*from_port, {"CLUSTER", "SETSLOT", s, "MIGRATING", *to_id}}}) {
    absl::StatusOr<std::string> ok = Command(port, argv);
    if (!ok.ok()) return ok.status();
    if (*ok != "OK")
      return absl::InternalError(absl::StrCat("CLUSTER SETSLOT on ", port, ": ", *ok));
  }
  migrations_[slot] = Migration{.from_port = *from_port, .to_port = to_port, .to_id = *to_id};
  return absl::OkStatus();
}

absl::Status RedisCluster::MigrateSlotKeys(int slot, int batch) {
  auto it = migrations_.find(slot);
  if (it == migrations_.end()) {
    return absl::FailedPreconditionError(absl::StrCat("slot ", slot, " is not migrating"));
  }
  const Migration& m = it->second;
  while (true) {
    absl::StatusOr<std::vector<std::string>> keys = CommandArray(
        m.from_port, {"CLUSTER", "GETKEYSINSLOT", absl::StrCat(slot), absl::StrCat(batch)});
    if (!keys.ok()) return keys.status();
    if (keys->empty()) return absl::OkStatus();
    std::vector<std::string> argv = {"MIGRATE", "127.0.0.1", absl::StrCat(m.to_port), "", "0",
                                     "5000",    "KEYS"};
    argv.insert(argv.end(), keys->begin(), keys->end());
    absl::StatusOr<std::string> ok = Command(m.from_port, argv);
    if (!ok.ok()) return ok.status();
    if (*ok != "OK" && *ok != "NOKEY") {
      return absl::InternalError(absl::StrCat("MIGRATE from ", m.from_port, ": ", *ok));
    }
  }
}

absl::Status RedisCluster::FinishSlotMigration(int slot) {
  auto it = migrations_.find(slot);
  if (it == migrations_.end()) {
    return absl::FailedPreconditionError(absl::StrCat("slot ", slot, " is not migrating"));
  }
  const Migration m = it->second;
  migrations_.erase(it);
  absl::StatusOr<std::vector<int>> primaries = PrimaryPorts();
  if (!primaries.ok()) return primaries.status();
  // The target, then the source (which then answers MOVED), then everyone else; gossip would
  // spread it too, this only makes it quick.
  std::vector<int> order = {m.to_port, m.from_port};
  for (int port : *primaries) {
    if (port != m.to_port && port != m.from_port) order.push_back(port);
  }
  for (int port : order) {
    absl::StatusOr<std::string> ok =
        Command(port, {"CLUSTER", "SETSLOT", absl::StrCat(slot), "NODE", m.to_id});
    if (!ok.ok()) return ok.status();
    if (*ok != "OK")
      return absl::InternalError(absl::StrCat("CLUSTER SETSLOT on ", port, ": ", *ok));
  }
  // Replicas learn the new owner by gossip; until every node agrees, a view of the map (as
  // PrimaryForSlot() reads it) may still name the old one.
  return WaitUntilHealthy(std::chrono::seconds(10));
}

absl::Status RedisCluster::MoveSlot(int slot, int to_port) {
  if (absl::Status begun = BeginSlotMigration(slot, to_port); !begun.ok()) return begun;
  if (absl::Status moved = MigrateSlotKeys(slot); !moved.ok()) return moved;
  return FinishSlotMigration(slot);
}

}  // namespace sluice::testing
