#include "src/server/rlqs/memory_quota_allocator.h"

#include <utility>

namespace sluice {

void MemoryQuotaAllocator::Allocate(const QuotaReport& report, ShareCallback done) {
  if (absl::Status status = ValidateQuotaReport(report); !status.ok()) {
    std::move(done)(std::move(status));
    return;
  }
  QuotaShare share;
  {
    internal::MutexLock lock(&mu_);
    // EpochNow(), as the Redis script's TIME: the same reports at the same times give the same
    // shares in both allocators.
    share = internal::DecideQuotaShare(buckets_[report.bucket], report, clock_.EpochNow().count());
  }
  std::move(done)(share);
}

}  // namespace sluice
