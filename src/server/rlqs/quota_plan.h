// PlanQuotaBucket(): which rule of the rate limit config an RLQS bucket shares, and how
// (docs/rlqs.md, "Mapping buckets to rules").
//
// A bucket_id {k: v} matches as an RLS descriptor with the one entry (k, v): exact values,
// wildcards and key-only rules alike. A bucket_id with several entries (a protobuf map, so
// unordered) is tried as a descriptor in every order of its entries, starting with the keys
// sorted, and matches in the first order that reaches a rule, so a config that nests the keys
// in any order is found. At most kMaxQuotaBucketEntries entries.
//
// Thread safety: pure function of its arguments.
#ifndef SLUICE_SERVER_RLQS_QUOTA_PLAN_H_
#define SLUICE_SERVER_RLQS_QUOTA_PLAN_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/config.h"

namespace sluice {

inline constexpr size_t kMaxQuotaBucketEntries = 4;

struct QuotaBucketPlan {
  enum class Kind {
    kUnknown,   // no such domain or rule, or a bucket out of bounds: AbandonAction
    kAllowAll,  // `unlimited` or `shadow_mode`: blanket ALLOW_ALL
    kDenyAll,   // requests_per_unit: 0: blanket DENY_ALL
    kShared,    // the rule's first limit, shared by max-min fairness
  };
  Kind kind = Kind::kUnknown;
  // The allocator's bucket: the domain and the rule's counter entries, so values that share an
  // RLS counter (share_threshold) share one quota too.
  std::string bucket_key;
  // The rule's stats key, for metrics and logs.
  std::string stats_key;
  uint64_t limit = 0;
  // The unit of `limit` (unit x unit_multiplier), whole seconds, at least 1 s.
  std::chrono::seconds unit{1};
};

// QuotaBucketName()
//
// Returns "domain\x1fk=v\x1fk=v...": the name of a bucket by its entries in the given order. The
// stream keys its per-bucket state by the reported entries (sorted); a plan's bucket_key, the
// allocator's bucket, is the rule's counter entries.
std::string QuotaBucketName(std::string_view domain,
                            std::span<const std::pair<std::string, std::string>> entries);
std::string QuotaBucketName(std::string_view domain, std::span<const DescriptorEntry> entries);

// PlanQuotaBucket()
//
// Returns the plan of the bucket `entries` reported on `domain` under `config`.
QuotaBucketPlan PlanQuotaBucket(const RateLimitConfig& config, std::string_view domain,
                                std::vector<std::pair<std::string, std::string>> entries);

}  // namespace sluice

#endif  // SLUICE_SERVER_RLQS_QUOTA_PLAN_H_
