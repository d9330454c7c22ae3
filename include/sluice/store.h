// Store: where limit state lives, and the atomic check-and-update on it.
//
// A Store applies one decision atomically: the algorithm reads the state under a key, decides, and
// records the cost, with no other decision on that key in between. Implementations: the embedded
// memory store (memory_store.h) and the Redis store (redis_store.h), where every check is one Lua
// script and time comes from Redis.
//
// Keys are opaque to the store's caller-facing contract: two checks with equal keys and equal
// algorithms share state. Reusing one key with a different algorithm or limit is allowed but the
// state is then interpreted under the new limit (see docs/algorithms.md).
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, MemoryStore::Create({}));
//   absl::StatusOr<Decision> d = store->Check("user:42", Limit{.limit = 10}, 1);
//   if (d.ok() && !d->allowed) { /* answer 429 */ }
//
// Errors: InvalidArgument for a bad limit, cost or key (nothing is recorded); Unavailable when the
// store cannot be reached; DeadlineExceeded when it did not answer in time (the outcome is unknown
// and the call is never resent); Internal for a protocol or script bug.
//
// Thread safety: every method may be called concurrently from any thread.
#ifndef SLUICE_STORE_H_
#define SLUICE_STORE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

namespace sluice {

// One (key, limit, cost) triple of a multi-limit check.
struct LimitCheck {
  std::string key;
  Limit limit;
  // Units to record; 0 is a peek. REQUIRES: 0 <= cost <= kMaxCost.
  int64_t cost = 1;
};

// The outcome of an all-or-nothing check of several limits.
struct [[nodiscard]] MultiDecision {
  // True when every check passed, in which case every cost was recorded. When false, nothing was
  // recorded: each denied check has allowed == false, and each check that would have passed reports
  // the state as a peek (cost 0) sees it.
  bool allowed = false;
  // One decision per check, in order.
  std::vector<Decision> decisions{};
};

class Store {
 public:
  // Completion callbacks. Each async method says whether it may run `done` inline on the caller's
  // stack; `done` is called exactly once.
  using DecisionCallback = absl::AnyInvocable<void(absl::StatusOr<Decision>) &&>;
  using MultiDecisionCallback = absl::AnyInvocable<void(absl::StatusOr<MultiDecision>) &&>;

  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;

  // Store::Check()
  //
  // Applies `cost` units against `limit` under `key` atomically and returns the decision.
  virtual absl::StatusOr<Decision> Check(std::string_view key, const Limit& limit,
                                         int64_t cost) = 0;

  // Store::CheckAsync()
  //
  // As Check(), completing through `done`.
  virtual void CheckAsync(std::string_view key, const Limit& limit, int64_t cost,
                          DecisionCallback done) = 0;

  // Store::CheckAll()
  //
  // Decides every check in `checks` as one atomic step: either all pass and all costs are recorded,
  // or none is recorded. An empty `checks` is InvalidArgument.
  virtual absl::StatusOr<MultiDecision> CheckAll(std::span<const LimitCheck> checks) = 0;

  // Store::CheckAllAsync()
  //
  // As CheckAll(), completing through `done`.
  virtual void CheckAllAsync(std::span<const LimitCheck> checks, MultiDecisionCallback done) = 0;

  // Store::Name()
  //
  // Returns a short name for logs and metrics: "memory" or "redis".
  virtual std::string_view Name() const = 0;

  // Store::AnswersInline()
  //
  // True when the store never waits on I/O: its synchronous methods return at once and its
  // asynchronous ones complete `done` before they return (the memory store). A caller on a thread
  // that must not block may then use the synchronous methods, and skip the state an asynchronous
  // completion needs. Default: false.
  virtual bool AnswersInline() const { return false; }
};

}  // namespace sluice

#endif  // SLUICE_STORE_H_
