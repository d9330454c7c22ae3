#include "src/store/redis/client/cluster/cluster_topology.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

using internal::AbslView;

absl::Status Malformed(std::string_view command, std::string_view what) {
  return absl::InternalError(
      absl::StrCat("redis ", AbslView(command), ": malformed reply: ", AbslView(what)));
}

// The value for `name` in a RESP2 map (a flat array of name, value, name, value...); nullptr if
// absent or the array is not a map.
const RedisReply* Field(const RedisReply& map, std::string_view name) {
  const std::vector<RedisReply>& e = map.elements();
  if (!map.is_array() || e.size() % 2 != 0) return nullptr;
  for (size_t i = 0; i < e.size(); i += 2) {
    if ((e[i].is_string() || e[i].is_status()) && e[i].str() == name) return &e[i + 1];
  }
  return nullptr;
}

std::string_view FieldText(const RedisReply& map, std::string_view name) {
  const RedisReply* value = Field(map, name);
  return value != nullptr && (value->is_string() || value->is_status()) ? value->str()
                                                                        : std::string_view();
}

std::optional<int> FieldInt(const RedisReply& map, std::string_view name) {
  const RedisReply* value = Field(map, name);
  if (value == nullptr || !value->is_integer()) return std::nullopt;
  return static_cast<int>(value->integer());
}

// An address the node announced, or the node that answered when it announced none.
std::string HostOr(std::string_view host, std::string_view asked_host) {
  if (host.empty() || host == "?") return std::string(asked_host);
  return std::string(host);
}

bool ValidPort(int64_t port) { return port > 0 && port <= 65535; }

bool ValidRange(int64_t first, int64_t last) {
  return first >= 0 && last >= first && last < kClusterSlots;
}

// Adds `slots` to the shard of `primary`, creating it if new.
ClusterShard& ShardOf(ClusterMap& map, const RedisNode& primary) {
  for (ClusterShard& shard : map.shards) {
    if (shard.primary == primary) return shard;
  }
  map.shards.push_back(ClusterShard{.primary = primary});
  return map.shards.back();
}

// Checks that no slot has two primaries.
absl::Status CheckNoOverlap(std::string_view command, const ClusterMap& map) {
  absl::StatusOr<std::vector<int16_t>> table = ClusterSlotTable(map);
  if (!table.ok()) return Malformed(command, internal::StdView(table.status().message()));
  return absl::OkStatus();
}

}  // namespace

int ClusterMap::CoveredSlots() const {
  absl::StatusOr<std::vector<int16_t>> table = ClusterSlotTable(*this);
  if (!table.ok()) return 0;
  int covered = 0;
  for (int16_t owner : *table) covered += owner >= 0 ? 1 : 0;
  return covered;
}

absl::StatusOr<std::vector<int16_t>> ClusterSlotTable(const ClusterMap& map) {
  std::vector<int16_t> table(kClusterSlots, -1);
  for (size_t i = 0; i < map.shards.size(); ++i) {
    for (const auto& [first, last] : map.shards[i].slots) {
      if (!ValidRange(first, last)) {
        return absl::InternalError(absl::StrCat("slot range ", first, "-", last, " is invalid"));
      }
      for (int slot = first; slot <= last; ++slot) {
        if (table[static_cast<size_t>(slot)] >= 0 &&
            table[static_cast<size_t>(slot)] != static_cast<int16_t>(i)) {
          return absl::InternalError(absl::StrCat("slot ", slot, " has two primaries"));
        }
        table[static_cast<size_t>(slot)] = static_cast<int16_t>(i);
      }
    }
  }
  return table;
}

