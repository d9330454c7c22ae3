#include "src/server/stores.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "sluice/failure_policy.h"

namespace sluice::server {

absl::StatusOr<Stores> MakeStores(const ServerSettings& s) {
  absl::StatusOr<FailureMode> mode = ParseFailureMode(s.failure_mode);
  if (!mode.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--failure-mode: ", mode.status().message()));
  }
  // Each descriptor is its own Redis Cluster slot (docs/keys.md), so on a cluster a request with
  // several descriptors is split into one atomic call per slot, as envoyproxy/ratelimit does per
  // descriptor (docs/redis.md, "Keys on Redis Cluster"). One server ignores this.
  const OpenStoreOptions options{
      .policy = FailurePolicy{.mode = *mode,
                              .expected_instances = s.expected_instances,
                              .divide_by_leaseholders = s.divide_by_leaseholders},
      .memory = MemoryStoreOptions{.max_bytes = s.memory_store_max_bytes},
      .key_prefix = s.key_prefix,
      .cross_slot = CrossSlot::kSplit,
      .startup_wait = s.redis_startup_max_elapsed};
  Stores stores;
  absl::StatusOr<OpenedStore> main = OpenStore(s.store, options);
  if (!main.ok()) {
    return absl::Status(main.status().code(), absl::StrCat("--store: ", main.status().message()));
  }
  stores.main = *std::move(main);
  spdlog::info("store: {} (failure mode {})", stores.main.description, s.failure_mode);
  if (!s.per_second_store.empty()) {
    absl::StatusOr<OpenedStore> per_second = OpenStore(s.per_second_store, options);
    if (!per_second.ok()) {
      return absl::Status(per_second.status().code(),
                          absl::StrCat("--per-second-store: ", per_second.status().message()));
    }
    stores.per_second = *std::move(per_second);
    stores.split = std::make_unique<PerSecondStore>(*stores.main.store, *stores.per_second->store);
    spdlog::info("per-second store: {}", stores.per_second->description);
  }
  return stores;
}

}  // namespace sluice::server
