#include "src/config/schema.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"

#include "src/util/strings.h"

namespace sluice::internal {
namespace {

constexpr std::array<absl::string_view, 2> kRootKeys = {"domain", "descriptors"};
// The reference's descriptor keys, plus sluice's `rate_limits`.
constexpr std::array<absl::string_view, 11> kDescriptorKeys = {
    "key",         "value",           "descriptors",     "rate_limit",
    "rate_limits", "shadow_mode",     "detailed_metric", "value_to_metric",
    "quota_mode",  "share_threshold", "metadata"};
// The reference's rate_limit keys, plus sluice's `algorithm`, `burst`, `unit_multiplier` and
// `debt`.
constexpr std::array<absl::string_view, 9> kRateLimitKeys = {
    "unit",     "requests_per_unit", "unlimited", "name",           "replaces",
    "algorithm", "burst",            "unit_multiplier", "debt"};
constexpr std::array<absl::string_view, 8> kRateLimitsItemKeys = {
    "unit",  "requests_per_unit", "name", "replaces", "algorithm",
    "burst", "unit_multiplier",   "debt"};
constexpr std::array<absl::string_view, 1> kReplacesItemKeys = {"name"};

constexpr std::array<Scope, 5> kScopes = {Scope::kRoot, Scope::kDescriptor, Scope::kRateLimit,
                                          Scope::kRateLimitsItem, Scope::kReplacesItem};

absl::Span<const absl::string_view> KeysOf(Scope scope) {
  switch (scope) {
    case Scope::kRoot:
      return kRootKeys;
    case Scope::kDescriptor:
      return kDescriptorKeys;
    case Scope::kRateLimit:
      return kRateLimitKeys;
    case Scope::kRateLimitsItem:
      return kRateLimitsItemKeys;
    case Scope::kReplacesItem:
      return kReplacesItemKeys;
  }
  return {};
}

absl::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kRoot:
      return "the top level";
    case Scope::kDescriptor:
      return "a descriptor";
    case Scope::kRateLimit:
      return "rate_limit";
    case Scope::kRateLimitsItem:
      return "a rate_limits item";
    case Scope::kReplacesItem:
      return "a replaces item";
  }
  return "";
}

// Levenshtein distance, for "did you mean" suggestions on short key names.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

bool IsAllowedKey(Scope scope, absl::string_view key) {
  const auto keys = KeysOf(scope);
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

bool IsKnownKey(absl::string_view key) {
  return std::any_of(std::begin(kScopes), std::end(kScopes),
                     [key](Scope scope) { return IsAllowedKey(scope, key); });
}

std::string DisallowedKeyMessage(Scope scope, absl::string_view key) {
  if (scope == Scope::kRateLimitsItem && key == "unlimited") {
    return "'unlimited' is not allowed in a rate_limits item; use rate_limit: {unlimited: true}";
  }
  std::vector<absl::string_view> homes;
  for (Scope other : kScopes) {
    if (other != scope && IsAllowedKey(other, key)) {
      homes.push_back(ScopeName(other));
    }
  }
  if (!homes.empty()) {
    return absl::StrCat("'", key, "' is not allowed in ", ScopeName(scope), "; it belongs in ",
                        absl::StrJoin(homes, " or "));
  }
  absl::string_view best;
  size_t best_distance = 3;  // Suggest only keys within two edits.
  for (absl::string_view candidate : KeysOf(scope)) {
    const size_t distance = EditDistance(key, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  std::string message = absl::StrCat("unknown key '", key, "'");
  if (!best.empty()) {
    absl::StrAppend(&message, " (did you mean '", best, "'?)");
  }
  return message;
}

std::optional<RateLimitUnit> ParseRateLimitUnit(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (RateLimitUnit unit :
       {RateLimitUnit::kSecond, RateLimitUnit::kMinute, RateLimitUnit::kHour, RateLimitUnit::kDay,
        RateLimitUnit::kWeek, RateLimitUnit::kMonth, RateLimitUnit::kYear}) {
    if (AbslView(RateLimitUnitName(unit)) == lower) {
      return unit;
    }
  }
  return std::nullopt;
}

}  // namespace sluice::internal
