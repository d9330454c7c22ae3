// MiddlewareConfig::Create(): validation of a MiddlewareSpec and its compilation into
// CompiledRules. Every error names where the element was defined (when known) and its field path.
#include "sluice/http/middleware_config.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "sluice/key.h"
#include "sluice/status_macros.h"

#include "src/http/compiled_rules.h"
#include "src/http/rate_limit_headers.h"
#include "src/http/spec_validation.h"
#include "src/util/strings.h"

namespace sluice::http {
namespace {

using internal::CompiledPolicy;
using internal::CompiledRoute;
using internal::CompiledRules;
using internal::CompiledTier;
using internal::TierTable;
using ::sluice::internal::AbslView;

// Finds the spec of `tier` in `rule`, or of the "*" entry when it is not listed; nullptr if
// neither exists.
const TierSpec* FindTierSpec(const RuleSpec* rule, std::string_view tier) {
  if (rule == nullptr) return nullptr;
  const TierSpec* other = nullptr;
  for (const TierSpec& t : rule->tiers) {
    if (t.tier == tier) return &t;
    if (t.tier == internal::kOtherTiers) other = &t;
  }
  return other;
}

CompiledPolicy CompilePolicy(const std::string& area, std::string_view route_key,
                             const TierSpec& tier, const PolicySpec& policy, int64_t cost,
                             bool global) {
  CompiledPolicy out;
  out.name = policy.name;
  out.quoted_name = internal::SfString(policy.name);
  out.limit = policy.limit;
  out.cost = cost;
  out.quota = policy.limit.Capacity();
  out.window = {.window_seconds = internal::PolicyWindowSeconds(policy.limit),
                .horizon_seconds = internal::PolicyHorizonSeconds(policy.limit)};
  const std::array<std::string_view, 4> name_components = {area, route_key, tier.tier, policy.name};
  out.key_name = JoinKeyComponents(name_components);
  out.global = global;
  return out;
}

// Builds the limits of one tier on one route (`route` may be null: global only). With
// `with_global` false (a policy attached by name) the global rule's limits are left out, but
// their names are still checked against the route's: a request meets both, through two calls.
absl::StatusOr<std::optional<CompiledTier>> MergeTier(const MiddlewareSpec& spec,
                                                      const RuleSpec* route,
                                                      std::string_view route_key,
                                                      std::string_view tier, std::string_view field,
                                                      bool with_global = true) {
  const TierSpec* global_tier = FindTierSpec(spec.global ? &*spec.global : nullptr, tier);
  const TierSpec* route_tier = FindTierSpec(route, tier);
  if (global_tier == nullptr && route_tier == nullptr) return std::nullopt;
  if (!with_global && route_tier == nullptr) return std::nullopt;
  CompiledTier out;
  std::vector<internal::PolicyState> states;
  auto add = [&](const RuleSpec& rule, const TierSpec& t, std::string_view key,
                 bool global) -> absl::Status {
    for (const PolicySpec& policy : t.limits) {
      for (const CompiledPolicy& seen : out.policies) {
        if (seen.name == policy.name) {
          return internal::SpecError(
              policy.location, field,
              absl::StrCat("policy name '", AbslView(policy.name), "' of tier '", AbslView(tier),
                           "' is used twice (by the global rule and by rule '", AbslView(rule.name),
                           "'); names appear in the RateLimit headers and "
                           "must be unique per request"));
        }
      }
      out.policies.push_back(CompilePolicy(spec.area, key, t, policy, rule.cost, global));
    }
    return absl::OkStatus();
  };
  if (global_tier != nullptr) {
    SLUICE_RETURN_IF_ERROR(add(*spec.global, *global_tier, internal::kGlobalRouteKey, true));
  }
  if (route_tier != nullptr) SLUICE_RETURN_IF_ERROR(add(*route, *route_tier, route_key, false));
  if (!with_global) {
    std::erase_if(out.policies, [](const CompiledPolicy& p) { return p.global; });
  }
  for (const CompiledPolicy& p : out.policies) {
    states.push_back({.name = p.name, .quota = p.quota, .window_seconds = p.window.window_seconds});
  }
  out.policy_header = internal::FormatRateLimitPolicy(states);
  return out;
}

absl::StatusOr<TierTable> CompileTiers(const MiddlewareSpec& spec, const RuleSpec* route,
                                       std::string_view route_key, std::string_view field,
                                       bool with_global = true) {
  std::vector<std::string> names;
  for (const RuleSpec* rule : {spec.global && with_global ? &*spec.global : nullptr, route}) {
    if (rule == nullptr) continue;
    for (const TierSpec& t : rule->tiers) {
      if (t.tier != internal::kOtherTiers &&
          std::find(names.begin(), names.end(), t.tier) == names.end()) {
        names.push_back(t.tier);
      }
    }
  }
  TierTable table;
  for (const std::string& name : names) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<CompiledTier> tier,
                            MergeTier(spec, route, route_key, name, field, with_global));
    if (tier) table.named.emplace_back(name, *std::move(tier));
  }
  SLUICE_ASSIGN_OR_RETURN(
      table.other, MergeTier(spec, route, route_key, internal::kOtherTiers, field, with_global));
  return table;
}

