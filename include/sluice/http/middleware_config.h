// MiddlewareConfig: the rules of the HTTP middleware, validated once and immutable.
//
// The model is a plain aggregate, MiddlewareSpec, filled either from YAML (LoadMiddlewareConfig(),
// format in docs/middleware.md) or directly in C++ with designated initializers; both go through
// MiddlewareConfig::Create(), which validates and compiles it, so the two sources accept and reject
// exactly the same rules. A request is limited by the global rule (if any) and by the first route
// rule that matches it, each with the limits of the request's tier; all those limits are checked
// together, in one atomic all-or-nothing store call, global ones first.
//
// Example (C++):
//   using std::chrono_literals::operator""s;
//   MiddlewareSpec spec{
//       .area = "shop",
//       .routes = {{.name = "order",
//                   .methods = {"GET"},
//                   .path = "/api/orders/{id}",
//                   .tiers = {{.tier = "anonymous",
//                              .limits = {{.name = "burst", .limit = {.limit = 10, .period = 1s}},
//                                         {.name = "daily",
//                                          .limit = {.limit = 1000, .period = 86400s}}}}}}}};
//   absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
//       MiddlewareConfig::Create(std::move(spec));
//
// Example (YAML):
//   absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
//       LoadMiddlewareConfig("/etc/shop/rate_limits.yaml");
//   // On error: "rate_limits.yaml:12:9: routes[1].tiers.premium[0].limit: must be >= 1"
//
// Thread safety: a MiddlewareConfig is immutable; share it as
// std::shared_ptr<const MiddlewareConfig> and swap it with Middleware::SetConfig().
#ifndef SLUICE_HTTP_MIDDLEWARE_CONFIG_H_
#define SLUICE_HTTP_MIDDLEWARE_CONFIG_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/http/client_ip.h"
#include "sluice/limit.h"