absl::StatusOr<ClusterMap> ParseClusterShards(const RedisReply& reply, std::string_view asked_host,
                                              bool tls) {
  constexpr std::string_view kCommand = "CLUSTER SHARDS";
  if (!reply.is_array()) return Malformed(kCommand, "not an array");
  ClusterMap map;
  for (const RedisReply& shard : reply.elements()) {
    const RedisReply* slots = Field(shard, "slots");
    const RedisReply* nodes = Field(shard, "nodes");
    if (slots == nullptr || nodes == nullptr || !slots->is_array() || !nodes->is_array() ||
        slots->elements().size() % 2 != 0) {
      return Malformed(kCommand, "a shard without slots and nodes");
    }
    if (slots->elements().empty()) continue;  // A primary without slots (or a failed one).
    std::optional<RedisNode> primary;
    std::string primary_id;
    std::vector<RedisNode> replicas;
    std::vector<std::string> replica_ids;
    for (const RedisReply& node : nodes->elements()) {
      std::optional<int> port = FieldInt(node, "port");
      if (std::optional<int> tls_port = FieldInt(node, "tls-port"); tls && tls_port.has_value()) {
        port = tls_port;
      }
      if (!port.has_value() || !ValidPort(*port)) return Malformed(kCommand, "a node's port");
      std::string_view host = FieldText(node, "endpoint");
      if (host.empty() || host == "?") host = FieldText(node, "ip");
      RedisNode address{.host = HostOr(host, asked_host), .port = *port};
      const std::string_view role = FieldText(node, "role");
      std::string id(FieldText(node, "id"));
      if (role == "master") {
        if (!primary.has_value()) {
          primary = std::move(address);
          primary_id = std::move(id);
        }
      } else if (FieldText(node, "health") == "online") {
        replicas.push_back(std::move(address));
        replica_ids.push_back(std::move(id));
      }
    }
    if (!primary.has_value()) return Malformed(kCommand, "a shard with slots but no primary");
    ClusterShard& entry = ShardOf(map, *primary);
    if (entry.primary_id.empty()) entry.primary_id = std::move(primary_id);
    for (size_t i = 0; i < slots->elements().size(); i += 2) {
      const RedisReply& first = slots->elements()[i];
      const RedisReply& last = slots->elements()[i + 1];
      if (!first.is_integer() || !last.is_integer() ||
          !ValidRange(first.integer(), last.integer())) {
        return Malformed(kCommand, "a slot range");
      }
      entry.slots.emplace_back(static_cast<int>(first.integer()), static_cast<int>(last.integer()));
    }
    for (size_t i = 0; i < replicas.size(); ++i) {
      entry.replicas.push_back(std::move(replicas[i]));
      entry.replica_ids.push_back(std::move(replica_ids[i]));
    }
  }
  if (absl::Status ok = CheckNoOverlap(kCommand, map); !ok.ok()) return ok;
  return map;
}

absl::StatusOr<ClusterMap> ParseClusterSlots(const RedisReply& reply, std::string_view asked_host) {
  constexpr std::string_view kCommand = "CLUSTER SLOTS";
  if (!reply.is_array()) return Malformed(kCommand, "not an array");
  // [host, port, id, ...]; an unknown endpoint is nil or "?". The id is there since Redis 4.
  auto parse_node = [&](const RedisReply& node, std::string& id) -> std::optional<RedisNode> {
    const std::vector<RedisReply>& e = node.elements();
    if (!node.is_array() || e.size() < 2 || !e[1].is_integer() || !ValidPort(e[1].integer())) {
      return std::nullopt;
    }
    if (!e[0].is_nil() && !e[0].is_string()) return std::nullopt;
    id = e.size() >= 3 && e[2].is_string() ? e[2].str() : std::string();
    return RedisNode{.host = HostOr(e[0].str(), asked_host),
                     .port = static_cast<int>(e[1].integer())};
  };
  ClusterMap map;
  for (const RedisReply& range : reply.elements()) {
    const std::vector<RedisReply>& e = range.elements();
    if (!range.is_array() || e.size() < 3 || !e[0].is_integer() || !e[1].is_integer() ||
        !ValidRange(e[0].integer(), e[1].integer())) {
      return Malformed(kCommand, "a slot range");
    }
    std::string id;
    std::optional<RedisNode> primary = parse_node(e[2], id);
    if (!primary.has_value()) return Malformed(kCommand, "a node");
    ClusterShard& shard = ShardOf(map, *primary);
    if (shard.primary_id.empty()) shard.primary_id = std::move(id);
    shard.slots.emplace_back(static_cast<int>(e[0].integer()), static_cast<int>(e[1].integer()));
    for (size_t i = 3; i < e.size(); ++i) {
      std::optional<RedisNode> replica = parse_node(e[i], id);
      if (!replica.has_value()) return Malformed(kCommand, "a replica");
      bool known = false;
      for (const RedisNode& r : shard.replicas) known = known || r == *replica;
      if (!known) {
        shard.replicas.push_back(*std::move(replica));
        shard.replica_ids.push_back(std::move(id));
      }
    }
  }
  if (absl::Status ok = CheckNoOverlap(kCommand, map); !ok.ok()) return ok;
  return map;
}

}  // namespace sluice
