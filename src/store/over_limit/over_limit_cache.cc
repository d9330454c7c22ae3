#include "src/store/over_limit/over_limit_cache.h"

#include <algorithm>
#include <iterator>

namespace sluice::internal {

void OverLimitCache::Add(absl::string_view key, int64_t limit, int64_t cost,
                         std::chrono::steady_clock::time_point now,
                         std::chrono::microseconds retry_after,
                         std::chrono::microseconds reset_after) {
  if (retry_after <= std::chrono::microseconds::zero() || max_entries_ == 0) return;
  const size_t bytes = EntryBytes(key);
  if (bytes > max_bytes_) return;
  MutexLock lock(&mu_);
  const Entry entry{.until = now + std::min(retry_after, max_life_),
                    .retry_at = now + retry_after,
                    .reset_at = now + std::max(retry_after, reset_after),
                    .limit = limit,
                    .cost = cost};
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second = entry;
    return;
  }
  auto full = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return entries_.size() >= max_entries_ || bytes_ + bytes > max_bytes_;
  };
  if (full()) {
    // Sweeping is O(entries): a cache full of live entries is swept at most every
    // kFullSweepInterval, and new entries are dropped in between.
    if (now < next_full_sweep_) return;
    next_full_sweep_ = now + kFullSweepInterval;
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto next = std::next(it);
      if (it->second.until <= now) Erase(it);
      it = next;
    }
    if (full()) return;
  }
  entries_.emplace(key, entry);
  bytes_ += bytes;
}

void OverLimitCache::Erase(absl::flat_hash_map<std::string, Entry>::iterator it) {
  bytes_ -= EntryBytes(it->first);
  entries_.erase(it);
}

void OverLimitCache::Forget(absl::string_view key) {
  MutexLock lock(&mu_);
  if (auto it = entries_.find(key); it != entries_.end()) Erase(it);
}

size_t OverLimitCache::entries() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

size_t OverLimitCache::bytes() const {
  MutexLock lock(&mu_);
  return bytes_;
}

std::optional<OverLimitCache::Over> OverLimitCache::Lookup(
    absl::string_view key, int64_t limit, int64_t cost, std::chrono::steady_clock::time_point now) {
  MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  if (it->second.until <= now) {
    Erase(it);
    return std::nullopt;
  }
  // A smaller cost or a changed quota might pass: only the same or a larger request is known over.
  if (it->second.limit != limit || cost < it->second.cost) return std::nullopt;
  return Over{.retry_after =
                  std::chrono::duration_cast<std::chrono::microseconds>(it->second.retry_at - now),
              .reset_after =
                  std::chrono::duration_cast<std::chrono::microseconds>(it->second.reset_at - now)};
}

}  // namespace sluice::internal