namespace sluice::http {

namespace internal {
struct CompiledRules;
}  // namespace internal

// One limit of a rule for one tier; reported as one policy in the RateLimit headers.
struct PolicySpec {
  // The policy's name in RateLimit-Policy, RateLimit and `violated-policies`, and part of its
  // counters' key: 1 to 64 characters of [A-Za-z0-9_.-]. Unique among the limits one request can
  // meet (its tier's global and route limits). Default (""): "<limit>-per-<period>", e.g.
  // "10-per-1s".
  std::string name{};
  // Algorithm, quota, period and burst. The period must be a whole number of seconds, since the
  // headers and Retry-After speak whole seconds.
  Limit limit{};
  // Where it was defined ("rules.yaml:12:9"), for error messages; "" when built in C++.
  std::string location{};
};

// The limits of one tier within a rule.
struct TierSpec {
  // The tier ("anonymous", "authenticated", "premium", any name), or "*" for every tier this rule
  // does not list.
  std::string tier{};
  // The tier's limits, all enforced. Empty: the rule does not limit this tier.
  std::vector<PolicySpec> limits{};
  std::string location{};
};

enum class PathMatch : uint8_t {
  // `path` is a template: literal segments and `{name}` segments, each matching one non-empty
  // segment, e.g. "/api/orders/{id}".
  kTemplate = 0,
  // `path` is a prefix of whole segments: "/static" matches "/static" and "/static/a/b", not
  // "/staticx".
  kPrefix = 1,
};

struct RuleSpec {
  // A unique name, for errors and the rejection hook; "global" for the global rule.
  std::string name{};
  // The methods it applies to ("GET", "POST"; upper-case); empty for any method. A request's method
  // is compared ignoring ASCII case, and a GET rule also matches HEAD unless
  // MiddlewareSpec::head_matches_get is false.
  std::vector<std::string> methods{};
  PathMatch match = PathMatch::kTemplate;
  // The template or prefix; must start with '/'. Unused for the global rule.
  std::string path{};
  // Units of quota one request takes, 0..kMaxCost (0 only reports). Default: 1.
  int64_t cost = 1;
  // The limits per tier.
  std::vector<TierSpec> tiers{};
  std::string location{};
};

struct IdentitySpec {
  // Header carrying an API key, the second resolver of the identity chain (after the
  // application's authentication callback, before the client IP); "" disables it. A key becomes
  // the identity only when MiddlewareOptions::verify_api_key accepts it, or, without a verifier,
  // when `api_key_unverified` is set; otherwise the header is ignored. The key is hashed (SHA-256)
  // before it becomes part of a store key. Default: "X-API-Key".
  std::string api_key_header = "X-API-Key";
  // Without a verifier, count every presented API key as an identity of its own. A client can
  // then pick a fresh bucket by sending a fresh key, so only set this where keys were checked
  // before the request got here (a gateway that refuses unknown keys). The global rule of such a
  // request is still counted per client address (see MiddlewareSpec::global). Default: false.
  bool api_key_unverified = false;
  // Tier of a request identified by API key, unless the key verifier names one.
  // Default: "authenticated".
  std::string api_key_tier = "authenticated";
  // Tier of a request the authentication callback identifies without naming a tier.
  // Default: "authenticated".
  std::string authenticated_tier = "authenticated";
  // Tier of a request identified by its client IP only. Default: "anonymous".
  std::string anonymous_tier = "anonymous";
  // Peers whose forwarding header is believed ("10.0.0.0/8", "::1"). Default: none.
  std::vector<std::string> trusted_proxies{};
  // The header those proxies maintain. Default: X-Forwarded-For.
  ForwardedHeader forwarded_header = ForwardedHeader::kXForwardedFor;
  // IPv6 clients are counted per network of this many bits, since one client usually holds a
  // whole /64 and could otherwise spread over 2^64 buckets. 1..128. Default: 64.
  int ipv6_prefix_bits = 64;
  std::string location{};
};

// What a failed check of the store does, when the store's own failure policy, if any, handed the
// error on (kPropagate). The middleware's failure policy (MiddlewareOptions::store) answers it.
enum class StoreErrorAction : uint8_t {
  // Answer `unavailable_status` (503): fail closed.
  kReject = 0,
  // Let the request through without RateLimit headers: fail open.
  kAllow = 1,
  // The failure policy's kLocal: decide on its in-process limiter, each limit divided by
  // `local_fallback_instances`: requests within this instance's share pass (without RateLimit
  // headers), the rest get `unavailable_status` with Retry-After. The default: a store outage
  // neither rejects everyone nor lifts every limit (docs/middleware.md says why).
  kLocal = 2,
};

// How the legacy X-RateLimit-Reset header counts.
enum class LegacyReset : uint8_t {
  // Seconds from now (envoyproxy/ratelimit, Kong). The default.
  kDeltaSeconds = 0,
  // Unix time in seconds (GitHub, rate-limiter-flexible).
  kEpochSeconds = 1,
};

struct ResponseSpec {
  // Status of a request over a limit. 400..599. Default: 429.
  int over_limit_status = 429;
  // Status of a request refused because the store could not decide (a failure-policy denial, or
  // a store error with StoreErrorAction::kReject). 400..599. Default: 503.
  int unavailable_status = 503;
  // Default: kLocal.
  StoreErrorAction store_error = StoreErrorAction::kLocal;
  // kLocal: the number of instances sharing the limits, which each limit (and burst) is divided
  // by, rounded down, at least 1. Default: 1.
  int64_t local_fallback_instances = 1;
  // Send RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers). Default: true.
  bool ratelimit_headers = true;
  // Also send X-RateLimit-Limit, -Remaining and -Reset, for the most constrained policy.
  // Default: false.
  bool legacy_headers = false;
  // Default: kDeltaSeconds.
  LegacyReset legacy_reset = LegacyReset::kDeltaSeconds;
  std::string location{};
};

struct MiddlewareSpec {
  // The first component of every counter key, `{area}:{route}:{tier}:{identity}:{policy}`, so
  // several services can share one store. Non-empty. Default: "http".
  std::string area = "http";
  // Decide, count and add headers, but never reject. Default: false.
  bool dry_run = false;
  // A rule for GET also matches HEAD, with the same counter key: HTTP defines HEAD as GET without
  // the body, and frameworks (cpp-httplib among them) answer HEAD with the GET handler, so a GET
  // rule that ignored HEAD could be walked around. Set false to limit HEAD only by rules that name
  // it (or by none). Default: true.
  bool head_matches_get = true;
  // Limits applied to every request before its route's (as ASP.NET Core's GlobalLimiter): the
  // flood guard. Counted per identity when the identity is vouched for (the authentication
  // callback, a verified API key, the client address), and per client address when it is only
  // claimed (an API key under api_key_unverified), so that a fresh claim is never a fresh guard.
  std::optional<RuleSpec> global{};
  // Route rules; the first match (in order) applies.
  std::vector<RuleSpec> routes{};
  // Policies attached to handlers in code rather than to paths, as ASP.NET Core's
  // RequireRateLimiting("name") and express's app.get(path, limiter, handler): a request the
  // adapter sends with RequestView::policy = name (httplib.h's Limited(), beast.h's
  // BeastCheckOptions::policy) meets that policy's limits for its tier, and nothing else in this
  // spec; the global rule applies where the adapter runs before routing. Each is a RuleSpec with a
  // name, a cost and tiers, and no path, prefix or methods; names are unique among routes and
  // policies. Counter keys use "@<name>" as the route component. Default: none.
  std::vector<RuleSpec> policies{};
  IdentitySpec identity{};
  ResponseSpec response{};
  // Where the spec came from ("rules.yaml"), for logs; "" when built in C++.
  std::string source{};
};

class MiddlewareConfig {
 public:
  // MiddlewareConfig::Create()
  //
  // Returns the validated, compiled config, or InvalidArgument naming the first problem with its
  // location and field: "rules.yaml:12:9: routes[1].tiers.premium[0].limit: must be >= 1"
  // (without "file:line:column: " for C++ specs).
  static absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> Create(MiddlewareSpec spec);

  ~MiddlewareConfig();
  MiddlewareConfig(const MiddlewareConfig&) = delete;
  MiddlewareConfig& operator=(const MiddlewareConfig&) = delete;

  const MiddlewareSpec& spec() const { return spec_; }

  // Returns one line per rule and tier, with its policies, for logs.
  std::string Describe() const;

  // MiddlewareConfig::HasPolicy()
  //
  // Returns whether `policies` defines one named `name`.
  bool HasPolicy(std::string_view name) const;

  // Internal: the compiled form the middleware evaluates.
  const internal::CompiledRules& compiled() const { return *compiled_; }

 private:
  MiddlewareConfig(MiddlewareSpec spec, std::unique_ptr<const internal::CompiledRules> compiled);

  MiddlewareSpec spec_;
  std::unique_ptr<const internal::CompiledRules> compiled_;
};

// ParseMiddlewareConfig()
//
// Parses YAML text; `source_name` names it in errors. Returns the config, or InvalidArgument
// "source:line:column: field: what is wrong".
absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> ParseMiddlewareConfig(
    std::string_view yaml, std::string_view source_name);

// LoadMiddlewareConfig()
//
// Reads and parses a YAML file. Returns the config, NotFound when the file does not exist, the
// errno-derived code when it cannot be read, or InvalidArgument as ParseMiddlewareConfig() does.
absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> LoadMiddlewareConfig(
    const std::filesystem::path& path);

}  // namespace sluice::http

#endif  // SLUICE_HTTP_MIDDLEWARE_CONFIG_H_
