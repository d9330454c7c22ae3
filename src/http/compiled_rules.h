// CompiledRules: a MiddlewareSpec turned into what each request needs, computed once per config:
// route matchers, per-tier policy lists with the global rule's merged in, counter key prefixes and
// the RateLimit-Policy header value.
//
// Thread safety: immutable once built.
#ifndef SLUICE_HTTP_COMPILED_RULES_H_
#define SLUICE_HTTP_COMPILED_RULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/http/client_ip.h"
#include "sluice/http/middleware_config.h"
#include "sluice/http/request.h"
#include "sluice/limit.h"

#include "src/http/rate_limit_headers.h"
#include "src/http/route_template.h"

namespace sluice::http::internal {

// The route component of the global rule's counter keys ('*' never starts a path template).
inline constexpr std::string_view kGlobalRouteKey = "*";
// The tier name that stands for every tier a rule does not list.
inline constexpr std::string_view kOtherTiers = "*";

struct CompiledPolicy {
  std::string name;
  // `name` as an sf-string, for the RateLimit field.
  std::string quoted_name;
  Limit limit;
  int64_t cost = 1;
  // `q` of RateLimit-Policy: the capacity (Decision.limit).
  int64_t quota = 0;
  // `w` of RateLimit-Policy, in seconds (the period for window algorithms; for the token bucket
  // and GCRA the time to refill the whole capacity, ceil(capacity * period / limit)), and the
  // horizon Retry-After is capped at (see PolicyWindow).
  PolicyWindow window;
  // The name of the counter key, JoinKeyComponents() of {area, route, tier, policy name}; the
  // identity is the key's tag (see BuildCounterKey()).
  std::string key_name;
  bool global = false;
};

// The limits one request of one tier meets on one route: the global rule's first.
struct CompiledTier {
  std::vector<CompiledPolicy> policies;
  // The RateLimit-Policy field value, e.g. "\"burst\";q=10;w=1, \"daily\";q=1000;w=86400".
  std::string policy_header;
};

class TierTable {
 public:
  // TierTable::Find()
  //
  // Returns the limits of `tier`: its own entry if the rule (or the global rule) names it, else the
  // entry for unlisted tiers, else nullptr. The result may have no policies (explicitly unlimited).
  const CompiledTier* Find(std::string_view tier) const;

  std::vector<std::pair<std::string, CompiledTier>> named;
  std::optional<CompiledTier> other;
};

struct CompiledRoute {
  std::string name;
  std::vector<std::string> methods;
  RouteTemplate path;
  TierTable tiers;

  bool Matches(const RequestView& request) const;
};

struct CompiledRules {
  std::vector<CompiledRoute> routes;
  // The policies attached to handlers by name (MiddlewareSpec::policies): their own limits only,
  // without the global rule's; never matched by path (their `path` is unused).
  std::vector<CompiledRoute> policies;
  // What a request naming a policy the config does not define gets: no limit. Always set by
  // MiddlewareConfig::Create().
  std::optional<CompiledRoute> unknown_policy;
  // Limits for requests that no route matches: the global rule's alone.
  TierTable global_only;
  ClientIpOptions client_ip;

  // CompiledRules::Match()
  //
  // Returns, for a request naming a policy (RequestView::policy), that policy, or
  // `*unknown_policy` when there is none of that name; otherwise the first route matching
  // `request`, or nullptr.
  const CompiledRoute* Match(const RequestView& request) const;

  // CompiledRules::FindPolicy()
  //
  // Returns the policy named `name`, or nullptr.
  const CompiledRoute* FindPolicy(std::string_view name) const;
};

// BuildCounterKey()
//
// Returns the store key of `policy` for `identity`: TaggedKey(identity, policy.key_name). The
// identity is the tag, so every limit of one identity lands on one shard (one Redis Cluster
// slot) and a multi-limit request stays all-or-nothing there (docs/keys.md).
std::string BuildCounterKey(const CompiledPolicy& policy, std::string_view identity);

// IdentityKeyTag()
//
// Returns the tag part of every counter key of `identity`: "{" + escaped identity + "}" (built
// once per request, whatever the number of policies).
std::string IdentityKeyTag(std::string_view identity);

// BuildCounterKeyFromTag()
//
// As BuildCounterKey(), from IdentityKeyTag(identity): one sized concatenation.
std::string BuildCounterKeyFromTag(const CompiledPolicy& policy, std::string_view key_tag);

}  // namespace sluice::http::internal

#endif  // SLUICE_HTTP_COMPILED_RULES_H_
