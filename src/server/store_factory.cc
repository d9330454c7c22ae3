#include "src/server/store_factory.h"

#include <utility>

#include "sluice/memory_store.h"
#include "sluice/open_store.h"
#include "sluice/redis_store.h"

namespace sluice::server {

absl::StatusOr<StoreHandles> MakeStore(std::string_view url, const StoreFactoryOptions& options) {
  MemoryStoreOptions memory = options.memory;
  memory.clock = nullptr;
  // Each descriptor is its own Redis Cluster slot (docs/keys.md), so on a cluster a request with
  // several descriptors is split into one atomic call per slot, as envoyproxy/ratelimit does per
  // descriptor (docs/redis.md, "Keys on Redis Cluster"). One server ignores this.
  absl::StatusOr<OpenedStore> opened = OpenStore(url, {.policy = options.policy,
                                                       .memory = memory,
                                                       .key_prefix = options.key_prefix,
                                                       .cross_slot = CrossSlot::kSplit,
                                                       .startup_wait = options.startup_wait});
  if (!opened.ok()) return opened.status();
  return StoreHandles{.store = std::move(opened->store),
                      .health_store = opened->backend,
                      .description = std::move(opened->description)};
}

}  // namespace sluice::server
