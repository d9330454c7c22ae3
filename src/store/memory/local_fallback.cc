#include "src/store/memory/local_fallback.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace sluice::internal {

Limit LocalShare(const Limit& limit, int64_t instances) {
  const int64_t n = std::max<int64_t>(1, instances);
  Limit share = limit;
  share.limit = std::max<int64_t>(1, limit.limit / n);
  if (share.burst.has_value()) share.burst = std::max<int64_t>(1, *limit.burst / n);
  return share;
}

absl::StatusOr<std::unique_ptr<LocalFallback>> LocalFallback::Create(Clock& clock,
                                                                     size_t max_bytes) {
  absl::StatusOr<std::unique_ptr<MemoryStore>> store =
      MemoryStore::Create({.clock = &clock, .max_bytes = max_bytes});
  if (!store.ok()) return store.status();
  return std::unique_ptr<LocalFallback>(new LocalFallback(*std::move(store)));
}

absl::StatusOr<MultiDecision> LocalFallback::Decide(std::span<const LimitCheck> checks,
                                                    int64_t instances) {
  std::vector<LimitCheck> shares(checks.begin(), checks.end());
  for (LimitCheck& check : shares) check.limit = LocalShare(check.limit, instances);
  absl::StatusOr<MultiDecision> local = store_->CheckAll(shares);
  if (local.ok()) {
    for (Decision& d : local->decisions) d.from_fallback = true;
  }
  return local;
}

}  // namespace sluice::internal
