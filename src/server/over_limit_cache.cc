#include "src/server/over_limit_cache.h"

namespace sluice::server {

void OverLimitCache::Add(absl::string_view key, int64_t limit, int64_t cost,
                         std::chrono::steady_clock::time_point now,
                         std::chrono::microseconds retry_after) {
  if (retry_after <= std::chrono::microseconds::zero() || max_entries_ == 0) return;
  internal::MutexLock lock(&mu_);
  if (entries_.size() >= max_entries_ && !entries_.contains(key)) {
    absl::erase_if(entries_, [now](const auto& kv) { return kv.second.until <= now; });
    if (entries_.size() >= max_entries_) return;
  }
  entries_[key] = Entry{.until = now + retry_after, .limit = limit, .cost = cost};
}

bool OverLimitCache::IsOver(absl::string_view key, int64_t limit, int64_t cost,
                            std::chrono::steady_clock::time_point now) {
  internal::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  if (it->second.until <= now) {
    entries_.erase(it);
    return false;
  }
  // A smaller cost or a changed quota might pass: only the same or a larger request is known over.
  return it->second.limit == limit && cost >= it->second.cost;
}

}  // namespace sluice::server
