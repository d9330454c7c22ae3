#include "sluice/open_store.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "sluice/store_url.h"

namespace sluice {
namespace {

absl::StatusOr<std::unique_ptr<Store>> OpenRedis(std::string_view url,
                                                 const OpenStoreOptions& options) {
  RedisStoreOptions redis_options{.url = std::string(url), .cross_slot = options.cross_slot};
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
  return std::unique_ptr<Store>(*std::move(redis));
}

}  // namespace

absl::StatusOr<OpenedStore> OpenStore(std::string_view url, const OpenStoreOptions& options) {
  absl::StatusOr<StoreUrl> parsed = ParseStoreUrl(url);
  if (!parsed.ok()) return parsed.status();
  std::unique_ptr<Store> store;
  std::string description;
  if (parsed->kind == StoreUrl::Kind::kMemory) {
    MemoryStoreOptions memory = options.memory;
    memory.clock = options.policy.clock;
    absl::StatusOr<std::unique_ptr<MemoryStore>> made = MemoryStore::Create(memory);
    if (!made.ok()) return made.status();
    store = *std::move(made);
    description = absl::StrCat("memory (per-instance limits, at most ", memory.max_entries,
                               " entries and ", memory.max_bytes, " bytes)");
  } else {
    absl::StatusOr<std::unique_ptr<Store>> redis = OpenRedis(url, options);
    if (!redis.ok()) return redis.status();
    store = *std::move(redis);
    description = parsed->Redacted();
  }
  Store* backend = store.get();
  return OpenedStore{.store = WithFailurePolicy(std::move(store), options.policy),
                     .backend = backend,
                     .description = std::move(description)};
}

}  // namespace sluice
