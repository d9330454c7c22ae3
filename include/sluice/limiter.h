// Limiter: the facade applications call.
//
// A Limiter validates input once, at the edge, and forwards to a Store; it does not own limit
// state. It is cheap to create and holds a non-owning reference to the store, which must outlive
// it.
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<MemoryStore> store, MemoryStore::Create({}));
//   Limiter limiter(*store);
//   Limit per_user{.limit = 100, .period = std::chrono::minutes(1)};
//   absl::StatusOr<Decision> d = limiter.Check("user:42", per_user);
//
// Thread safety: thread-safe if the store is (every sluice store is).
#ifndef SLUICE_LIMITER_H_
#define SLUICE_LIMITER_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/store.h"

namespace sluice {

class Limiter {
 public:
  explicit Limiter(Store& store) : store_(store) {}

  // Limiter::Check()
  //
  // Returns the decision for `cost` units of `limit` under `key`; InvalidArgument for a bad limit,
  // cost or empty key (the store is not called), or the store's error.
  absl::StatusOr<Decision> Check(std::string_view key, const Limit& limit, int64_t cost = 1);

  // Limiter::CheckAsync()
  //
  // As Check(). `done` runs inline when the input is invalid and otherwise wherever the store runs
  // it (inline for the memory store, on the I/O thread for the Redis store).
  void CheckAsync(std::string_view key, const Limit& limit, int64_t cost,
                  Store::DecisionCallback done);

  // Limiter::CheckAll()
  //
  // All-or-nothing check of several limits (see Store::CheckAll()).
  absl::StatusOr<MultiDecision> CheckAll(std::span<const LimitCheck> checks);

  // Limiter::CheckAllAsync()
  void CheckAllAsync(std::span<const LimitCheck> checks, Store::MultiDecisionCallback done);

  Store& store() const { return store_; }

 private:
  Store& store_;
};

// ValidateCheck()
//
// Returns OK when `key` is non-empty and `limit` and `cost` are valid, else InvalidArgument.
absl::Status ValidateCheck(std::string_view key, const Limit& limit, int64_t cost);

// ValidateChecks()
//
// ValidateCheck() for each element; also InvalidArgument when `checks` is empty.
absl::Status ValidateChecks(std::span<const LimitCheck> checks);

}  // namespace sluice

#endif  // SLUICE_LIMITER_H_
