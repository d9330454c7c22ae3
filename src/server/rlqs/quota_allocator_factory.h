// OpenQuotaAllocator(): the QuotaAllocator for sluiced's --store: the memory allocator for
// "memory", else the Redis allocator on its own connection to the same Redis (a server, a
// Cluster or a Sentinel-managed primary), so that every sluiced on that Redis shares one budget.
//
// Thread safety: the allocator is thread-safe.
#ifndef SLUICE_SERVER_RLQS_QUOTA_ALLOCATOR_FACTORY_H_
#define SLUICE_SERVER_RLQS_QUOTA_ALLOCATOR_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

#include "sluice/clock.h"

#include "src/server/rlqs/quota_allocator.h"

namespace sluice {

// OpenQuotaAllocator()
//
// Returns the allocator for `store_url` with keys under `key_prefix`, or InvalidArgument for a URL
// ParseStoreUrl() refuses. `clock` (memory only) must outlive it. A Redis that cannot be reached
// yet is not an error: reports fail Unavailable until it is (their buckets get no answer, and
// Envoy keeps its assignments until they expire).
absl::StatusOr<std::unique_ptr<QuotaAllocator>> OpenQuotaAllocator(const std::string& store_url,
                                                                   const std::string& key_prefix,
                                                                   Clock& clock);

}  // namespace sluice

#endif  // SLUICE_SERVER_RLQS_QUOTA_ALLOCATOR_FACTORY_H_
