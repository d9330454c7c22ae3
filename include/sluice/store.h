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
//   SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<MemoryStore> store, MemoryStore::Create({}));
//   Limit per_user{.limit = 100, .period = std::chrono::minutes(1)};
//   absl::StatusOr<Decision> d = store->Check("user:42", per_user);
//   if (d.ok() && !d->allowed) { /* answer 429 */ }
//
// A decorator (a failure policy, a cache in front of the store) derives from StoreWrapper
// (store_wrapper.h) and overrides Decide() alone.
//
// Errors: InvalidArgument for a bad limit, cost or key (nothing is recorded); Unavailable when the
// store cannot be reached; DeadlineExceeded when it did not answer in time (the outcome is unknown
// and the call is never resent); Internal for a protocol or script bug.
//
// Thread safety: every method may be called concurrently from any thread; an implementation's
// Decide() must allow that.
#ifndef SLUICE_STORE_H_
#define SLUICE_STORE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
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
  // Count rejected hits, as envoyproxy/ratelimit does (docs/algorithms.md, "Counting rejected
  // hits"): the cost is recorded whether or not the check passes, and the check passes iff the
  // count after it is at most the limit (a 0-cost check: iff the count is). A denial still reports
  // the remaining it found. Fixed window only, and
  // only as the single check of a call: stores refuse it otherwise (InvalidArgument).
  // Default: false (a denied check records nothing).
  bool count_rejected = false;
  // A credit: gives back `cost` units that an earlier check charged (a refund; Envoy's
  // is_negative_hits), never below empty and never creating state (docs/algorithms.md,
  // "Credits"). Always allowed; its decision reports the state after it. Not with
  // count_rejected. Default: false.
  bool refund = false;
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

// ValidateCheck()
//
// Returns OK when `key` is non-empty and `limit` and `cost` are valid, else InvalidArgument.
absl::Status ValidateCheck(std::string_view key, const Limit& limit, int64_t cost);

// ValidateChecks()
//
// ValidateCheck() for each element; also InvalidArgument when `checks` is empty, or when a check
// with count_rejected is not a fixed window or not the only check.
absl::Status ValidateChecks(std::span<const LimitCheck> checks);

class StoreWrapper;

// A store implements one primitive, Decide(); the four ways to call it (one check or several,
// blocking or not) are the non-virtual conveniences below, which validate the input once, here,
// so that no store and no decorator repeats it.
class Store {
 public:
  // Completion callbacks. `done` is called exactly once: inline, before the call returns, when
  // the input is invalid or the store answers inline (AnswersInline()), else on the store's
  // thread.
  using DecisionCallback = absl::AnyInvocable<void(absl::StatusOr<Decision>) &&>;
  using MultiDecisionCallback = absl::AnyInvocable<void(absl::StatusOr<MultiDecision>) &&>;

  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;

  // Store::Check()
  //
  // Applies `cost` units against `limit` under `key` atomically and returns the decision;
  // InvalidArgument for a bad key, limit or cost (the store is not asked).
  absl::StatusOr<Decision> Check(std::string_view key, const Limit& limit, int64_t cost = 1);

  // Store::Refund()
  //
  // Gives back `units` units that earlier checks charged under `key` and `limit` (a credit,
  // LimitCheck::refund): never below empty, never creating state, always allowed; the decision
  // reports what remains after it. InvalidArgument as Check().
  absl::StatusOr<Decision> Refund(std::string_view key, const Limit& limit, int64_t units);

  // Store::CheckAsync()
  //
  // As Check(), completing through `done`.
  void CheckAsync(std::string_view key, const Limit& limit, int64_t cost, DecisionCallback done);

  // Store::CheckAll()
  //
  // Decides every check in `checks` as one atomic step: either all pass and all costs are recorded,
  // or none is recorded. An empty `checks`, or any invalid check, is InvalidArgument.
  absl::StatusOr<MultiDecision> CheckAll(std::span<const LimitCheck> checks);

  // Store::CheckAllAsync()
  //
  // As CheckAll(), completing through `done`.
  void CheckAllAsync(std::span<const LimitCheck> checks, MultiDecisionCallback done);

  // Store::Name()
  //
  // Returns a short name for logs and metrics: "memory" or "redis".
  virtual std::string_view Name() const = 0;

  // Store::AnswersInline()
  //
  // True when the store never waits on I/O: Decide() completes `done` before it returns (the
  // memory store). A caller on a thread that must not block may then use the synchronous methods,
  // and skip the state an asynchronous completion needs. Default: false.
  virtual bool AnswersInline() const { return false; }

 protected:
  // Store::Decide()
  //
  // The primitive: decides `checks` as one atomic step (as CheckAll() says) and calls `done`
  // exactly once, with one decision per check, in order. The checks are valid and there is at
  // least one (the caller validated them); they stay valid until Decide() returns, so a store
  // that needs them later copies them. A store with a cheaper path for one check takes it here,
  // the one place that knows.
  virtual void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) = 0;

  // Store::DecideLocally()
  //
  // Decides `checks` as Decide() would, but only when the store can do so from memory without
  // any I/O (a lease in front of Redis); returns nullopt, having recorded nothing, otherwise. A
  // failure policy asks it while its breaker keeps the store itself from being called, so that
  // what can still be decided exactly is. REQUIRES: as Decide(). Default: nullopt.
  virtual std::optional<MultiDecision> DecideLocally(std::span<const LimitCheck> checks) {
    (void)checks;
    return std::nullopt;
  }

  // Store::SharingInstances()
  //
  // How many instances (this one included) the store last saw sharing its limits, or nullopt
  // when it does not know: a Redis store with leases counts the instances that announced
  // themselves as leaseholders (docs/redis.md, "Leases"). A failure policy may divide each limit
  // by it during an outage (FailurePolicy::divide_by_leaseholders). Default: nullopt.
  virtual std::optional<int64_t> SharingInstances() const { return std::nullopt; }

 private:
  friend class StoreWrapper;

  // Decide(), waited for. REQUIRES: `checks` validated.
  absl::StatusOr<MultiDecision> DecideAndWait(std::span<const LimitCheck> checks);
};

}  // namespace sluice

#endif  // SLUICE_STORE_H_
