// OpenStore(): the store a URL names, ready to decide behind its failure policy. The one place
// that turns `memory`, `redis://...`, `redis-cluster://...` or `redis-sentinel://...` (store_url.h)
// into a store chain; sluiced and the example API server both open their stores here.
//
// The chain is the memory or Redis store wrapped by WithFailurePolicy() (failure_policy.h): a
// store that hangs trips the breaker instead of costing every caller its deadline, and its
// failures are logged (throttled). A Redis store waits for its first connection as the options
// say.
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(OpenedStore opened, OpenStore("redis://10.0.0.5:6379"));
//   std::clog << "store: " << opened.description << "\n";  // never shows a password
//   absl::StatusOr<Decision> d = opened.store->Check("user:42", Limit{.limit = 10});
//
// Thread safety: OpenStore() is thread-safe; the store is as store.h says.
#ifndef SLUICE_OPEN_STORE_H_
#define SLUICE_OPEN_STORE_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"
#include "sluice/redis_store.h"
#include "sluice/store.h"

namespace sluice {

struct OpenStoreOptions {
  // What answers while the store fails, and the breaker. Default: kPropagate (the error goes to
  // the caller) with the breaker on.
  FailurePolicy policy{};
  // The memory store's bounds; its clock is the policy's.
  MemoryStoreOptions memory{};
  // Redis: the prefix of every key; empty keeps RedisStoreOptions' default.
  std::string key_prefix{};
  // Redis Cluster: what a CheckAll() over several slots does. Default: kRefuse.
  CrossSlot cross_slot = CrossSlot::kRefuse;
  // Redis: how long to wait for a first connection. Zero waits up to 2 s and only warns (a Redis
  // that restarts must not crash-loop its callers); above zero, no connection in time is
  // Unavailable. Default: 0.
  std::chrono::milliseconds startup_wait{0};
};

struct OpenedStore {
  // What decisions go through: the store behind its failure policy.
  std::unique_ptr<FailurePolicyStore> store;
  // The store itself (a MemoryStore or a RedisStore), for health checks and its own counters.
  // Owned by `store`.
  Store* backend = nullptr;
  // The store for logs: "memory (...)" or the URL with its password redacted.
  std::string description;
};

// OpenStore()
//
// Returns the store chain for `url`, or InvalidArgument for a bad URL, key prefix or memory
// option; Unavailable when `startup_wait` is set and Redis does not answer within it.
absl::StatusOr<OpenedStore> OpenStore(std::string_view url, const OpenStoreOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_OPEN_STORE_H_
