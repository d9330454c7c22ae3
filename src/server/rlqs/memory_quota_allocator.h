// MemoryQuotaAllocator: the QuotaAllocator of one sluiced (the memory store): the buckets' client
// records live in a map, under one lock, and time comes from an injected Clock.
//
// Example:
//   MemoryQuotaAllocator allocator(Clock::Real());
//   allocator.Allocate(report, [](absl::StatusOr<QuotaShare> share) { ... });  // runs inline
//
// Thread safety: thread-safe. A bucket's map is dropped when its last record ends and it is
// reported again; a bucket nobody reports again keeps its (ended) records, bounded by the
// config's buckets times kMaxQuotaClients.
#ifndef SLUICE_SERVER_RLQS_MEMORY_QUOTA_ALLOCATOR_H_
#define SLUICE_SERVER_RLQS_MEMORY_QUOTA_ALLOCATOR_H_

#include <string>

#include "absl/container/flat_hash_map.h"

#include "sluice/clock.h"

#include "src/server/rlqs/max_min_share.h"
#include "src/server/rlqs/quota_allocator.h"
#include "src/util/mutex.h"

namespace sluice {

class MemoryQuotaAllocator final : public QuotaAllocator {
 public:
  // `clock` is not owned and must outlive the allocator.
  explicit MemoryQuotaAllocator(Clock& clock) : clock_(clock) {}

  // Runs `done` inline.
  void Allocate(const QuotaReport& report, ShareCallback done) override;

 private:
  Clock& clock_;
  internal::Mutex mu_;
  absl::flat_hash_map<std::string, internal::QuotaRecords> buckets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_SERVER_RLQS_MEMORY_QUOTA_ALLOCATOR_H_
