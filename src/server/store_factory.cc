#include "src/server/store_factory.h"

#include "absl/strings/str_cat.h"
#include "sluice/memory_store.h"
#include "sluice/store_url.h"

namespace sluice::server {

absl::StatusOr<StoreHandles> MakeStore(std::string_view url, const FailurePolicy& policy) {
  absl::StatusOr<StoreUrl> parsed = ParseStoreUrl(url);
  if (!parsed.ok()) return parsed.status();
  std::unique_ptr<Store> store;
  std::string description;
  if (parsed->kind == StoreUrl::Kind::kMemory) {
    absl::StatusOr<std::unique_ptr<MemoryStore>> memory = MemoryStore::Create({});
    if (!memory.ok()) return memory.status();
    store = *std::move(memory);
    description = "memory (per-instance limits)";
  } else {
    return absl::UnimplementedError("redis store not built yet");
  }
  Store* raw = store.get();
  return StoreHandles{.store = WithFailurePolicy(std::move(store), policy),
                      .health_store = raw,
                      .description = std::move(description)};
}

}  // namespace sluice::server