// The route component of counter keys: "/api/orders/{id}", or "GET /api/orders/{id}" when the
// rule is for some methods only (so that a GET rule and a POST rule on one template count apart).
std::string RouteKey(const RuleSpec& rule, std::string_view path) {
  if (rule.methods.empty()) return std::string(path);
  return absl::StrCat(absl::StrJoin(rule.methods, ","), " ", AbslView(path));
}

// The methods a rule matches: its own, and HEAD beside GET when the spec says so (HEAD is GET
// without the body; see MiddlewareSpec::head_matches_get). Empty for any method.
std::vector<std::string> MatchedMethods(const MiddlewareSpec& spec, const RuleSpec& rule) {
  std::vector<std::string> methods = rule.methods;
  const auto has = [&](std::string_view m) {
    return std::find(methods.begin(), methods.end(), m) != methods.end();
  };
  if (spec.head_matches_get && has("GET") && !has("HEAD")) methods.emplace_back("HEAD");
  return methods;
}

absl::StatusOr<std::unique_ptr<const CompiledRules>> Compile(const MiddlewareSpec& spec) {
  auto rules = std::make_unique<CompiledRules>();
  std::vector<std::string> shapes;
  for (size_t i = 0; i < spec.routes.size(); ++i) {
    const RuleSpec& rule = spec.routes[i];
    const std::string field = absl::StrCat("routes[", i, "]");
    absl::StatusOr<internal::RouteTemplate> path =
        internal::RouteTemplate::Parse(rule.path, rule.match);
    if (!path.ok()) {
      return internal::SpecError(
          rule.location,
          absl::StrCat(field, rule.match == PathMatch::kPrefix ? ".prefix" : ".path"),
          path.status().message());
    }
    const std::string key = RouteKey(rule, path->Canonical());
    // An earlier rule of the same shape whose methods include all of this rule's shadows it:
    // this rule could never be the first match.
    const std::vector<std::string> methods = MatchedMethods(spec, rule);
    for (size_t j = 0; j < i; ++j) {
      const RuleSpec& earlier = spec.routes[j];
      if (shapes[j] != path->Shape()) continue;
      const std::vector<std::string>& earlier_methods = rules->routes[j].methods;
      const bool covered = earlier_methods.empty() ||
                           (!methods.empty() &&
                            std::all_of(methods.begin(), methods.end(), [&](const std::string& m) {
                              return std::find(earlier_methods.begin(), earlier_methods.end(), m) !=
                                     earlier_methods.end();
                            }));
      if (covered) {
        return internal::SpecError(
            rule.location, field,
            absl::StrCat("rule '", AbslView(rule.name), "' (", AbslView(key),
                         ") is shadowed by routes[", j, "] ('", AbslView(earlier.name),
                         "'), which matches every request it would"));
      }
    }
    shapes.push_back(path->Shape());
    SLUICE_ASSIGN_OR_RETURN(TierTable tiers, CompileTiers(spec, &rule, key, field));
    rules->routes.push_back(CompiledRoute{.name = rule.name,
                                          .methods = methods,
                                          .path = *std::move(path),
                                          .tiers = std::move(tiers)});
  }
  // Policies attached by name: never matched by path, so their template is a placeholder; the
  // route component of their keys is "@<name>" ('@' never starts a path template).
  absl::StatusOr<internal::RouteTemplate> placeholder =
      internal::RouteTemplate::Parse("/", PathMatch::kTemplate);
  if (!placeholder.ok()) return placeholder.status();
  for (size_t i = 0; i < spec.policies.size(); ++i) {
    const RuleSpec& policy = spec.policies[i];
    SLUICE_ASSIGN_OR_RETURN(TierTable tiers,
                            CompileTiers(spec, &policy, absl::StrCat("@", AbslView(policy.name)),
                                         absl::StrCat("policies[", i, "]"), /*with_global=*/false));
    rules->policies.push_back(CompiledRoute{
        .name = policy.name, .methods = {}, .path = *placeholder, .tiers = std::move(tiers)});
  }
  rules->unknown_policy.emplace(
      CompiledRoute{.name = "", .methods = {}, .path = *placeholder, .tiers = {}});
  SLUICE_ASSIGN_OR_RETURN(rules->global_only, CompileTiers(spec, nullptr, "", "global"));
  rules->client_ip.header = spec.identity.forwarded_header;
  for (const std::string& cidr : spec.identity.trusted_proxies) {
    absl::StatusOr<Cidr> parsed = ParseCidr(cidr);
    if (!parsed.ok()) {
      return internal::SpecError(spec.identity.location, "identity.trusted_proxies",
                                 parsed.status().message());
    }
    rules->client_ip.trusted_proxies.push_back(*parsed);
  }
  return rules;
}

