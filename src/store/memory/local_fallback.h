// LocalFallback: the in-process limiter that decides while the shared store cannot, each limit cut
// to this instance's share: the failure policy's kLocal mode (failure_policy.h), which is also the
// HTTP middleware's `store_error: local`. The instance count is given per call, since the policy's
// answer may change at run time (FailurePolicyStore::SetAnswer(), on a reload of the middleware's
// config).
//
// Thread safety: thread-safe.
#ifndef SLUICE_STORE_MEMORY_LOCAL_FALLBACK_H_
#define SLUICE_STORE_MEMORY_LOCAL_FALLBACK_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"

#include "sluice/clock.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"
#include "sluice/store.h"

namespace sluice::internal {

// LocalShare()
//
// Returns `limit` divided among `instances` (rounded down, at least 1; the burst too): what one
// instance of `instances` may admit alone so that together they stay near the limit.
Limit LocalShare(const Limit& limit, int64_t instances);

class LocalFallback {
 public:
  // LocalFallback::Create()
  //
  // Returns a fallback whose memory store uses `clock` (not owned) and holds at most `max_bytes`,
  // or the memory store's error.
  static absl::StatusOr<std::unique_ptr<LocalFallback>> Create(Clock& clock, size_t max_bytes);

  // LocalFallback::Decide()
  //
  // Decides `checks` (valid, non-empty) all-or-nothing in memory, each limit cut to its share of
  // `instances`; every decision is marked from_fallback.
  absl::StatusOr<MultiDecision> Decide(std::span<const LimitCheck> checks, int64_t instances);

 private:
  explicit LocalFallback(std::unique_ptr<MemoryStore> store) : store_(std::move(store)) {}

  std::unique_ptr<MemoryStore> store_;
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_MEMORY_LOCAL_FALLBACK_H_
