#include "src/http/spec_validation.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "sluice/status_macros.h"

#include "src/util/strings.h"

namespace sluice::http::internal {
namespace {

using ::sluice::internal::AbslView;

constexpr size_t kMaxNameBytes = 64;

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// Rewrites ValidateLimit()'s "limit.period: ..." into the policy's own field names.
std::string PolicyFieldMessage(absl::string_view message) {
  for (auto [from, to] :
       {std::pair<absl::string_view, absl::string_view>{"limit.limit: ", "limit: "},
        {"limit.period: ", "period: "},
        {"limit.burst: ", "burst: "},
        {"limit.algorithm: ", "algorithm: "}}) {
    if (absl::StartsWith(message, from)) {
      return absl::StrCat(to, message.substr(from.size()));
    }
  }
  return std::string(message);
}

absl::Status CheckStatus(int status, std::string_view location, std::string_view field) {
  if (status < 400 || status > 599) {
    return SpecError(location, field,
                     absl::StrCat("must be an HTTP error status (400..599), got ", status));
  }
  return absl::OkStatus();
}

absl::Status ValidateRule(RuleSpec& rule, std::string_view field, bool global) {
  if (rule.name.empty()) {
    return SpecError(rule.location, absl::StrCat(AbslView(field), ".name"), "is required");
  }
  if (global) {
    if (!rule.path.empty() || !rule.methods.empty()) {
      return SpecError(rule.location, field,
                       "the global rule applies to every request and takes no path, prefix or "
                       "methods");
    }
  }
  for (size_t i = 0; i < rule.methods.size(); ++i) {
    if (absl::Status s = ValidateMethod(rule.methods[i]); !s.ok()) {
      return SpecError(rule.location, absl::StrCat(AbslView(field), ".methods[", i, "]"),
                       s.message());
    }
    if (std::count(rule.methods.begin(), rule.methods.end(), rule.methods[i]) > 1) {
      return SpecError(rule.location, absl::StrCat(AbslView(field), ".methods"),
                       absl::StrCat("'", rule.methods[i], "' is listed twice"));
    }
  }
  if (absl::Status s = ValidateCost(rule.cost); !s.ok()) {
    return SpecError(rule.location, absl::StrCat(AbslView(field), ".cost"), s.message());
  }
  for (TierSpec& tier : rule.tiers) {
    const std::string tier_field = absl::StrCat(AbslView(field), ".tiers.", tier.tier);
    if (absl::Status s = ValidateTierName(tier.tier); !s.ok()) {
      return SpecError(tier.location.empty() ? rule.location : tier.location,
                       absl::StrCat(AbslView(field), ".tiers"), s.message());
    }
    size_t same = 0;
    for (const TierSpec& other : rule.tiers) same += other.tier == tier.tier ? 1 : 0;
    if (same > 1) {
      return SpecError(tier.location.empty() ? rule.location : tier.location, tier_field,
                       "tier listed twice");
    }
    for (size_t i = 0; i < tier.limits.size(); ++i) {
      PolicySpec& policy = tier.limits[i];
      const std::string policy_field = absl::StrCat(tier_field, "[", i, "]");
      const std::string_view location =
          !policy.location.empty() ? policy.location
                                   : (!tier.location.empty() ? tier.location : rule.location);
      if (absl::Status s = ValidatePolicyLimit(policy.limit); !s.ok()) {
        return SpecError(location, policy_field, s.message());
      }
      if (policy.name.empty()) policy.name = DefaultPolicyName(policy.limit);
      if (absl::Status s = ValidatePolicyName(policy.name); !s.ok()) {
        return SpecError(location, absl::StrCat(policy_field, ".name"), s.message());
      }
      for (size_t j = 0; j < i; ++j) {
        if (tier.limits[j].name == policy.name) {
          return SpecError(location, absl::StrCat(policy_field, ".name"),
                           absl::StrCat("'", policy.name, "' is used twice in this tier"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SpecError(std::string_view location, std::string_view field,
                       absl::string_view message) {
  std::string text;
  if (!location.empty()) absl::StrAppend(&text, AbslView(location), ": ");
  if (!field.empty()) absl::StrAppend(&text, AbslView(field), ": ");
  absl::StrAppend(&text, message);
  return absl::InvalidArgumentError(text);
}

std::string FormatPeriod(std::chrono::microseconds period) {
  const int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(period).count();
  for (auto [unit, length] :
       {std::pair<const char*, int64_t>{"d", 86400}, {"h", 3600}, {"m", 60}}) {
    if (seconds >= length && seconds % length == 0) return absl::StrCat(seconds / length, unit);
  }
  return absl::StrCat(seconds, "s");
}

std::string DefaultPolicyName(const Limit& limit) {
  return absl::StrCat(limit.limit, "-per-", FormatPeriod(limit.period));
}

absl::Status ValidatePolicyLimit(const Limit& limit) {
  if (absl::Status s = ValidateLimit(limit); !s.ok()) {
    return absl::InvalidArgumentError(PolicyFieldMessage(s.message()));
  }
  if (limit.period.count() % 1'000'000 != 0) {
    return absl::InvalidArgumentError(
        "period: must be a whole number of seconds (Retry-After and the RateLimit headers count "
        "whole seconds)");
  }
  return absl::OkStatus();
}

absl::Status ValidatePolicyName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes ||
      !std::all_of(name.begin(), name.end(), IsNameChar)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", AbslView(name), "': a policy name is 1 to 64 characters of [A-Za-z0-9_.-]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateTierName(std::string_view name) {
  if (name == "*") return absl::OkStatus();
  if (name.empty() || name.size() > kMaxNameBytes ||
      !std::all_of(name.begin(), name.end(), IsNameChar)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", AbslView(name), "': a tier name is '*' or 1 to 64 characters of [A-Za-z0-9_.-]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateMethod(std::string_view method) {
  if (method.empty() || method.size() > 32 ||
      !std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", AbslView(method), "': methods are upper-case, like GET or POST"));
  }
  return absl::OkStatus();
}

absl::Status NormalizeAndValidate(MiddlewareSpec& spec) {
  if (spec.area.empty()) return SpecError("", "area", "must not be empty");
  if (spec.global) {
    if (spec.global->name.empty()) spec.global->name = "global";
    SLUICE_RETURN_IF_ERROR(ValidateRule(*spec.global, "global", /*global=*/true));
  }
  for (size_t i = 0; i < spec.routes.size(); ++i) {
    RuleSpec& rule = spec.routes[i];
    const std::string field = absl::StrCat("routes[", i, "]");
    SLUICE_RETURN_IF_ERROR(ValidateRule(rule, field, /*global=*/false));
    if (spec.global && rule.name == spec.global->name) {
      return SpecError(rule.location, absl::StrCat(field, ".name"),
                       absl::StrCat("'", rule.name, "' is the global rule's name"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (spec.routes[j].name == rule.name) {
        return SpecError(rule.location, absl::StrCat(field, ".name"),
                         absl::StrCat("'", rule.name, "' is the name of routes[", j, "] too"));
      }
    }
  }
  // Policies attached by name: a name, a cost and tiers, like the global rule; the name is what
  // code refers to, so it is required and unique among routes and policies.
  for (size_t i = 0; i < spec.policies.size(); ++i) {
    RuleSpec& policy = spec.policies[i];
    const std::string field = absl::StrCat("policies[", i, "]");
    if (policy.name.empty()) return SpecError(policy.location, field + ".name", "is required");
    if (!policy.path.empty() || !policy.methods.empty()) {
      return SpecError(policy.location, field,
                       "a policy is attached to handlers by name and takes no path, prefix or "
                       "methods");
    }
    SLUICE_RETURN_IF_ERROR(ValidateRule(policy, field, /*global=*/true));
    if (spec.global && policy.name == spec.global->name) {
      return SpecError(policy.location, field + ".name",
                       absl::StrCat("'", policy.name, "' is the global rule's name"));
    }
    for (size_t j = 0; j < spec.routes.size(); ++j) {
      if (spec.routes[j].name == policy.name) {
        return SpecError(policy.location, field + ".name",
                         absl::StrCat("'", policy.name, "' is the name of routes[", j, "] too"));
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (spec.policies[j].name == policy.name) {
        return SpecError(policy.location, field + ".name",
                         absl::StrCat("'", policy.name, "' is the name of policies[", j, "] too"));
      }
    }
  }
  const IdentitySpec& id = spec.identity;
  for (auto [tier, field] :
       {std::pair<const std::string*, const char*>{&id.api_key_tier, "identity.api_key_tier"},
        {&id.authenticated_tier, "identity.authenticated_tier"},
        {&id.anonymous_tier, "identity.anonymous_tier"}}) {
    if (*tier == "*") return SpecError(id.location, field, "'*' is not a tier a request can have");
    if (absl::Status s = ValidateTierName(*tier); !s.ok()) {
      return SpecError(id.location, field, s.message());
    }
  }
  if (id.ipv6_prefix_bits < 1 || id.ipv6_prefix_bits > 128) {
    return SpecError(id.location, "identity.ipv6_prefix",
                     absl::StrCat("must be in 1..128, got ", id.ipv6_prefix_bits));
  }
  for (char c : id.api_key_header) {
    if (c <= 0x20 || c >= 0x7f || c == ':') {
      return SpecError(id.location, "identity.api_key_header", "is not a valid header name");
    }
  }
  SLUICE_RETURN_IF_ERROR(CheckStatus(spec.response.over_limit_status, spec.response.location,
                                     "response.over_limit_status"));
  SLUICE_RETURN_IF_ERROR(CheckStatus(spec.response.unavailable_status, spec.response.location,
                                     "response.unavailable_status"));
  if (spec.response.local_fallback_instances < 1 ||
      spec.response.local_fallback_instances > 1'000'000) {
    return SpecError(spec.response.location, "response.local_fallback_instances",
                     "must be in [1, 1000000]");
  }
  return absl::OkStatus();
}

}  // namespace sluice::http::internal
