// RateLimitConfig's non-matching methods and the unit table.
#include "sluice/config.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "src/config/config_tree.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

using internal::AbslView;
using internal::DescriptorNode;

std::string DescribeRule(const Rule& rule) {
  std::vector<std::string> parts;
  if (rule.unlimited) {
    parts.emplace_back("unlimited");
  }
  for (const RuleLimit& l : rule.limits) {
    std::string part =
        l.unit_multiplier == 1
            ? absl::StrCat(l.requests_per_unit, "/", AbslView(RateLimitUnitName(l.unit)))
            : absl::StrCat(l.requests_per_unit, "/", l.unit_multiplier, "x",
                           AbslView(RateLimitUnitName(l.unit)));
    if (l.DenyAll()) {
      absl::StrAppend(&part, " deny_all");
    } else {
      absl::StrAppend(&part, " ", AbslView(AlgorithmName(l.limit->algorithm)));
      if (l.limit->burst.has_value()) {
        absl::StrAppend(&part, " burst ", *l.limit->burst);
      }
    }
    if (!l.name.empty()) {
      absl::StrAppend(&part, " name=", l.name);
    }
    parts.push_back(std::move(part));
  }
  if (rule.unlimited && !rule.name.empty()) {
    parts.push_back(absl::StrCat("name=", rule.name));
  }
  if (!rule.replaces.empty()) {
    parts.push_back(absl::StrCat("replaces=", absl::StrJoin(rule.replaces, ",")));
  }
  if (rule.shadow_mode) {
    parts.emplace_back("shadow_mode");
  }
  if (rule.quota_mode) {
    parts.emplace_back("quota_mode");
  }
  if (rule.detailed_metric) {
    parts.emplace_back("detailed_metric");
  }
  return absl::StrCat(rule.config_key, ": ", absl::StrJoin(parts, ", "));
}

void CollectRules(const DescriptorNode& node, std::vector<std::string>& lines) {
  if (node.rule != nullptr) {
    lines.push_back(DescribeRule(*node.rule));
  }
  for (const DescriptorNode& child : node.children) {
    CollectRules(child, lines);
  }
}

}  // namespace

std::string_view RateLimitUnitName(RateLimitUnit unit) {
  switch (unit) {
    case RateLimitUnit::kSecond:
      return "second";
    case RateLimitUnit::kMinute:
      return "minute";
    case RateLimitUnit::kHour:
      return "hour";
    case RateLimitUnit::kDay:
      return "day";
    case RateLimitUnit::kWeek:
      return "week";
    case RateLimitUnit::kMonth:
      return "month";
    case RateLimitUnit::kYear:
      return "year";
  }
  return "unknown";
}

std::chrono::seconds RateLimitUnitDuration(RateLimitUnit unit) {
  constexpr int64_t kDay = int64_t{24} * 3600;
  switch (unit) {
    case RateLimitUnit::kSecond:
      return std::chrono::seconds(1);
    case RateLimitUnit::kMinute:
      return std::chrono::seconds(60);
    case RateLimitUnit::kHour:
      return std::chrono::seconds(3600);
    case RateLimitUnit::kDay:
      return std::chrono::seconds(kDay);
    case RateLimitUnit::kWeek:
      return std::chrono::seconds(7 * kDay);
    case RateLimitUnit::kMonth:
      return std::chrono::seconds(30 * kDay);
    case RateLimitUnit::kYear:
      return std::chrono::seconds(365 * kDay);
  }
  return std::chrono::seconds(0);
}

RateLimitConfig::RateLimitConfig(std::unique_ptr<const internal::ConfigTree> tree)
    : tree_(std::move(tree)) {}

RateLimitConfig::~RateLimitConfig() = default;

bool RateLimitConfig::HasDomain(std::string_view domain) const {
  return tree_->domains.contains(internal::AbslView(domain));
}

std::vector<std::string> RateLimitConfig::Domains() const {
  std::vector<std::string> out;
  out.reserve(tree_->domains.size());
  for (const auto& [name, tree] : tree_->domains) {
    out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RateLimitConfig::Dump() const {
  std::vector<std::string> lines;
  for (const auto& [name, tree] : tree_->domains) {
    CollectRules(tree.root, lines);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& line : lines) {
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace sluice
