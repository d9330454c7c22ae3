#include "src/server/store_factory.h"

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "sluice/memory_store.h"
#include "sluice/redis_store.h"
#include "sluice/store_url.h"

namespace sluice::server {

absl::StatusOr<StoreHandles> MakeStore(std::string_view url, const StoreFactoryOptions& options) {
  absl::StatusOr<StoreUrl> parsed = ParseStoreUrl(url);
  if (!parsed.ok()) return parsed.status();
  std::unique_ptr<Store> store;
  std::string description;
  if (parsed->kind == StoreUrl::Kind::kMemory) {
    MemoryStoreOptions memory = options.memory;
    memory.clock = nullptr;
    absl::StatusOr<std::unique_ptr<MemoryStore>> made = MemoryStore::Create(memory);
    if (!made.ok()) return made.status();
    store = *std::move(made);
    description = absl::StrCat("memory (per-instance limits, at most ", memory.max_entries,
                               " entries and ", memory.max_bytes, " bytes)");
  } else {
    // Each descriptor is its own Redis Cluster slot (docs/keys.md), so on a cluster a request
    // with several descriptors is split into one atomic call per slot, as envoyproxy/ratelimit
    // does per descriptor (docs/redis.md, "Keys on Redis Cluster"). One server ignores this.
    RedisStoreOptions redis_options{.url = std::string(url), .cross_slot = CrossSlot::kSplit};
    if (!options.key_prefix.empty()) redis_options.key_prefix = options.key_prefix;
    absl::StatusOr<std::unique_ptr<RedisStore>> redis = RedisStore::Create(redis_options);
    if (!redis.ok()) return redis.status();
    if (options.startup_wait > std::chrono::milliseconds::zero()) {
      if (absl::Status s = (*redis)->WaitForConnection(options.startup_wait); !s.ok()) {
        return absl::UnavailableError(absl::StrCat(
            "redis not reachable within ", options.startup_wait.count(), " ms: ", s.message()));
      }
    } else if (absl::Status s = (*redis)->WaitForConnection(std::chrono::seconds(2)); !s.ok()) {
      // Start-up is not gated on Redis (a crash loop while Redis restarts helps nobody); report it.
      spdlog::warn("redis not reachable yet ({}); checks fail per the failure mode until it is",
                   std::string(s.message()));
    }
    for (const std::string& w : (*redis)->Warnings()) spdlog::warn("redis: {}", w);
    store = *std::move(redis);
    description = parsed->Redacted();
  }
  Store* raw = store.get();
  return StoreHandles{.store = WithFailurePolicy(std::move(store), options.policy),
                      .health_store = raw,
                      .description = std::move(description)};
}

absl::AnyInvocable<StoreState() const> StoreStateSource(const StoreHandles& stores) {
  const FailurePolicyStore* policy = stores.store.get();
  // Each store type's own counters; the health store is the unwrapped one.
  const auto* redis = dynamic_cast<const RedisStore*>(stores.health_store);
  const auto* memory = dynamic_cast<const MemoryStore*>(stores.health_store);
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
