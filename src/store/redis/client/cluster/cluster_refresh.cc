// ClusterClient: refreshing the slot map, on the cluster thread. See cluster_client.h.
//
// One refresh at a time: requests made while one runs are folded into one more after it, and
// refreshes are at least min_refresh_gap apart. A refresh asks the nodes it knows in turn (the
// current primaries, their replicas, then the endpoint's seeds) until one answers with a map that
// serves every slot; failing that, it installs the most complete map it was given.
#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include <boost/asio/post.hpp>

#include "sluice/clock.h"

#include "src/store/redis/client/cluster/cluster_client_internal.h"
#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/store/redis/client/redis_error.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

ClusterTimePoint Now() { return Clock::Real().Now(); }

void AddUnique(std::vector<RedisNode>& nodes, const RedisNode& node) {
  if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
}

}  // namespace

void ClusterClient::Impl::RequestRefresh() {
  if (closing_fast_.load(std::memory_order_relaxed)) return;
  if (refresh_posted_.exchange(true, std::memory_order_acq_rel)) return;  // Already asked.
  boost::asio::post(io_, [this, self = shared_from_this()] {
    refresh_posted_.store(false, std::memory_order_release);
    MaybeRefresh();
  });
}

void ClusterClient::Impl::ArmPeriodicRefresh() {
  periodic_timer_.expires_after(options_.refresh_interval);
  periodic_timer_.async_wait(
      [this, self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec || closing_fast_.load(std::memory_order_relaxed)) return;
        SweepRetired();
        MaybeRefresh();
        ArmPeriodicRefresh();
      });
}

void ClusterClient::Impl::MaybeRefresh() {
  if (closing_fast_.load(std::memory_order_relaxed)) return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  const ClusterTimePoint earliest = last_refresh_end_ + options_.min_refresh_gap;
  if (last_refresh_end_ != ClusterTimePoint{} && Now() < earliest) {
    if (!gap_timer_armed_) {
      gap_timer_armed_ = true;
      gap_timer_.expires_at(earliest);
      gap_timer_.async_wait([this, self = shared_from_this()](const boost::system::error_code& ec) {
        gap_timer_armed_ = false;
        if (!ec) MaybeRefresh();
      });
    }
    return;
  }
  StartRefresh();
}

void ClusterClient::Impl::StartRefresh() {
  refreshing_ = true;
  refresh_again_ = false;
  best_map_.reset();
  refresh_error_ = absl::OkStatus();
  candidates_.clear();
  next_candidate_ = 0;
  if (std::shared_ptr<const ClusterRouting> routing = Snapshot(); routing != nullptr) {
    for (const RedisNode& node : routing->candidates) AddUnique(candidates_, node);
  }
  for (const RedisNode& seed : endpoint_.nodes) AddUnique(candidates_, seed);
  // Nodes with a ready connection first: a dead primary's client would make the query wait for a
  // connection attempt (up to connect_timeout where a host black-holes packets).
  std::vector<bool> ready(candidates_.size(), false);
  {
    internal::MutexLock lock(&mu_);
    for (size_t i = 0; i < candidates_.size(); ++i) {
      auto it = clients_.find(RedisNodeName(candidates_[i]));
      ready[i] = it != clients_.end() && it->second->Stats().connections_ready > 0;
    }
  }
  std::vector<RedisNode> ordered;
  ordered.reserve(candidates_.size());
  for (const bool want : {true, false}) {
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (ready[i] == want) ordered.push_back(candidates_[i]);
    }
  }
  candidates_ = std::move(ordered);
  TryNextCandidate();
}

void ClusterClient::Impl::TryNextCandidate() {
  asked_client_.reset();  // On this thread: a client made for the purpose ends here.
  if (next_candidate_ >= candidates_.size()) {
    FinishRefresh();
    return;
  }
  const RedisNode node = candidates_[next_candidate_++];
  {
    internal::MutexLock lock(&mu_);
    auto it = clients_.find(RedisNodeName(node));
    if (it != clients_.end()) asked_client_ = it->second;
  }
  if (asked_client_ == nullptr) {
    absl::StatusOr<std::unique_ptr<RedisClient>> made = MakeNodeClient(node, KnownNodeId(node));
    if (!made.ok()) {
      refresh_error_ = made.status();
      TryNextCandidate();
      return;
    }
    asked_client_ = *std::move(made);
  }
  AskForMap(node);
}

