// Stores: sluiced's decision store, as the settings name it. Each store URL is its own OpenStore()
// chain (include/sluice/open_store.h): its own failure policy in front of the memory or Redis
// store. With a per-second store (REDIS_PERSECOND, --per-second-store), a PerSecondStore
// (src/store/split/per_second_store.h) splits each decision between the two chains: per-second
// limits to the one, the rest to the main one.
//
// Example:
//   absl::StatusOr<Stores> stores = MakeStores(settings);
//   if (!stores.ok()) return stores.status();
//   RateLimitService service(stores->decisions(), observers, options);
//
// Thread safety: the stores are thread-safe (store.h); Stores itself is built once and not
// changed.
#ifndef SLUICE_SERVER_STORES_H_
#define SLUICE_SERVER_STORES_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/open_store.h"
#include "sluice/store.h"

#include "src/server/settings.h"
#include "src/store/split/per_second_store.h"

namespace sluice::server {

struct Stores {
  OpenedStore main;
  std::optional<OpenedStore> per_second;
  // Set when `per_second` is.
  std::unique_ptr<PerSecondStore> split;

  // Where decisions go: the split when there is one, else the main chain.
  Store& decisions() { return split != nullptr ? *split : static_cast<Store&>(*main.store); }
  // What /healthcheck probes: each chain's own store, behind no policy.
  std::vector<Store*> health() {
    std::vector<Store*> out = {main.backend};
    if (per_second.has_value()) out.push_back(per_second->backend);
    return out;
  }
};

// MakeStores()
//
// Opens the stores `settings` name (settings.store, settings.per_second_store) and logs what they
// are. Returns InvalidArgument for a bad failure mode or store URL (the message names the
// setting), or Unavailable when Redis must answer at start and does not.
absl::StatusOr<Stores> MakeStores(const ServerSettings& settings);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_STORES_H_
