#include "src/server/rlqs/quota_plan.h"

#include <algorithm>
#include <optional>

#include "src/server/rlqs/quota_allocator.h"

namespace sluice {

QuotaBucketPlan PlanQuotaBucket(const RateLimitConfig& config, std::string_view domain,
                                std::vector<std::pair<std::string, std::string>> entries) {
  QuotaBucketPlan plan;
  if (entries.empty() || entries.size() > kMaxQuotaBucketEntries) return plan;
  std::sort(entries.begin(), entries.end());
  std::optional<RuleMatch> match;
  do {
    std::vector<DescriptorEntry> descriptor;
    for (const auto& [key, value] : entries) descriptor.push_back({key, value});
    match = config.Match(domain, descriptor);
    if (match) {
      // counter_entries view `descriptor`'s strings (owned by `entries`, unchanged until the
      // next permutation): build the key now.
      plan.bucket_key = std::string(domain);
      for (const DescriptorEntry& e : match->counter_entries) {
        plan.bucket_key.append("\x1f").append(e.key).append("=").append(e.value);
      }
      break;
    }
  } while (std::next_permutation(entries.begin(), entries.end()));
  if (!match || plan.bucket_key.size() > kMaxQuotaBucketBytes) return QuotaBucketPlan{};
  plan.stats_key = match->stats_key;
  const Rule& rule = *match->rule;
  if (rule.unlimited || rule.shadow_mode || rule.limits.empty()) {
    plan.kind = QuotaBucketPlan::Kind::kAllowAll;
    return plan;
  }
  const RuleLimit& limit = rule.limits.front();
  if (limit.DenyAll()) {
    plan.kind = QuotaBucketPlan::Kind::kDenyAll;
    return plan;
  }
  plan.kind = QuotaBucketPlan::Kind::kShared;
  plan.limit = limit.requests_per_unit;
  plan.unit = RateLimitUnitDuration(limit.unit) * std::max<uint32_t>(limit.unit_multiplier, 1);
  return plan;
}

}  // namespace sluice