void ClusterClient::Impl::AskForMap(const RedisNode& node) {
  const bool slots_command = use_cluster_slots_;
  // A new client connects first: give the query the connect timeout too.
  const std::chrono::milliseconds timeout =
      options_.node.connect_timeout + options_.node.command_timeout;
  asked_client_->Send(slots_command ? RedisCommand::Format({"CLUSTER", "SLOTS"})
                                    : RedisCommand::Format({"CLUSTER", "SHARDS"}),
                      timeout,
                      [weak = weak_from_this(), node = node,
                       slots_command](absl::StatusOr<RedisReply> reply) mutable {
                        std::shared_ptr<Impl> self = weak.lock();
                        if (self == nullptr) return;
                        // Handled in a handler of its own on the cluster thread: a reply refused
                        // up front arrives inline, inside AskForMap(). The handler holds the Impl.
                        boost::asio::io_context& io = self->io_;
                        boost::asio::post(io, [self = std::move(self), node = std::move(node),
                                               slots_command, reply = std::move(reply)]() mutable {
                          self->OnMapReply(node, slots_command, std::move(reply));
                        });
                      });
}

void ClusterClient::Impl::OnMapReply(const RedisNode& node, bool slots_command,
                                     absl::StatusOr<RedisReply> reply) {
  if (closing_fast_.load(std::memory_order_relaxed)) {
    refreshing_ = false;
    asked_client_.reset();
    return;
  }
  if (!reply.ok()) {
    refresh_error_ = reply.status();
    TryNextCandidate();
    return;
  }
  if (reply->is_error()) {
    if (!slots_command && absl::StrContains(absl::AsciiStrToLower(internal::AbslView(reply->str())),
                                            "unknown subcommand")) {
      // Redis before 7 has no CLUSTER SHARDS: ask the same node with CLUSTER SLOTS, from now on.
      use_cluster_slots_ = true;
      AskForMap(node);
      return;
    }
    refresh_error_ = ReplyErrorToStatus(slots_command ? "CLUSTER SLOTS" : "CLUSTER SHARDS", *reply);
    TryNextCandidate();
    return;
  }
  absl::StatusOr<ClusterMap> map = slots_command
                                       ? ParseClusterSlots(*reply, node.host)
                                       : ParseClusterShards(*reply, node.host, endpoint_.tls);
  if (!map.ok()) {
    refresh_error_ = map.status();
    TryNextCandidate();
    return;
  }
  const int covered = map->CoveredSlots();
  if (covered == kClusterSlots) {
    best_map_ = *std::move(map);
    next_candidate_ = candidates_.size();  // Complete: no need to ask anyone else.
  } else if (!best_map_.has_value() || covered > best_map_->CoveredSlots()) {
    // A node that sees slots unserved (a failover under way); another may know better.
    best_map_ = *std::move(map);
  }
  TryNextCandidate();
}

void ClusterClient::Impl::FinishRefresh() {
  asked_client_.reset();
  if (best_map_.has_value()) {
    Install(*best_map_);
    best_map_.reset();
  } else {
    refresh_failures_.fetch_add(1, std::memory_order_relaxed);
    {
      internal::MutexLock lock(&mu_);
      last_error_ = absl::UnavailableError(
          absl::StrCat("redis cluster ", endpoint_.Redacted(), ": no node answered with a slot map",
                       refresh_error_.ok() ? "" : ": ", refresh_error_.message()));
    }
    changed_.notify_all();
  }
  refreshing_ = false;
  last_refresh_end_ = Now();
  SweepRetired();
  if (refresh_again_) MaybeRefresh();
}