void DescribeTable(const std::string& rule, const TierTable& table, std::string& out) {
  auto line = [&](std::string_view tier, const CompiledTier& t) {
    absl::StrAppend(&out, AbslView(rule), " [", AbslView(tier), "]:");
    if (t.policies.empty()) absl::StrAppend(&out, " unlimited");
    for (const CompiledPolicy& p : t.policies) {
      absl::StrAppend(&out, " ", AbslView(p.name), "=", Describe(p.limit),
                      p.global ? " (global)" : "",
                      p.cost != 1 ? absl::StrCat(" cost ", p.cost) : "", ";");
    }
    out += "\n";
  };
  for (const auto& [tier, t] : table.named) line(tier, t);
  if (table.other) line("*", *table.other);
}

}  // namespace

MiddlewareConfig::MiddlewareConfig(MiddlewareSpec spec,
                                   std::unique_ptr<const CompiledRules> compiled)
    : spec_(std::move(spec)), compiled_(std::move(compiled)) {}

MiddlewareConfig::~MiddlewareConfig() = default;

absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> MiddlewareConfig::Create(
    MiddlewareSpec spec) {
  SLUICE_RETURN_IF_ERROR(internal::NormalizeAndValidate(spec));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<const CompiledRules> compiled, Compile(spec));
  return std::shared_ptr<const MiddlewareConfig>(
      new MiddlewareConfig(std::move(spec), std::move(compiled)));
}

std::string MiddlewareConfig::Describe() const {
  std::string out;
  for (const CompiledRoute& route : compiled_->routes) {
    DescribeTable(absl::StrCat("route ", AbslView(route.name), " ",
                               route.methods.empty() ? "*" : absl::StrJoin(route.methods, ","), " ",
                               AbslView(route.path.Canonical())),
                  route.tiers, out);
  }
  for (const CompiledRoute& policy : compiled_->policies) {
    DescribeTable(absl::StrCat("policy ", AbslView(policy.name)), policy.tiers, out);
  }
  DescribeTable("unmatched requests", compiled_->global_only, out);
  return out;
}

bool MiddlewareConfig::HasPolicy(std::string_view name) const {
  return compiled_->FindPolicy(name) != nullptr;
}

}  // namespace sluice::http
