// MakeStore(): turns a --store URL and a failure policy into the store sluiced uses, through the
// library's OpenStore() (sluice/open_store.h), with sluiced's choices: cross-slot checks split.
#ifndef SLUICE_SERVER_STORE_FACTORY_H_
#define SLUICE_SERVER_STORE_FACTORY_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"
#include "sluice/store.h"

namespace sluice::server {

struct StoreHandles {
  // What decisions go through: the store wrapped with its failure policy.
  std::unique_ptr<FailurePolicyStore> store;
  // The unwrapped store, for health checks. Owned by `store`.
  Store* health_store = nullptr;
  // For logs; never contains a password.
  std::string description;
};

struct StoreFactoryOptions {
  FailurePolicy policy{};
  // The memory store's bounds (its clock is ignored).
  MemoryStoreOptions memory{};
  // Redis: the prefix of every key (CACHE_KEY_PREFIX); empty keeps RedisStoreOptions' default.
  std::string key_prefix{};
  // Redis: how long to wait for a first connection. 0 waits 2 s and only warns, so that a Redis
  // restarting does not crash-loop sluiced; above 0, no connection in time is an error (the
  // reference's REDIS_STARTUP_MAX_ELAPSED_TIME). Default: 0.
  std::chrono::milliseconds startup_wait{0};
};

// MakeStore()
//
// Returns the store for `url` ("memory", "redis://...", "rediss://...", ...), or InvalidArgument
// for a bad URL, key prefix or memory option; Unavailable when the store cannot be set up, or when
// `startup_wait` is set and Redis does not answer within it.
absl::StatusOr<StoreHandles> MakeStore(std::string_view url, const StoreFactoryOptions& options);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_STORE_FACTORY_H_