void ClusterClient::Impl::Install(const ClusterMap& map) {
  absl::StatusOr<std::vector<int16_t>> table = ClusterSlotTable(map);
  if (!table.ok()) return;  // The parsers have checked this already.
  auto routing = std::make_shared<ClusterRouting>();
  routing->slot_owner = *std::move(table);
  std::vector<std::shared_ptr<RedisClient>> new_primaries;
  // Clients for primaries not known yet are made before taking mu_: making one starts a thread,
  // and routing callers (and I/O threads following redirects) must not wait for that.
  std::map<std::string, std::shared_ptr<RedisClient>> made_here;
  absl::Status error;
  {
    std::vector<const ClusterShard*> missing;
    {
      internal::MutexLock lock(&mu_);
      for (const ClusterShard& shard : map.shards) {
        // A client that checks another id (or none: a seed's, a redirect's made before the map
        // knew the node) is not this node's: it is replaced.
        auto it = clients_.find(RedisNodeName(shard.primary));
        if (it == clients_.end() || it->second->ClusterNodeId() != shard.primary_id) {
          missing.push_back(&shard);
        }
      }
    }
    for (const ClusterShard* shard : missing) {
      absl::StatusOr<std::unique_ptr<RedisClient>> made =
          MakeNodeClient(shard->primary, shard->primary_id);
      if (made.ok()) {
        made_here.emplace(RedisNodeName(shard->primary), *std::move(made));
      } else {
        error = made.status();
      }
    }
  }
  {
    internal::MutexLock lock(&mu_);
    if (closing_) {
      for (auto& [key, client] : made_here) retired_.push_back(std::move(client));
      return;
    }
    std::map<std::string, std::shared_ptr<RedisClient>> next;
    for (const ClusterShard& shard : map.shards) {
      const std::string key = RedisNodeName(shard.primary);
      std::shared_ptr<RedisClient> client;
      // A client made meanwhile by a redirect for this node id wins; ours is retired unused.
      if (auto it = clients_.find(key);
          it != clients_.end() && it->second->ClusterNodeId() == shard.primary_id) {
        client = it->second;
      } else if (auto mine = made_here.find(key); mine != made_here.end()) {
        client = std::move(mine->second);
      }
      if (client != nullptr) next.emplace(key, client);
      routing->primaries.push_back(std::move(client));
      routing->addresses.push_back(shard.primary);
      AddUnique(routing->candidates, shard.primary);
    }
    for (const ClusterShard& shard : map.shards) {
      for (const RedisNode& replica : shard.replicas) AddUnique(routing->candidates, replica);
      if (!shard.primary_id.empty()) {
        routing->node_ids.emplace(RedisNodeName(shard.primary), shard.primary_id);
      }
      for (size_t i = 0; i < shard.replicas.size() && i < shard.replica_ids.size(); ++i) {
        if (!shard.replica_ids[i].empty()) {
          routing->node_ids.emplace(RedisNodeName(shard.replicas[i]), shard.replica_ids[i]);
        }
      }
    }
    for (int16_t owner : routing->slot_owner) {
      if (owner >= 0 && routing->primaries[static_cast<size_t>(owner)] != nullptr) {
        ++routing->covered_slots;
      }
    }
    routing->complete = routing->covered_slots == kClusterSlots;
    // Clients of nodes that are no longer primaries (failed over, or only reached by a redirect)
    // are destroyed on this thread once nothing else holds them (SweepRetired()).
    for (auto& [key, client] : clients_) {
      // Also a client replaced by one checking the node's id (same address, another node).
      if (auto it = next.find(key); it == next.end() || it->second != client) {
        retired_.push_back(std::move(client));
      }
    }
    for (auto& [key, client] : made_here) {
      if (client != nullptr) retired_.push_back(std::move(client));
    }
    for (const std::shared_ptr<RedisClient>& client : routing->primaries) {
      if (client == nullptr) continue;
      const bool known =
          routing_ != nullptr && std::find(routing_->primaries.begin(), routing_->primaries.end(),
                                           client) != routing_->primaries.end();
      if (!known) new_primaries.push_back(client);
    }
    clients_ = std::move(next);
    routing_ = std::move(routing);
    last_error_ = error;
  }
  refreshes_.fetch_add(1, std::memory_order_relaxed);
  changed_.notify_all();
  NotifyPrimaries(new_primaries);
}

void ClusterClient::Impl::NotifyPrimaries(
    const std::vector<std::shared_ptr<RedisClient>>& primaries) {
  if (primaries.empty()) return;
  internal::MutexLock lock(&listener_mu_);
  if (!listener_) return;
  for (const std::shared_ptr<RedisClient>& primary : primaries) listener_(primary);
}

void ClusterClient::Impl::SweepRetired() {
  // A retired client held only here can no longer be reached by any other thread (neither the
  // map nor clients_ has it), so destroying it here, off every I/O thread, is safe.
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [](const std::shared_ptr<RedisClient>& client) {
                                  return client.use_count() == 1;
                                }),
                 retired_.end());
}

}  // namespace sluice
