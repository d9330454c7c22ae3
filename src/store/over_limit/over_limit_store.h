// OverLimitStore: the over-limit cache (over_limit_cache.h) as a decorator in front of a store.
//
// A check known to be over its limit is answered in memory, without the store: a denial says the
// same request cannot pass for `retry_after` whatever other instances do, so the answer is exact.
// The store's own denials fill the cache. In a multi-limit check with a cached denial, the other
// checks are only peeked at (cost 0), so the request records nothing anywhere, as an all-or-nothing
// denial must; each of them reports allowed when its own cost would have fit. A check counting
// rejected hits (LimitCheck::count_rejected, always alone) is answered from the cache the same way
// and then records nothing, as envoyproxy/ratelimit does not increment a key its local cache
// holds; its store denials fill the cache like any other.
//
// A credit (LimitCheck::refund) is never answered from the cache (it is never denied); once the
// store took it, its key's entry is dropped, so this instance sees the units given back at once,
// and other instances within their entries' `max_entry_life`.
//
// Decisions answered from the cache carry Decision::answered_locally. Off by default in sluiced
// (LOCAL_CACHE_SIZE_IN_BYTES, docs/sluiced.md).
//
// Thread safety: thread-safe.
#ifndef SLUICE_STORE_OVER_LIMIT_OVER_LIMIT_STORE_H_
#define SLUICE_STORE_OVER_LIMIT_OVER_LIMIT_STORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "sluice/clock.h"
#include "sluice/store_wrapper.h"

#include "src/store/over_limit/over_limit_cache.h"

namespace sluice::internal {

struct OverLimitStoreOptions {
  // Bounds of the cache (OverLimitCache): entries and bytes.
  size_t max_entries = 0;
  size_t max_bytes = OverLimitCache::kDefaultMaxBytes;
  // The longest an entry answers, however long its denial: how long a credit through another
  // instance can go unseen here. Default: 1 s.
  std::chrono::microseconds max_entry_life = OverLimitCache::kDefaultMaxLife;
  // The steady time entries live by. Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
};

class OverLimitStore final : public StoreWrapper {
 public:
  // Wraps `inner`, which must outlive this store and every call in flight.
  OverLimitStore(Store& inner, const OverLimitStoreOptions& options);

  // Checks answered from the cache, and the cache's size.
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  const OverLimitCache& cache() const { return cache_; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override;

 private:
  // Records the store's denials of `checks` in the cache, and forgets the keys it credited.
  void Remember(std::span<const LimitCheck> checks, const MultiDecision& decision);

  OverLimitCache cache_;
  Clock& clock_;
  std::atomic<uint64_t> hits_{0};
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_OVER_LIMIT_OVER_LIMIT_STORE_H_
