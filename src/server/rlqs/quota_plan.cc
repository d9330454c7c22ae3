#include "src/server/rlqs/quota_plan.h"

#include <algorithm>
#include <optional>

#include "src/server/rlqs/quota_allocator.h"

namespace sluice {
namespace {

template <typename Entries, typename KeyValue>
std::string BucketName(std::string_view domain, const Entries& entries, KeyValue key_value) {
  std::string name(domain);
  for (const auto& entry : entries) {
    const auto [key, value] = key_value(entry);
    name.append("\x1f").append(key).append("=").append(value);
  }
  return name;
}

}  // namespace

std::string QuotaBucketName(std::string_view domain,
                            std::span<const std::pair<std::string, std::string>> entries) {
  return BucketName(domain, entries, [](const auto& e) {
    return std::pair<std::string_view, std::string_view>(e.first, e.second);
  });
}

std::string QuotaBucketName(std::string_view domain, std::span<const DescriptorEntry> entries) {
  return BucketName(domain, entries, [](const DescriptorEntry& e) {
    return std::pair<std::string_view, std::string_view>(e.key, e.value);
  });
}

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
      plan.bucket_key = QuotaBucketName(domain, match->counter_entries);
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
