// The YAML form of MiddlewareSpec (docs/middleware.md). yaml-cpp is translated here only: its
// exceptions are caught in ParseMiddlewareConfig(), and every error names
// "source:line:column: field" from the node's Mark.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

#include "sluice/http/middleware_config.h"
#include "sluice/status_macros.h"

#include "src/http/spec_validation.h"
#include "src/util/strings.h"
#include "src/yaml/yaml_document.h"

namespace sluice::http {
namespace {

using internal::SpecError;
using ::sluice::internal::AbslView;

class Reader {
 public:
  explicit Reader(const ::sluice::internal::FileContext& file) : file_(file) {}

  std::string Location(const YAML::Mark& mark) const { return file_.Location(mark); }
  std::string Location(const YAML::Node& node) const { return Location(node.Mark()); }

  absl::Status Error(const YAML::Node& node, std::string_view field,
                     absl::string_view message) const {
    return SpecError(Location(node), field, message);
  }

  // Returns OK when `node` is a mapping whose keys are all in `allowed` and distinct.
  absl::Status CheckMap(const YAML::Node& node, std::string_view field,
                        std::initializer_list<std::string_view> allowed) const {
    if (!node.IsMap()) return Error(node, field, "must be a mapping");
    std::vector<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.Scalar();
      const std::string key_field = field.empty() ? key : absl::StrCat(AbslView(field), ".", key);
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string expected;
        for (std::string_view a : allowed) {
          absl::StrAppend(&expected, expected.empty() ? "" : ", ", AbslView(a));
        }
        return Error(it->first, key_field,
                     absl::StrCat("unknown field (expected one of: ", expected, ")"));
      }
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        return Error(it->first, key_field, "repeated field");
      }
      seen.push_back(key);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const YAML::Node& node, std::string_view field) const {
    if (!node.IsScalar()) return Error(node, field, "must be a string");
    return node.Scalar();
  }

  absl::StatusOr<int64_t> Int(const YAML::Node& node, std::string_view field, int64_t min,
                              int64_t max) const {
    int64_t value = 0;
    if (!node.IsScalar() || !absl::SimpleAtoi(node.Scalar(), &value)) {
      return Error(node, field, "must be an integer");
    }
    if (value < min || value > max) {
      return Error(node, field, absl::StrCat("must be in ", min, "..", max, ", got ", value));
    }
    return value;
  }

  absl::StatusOr<bool> Bool(const YAML::Node& node, std::string_view field) const {
    if (node.IsScalar() && node.Scalar() == "true") return true;
    if (node.IsScalar() && node.Scalar() == "false") return false;
    return Error(node, field, "must be true or false");
  }

  // A period: whole seconds as an integer, or with a unit: "30s", "5m", "1h", "1d", "1w".
  absl::StatusOr<std::chrono::microseconds> Period(const YAML::Node& node,
                                                   std::string_view field) const {
    const std::string text = node.IsScalar() ? node.Scalar() : "";
    int64_t unit = 1;
    std::string_view digits = text;
    if (!digits.empty()) {
      switch (digits.back()) {
        case 's':
          unit = 1;
          break;
        case 'm':
          unit = 60;
          break;
        case 'h':
          unit = 3600;
          break;
        case 'd':
          unit = 86400;
          break;
        case 'w':
          unit = int64_t{7} * 86400;
          break;
        default:
          unit = 0;
          break;
      }
      if (unit != 0) digits.remove_suffix(1);
      if (unit == 0) unit = 1;
    }
    int64_t count = 0;
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos ||
        !absl::SimpleAtoi(AbslView(digits), &count) || count == 0) {
      return Error(node, field,
                   "must be a positive whole number of seconds, or one with a unit: 30s, 5m, 1h, "
                   "1d, 1w");
    }
    return std::chrono::seconds(count * unit);
  }

  // A string or a sequence of strings.
  absl::StatusOr<std::vector<std::string>> StringList(const YAML::Node& node,
                                                      std::string_view field) const {
    std::vector<std::string> out;
    if (node.IsScalar()) {
      out.push_back(node.Scalar());
      return out;
    }
    if (!node.IsSequence()) return Error(node, field, "must be a string or a list of strings");
    for (size_t i = 0; i < node.size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(std::string s,
                              String(node[i], absl::StrCat(AbslView(field), "[", i, "]")));
      out.push_back(std::move(s));
    }
    return out;
  }

  absl::StatusOr<PolicySpec> Policy(const YAML::Node& node, const std::string& field) const {
    SLUICE_RETURN_IF_ERROR(
        CheckMap(node, field, {"name", "limit", "period", "algorithm", "burst"}));
    PolicySpec policy{.location = Location(node)};
    if (node["name"]) {
      SLUICE_ASSIGN_OR_RETURN(policy.name, String(node["name"], field + ".name"));
    }
    if (!node["limit"]) return Error(node, field + ".limit", "is required");
    if (!node["period"]) return Error(node, field + ".period", "is required");
    SLUICE_ASSIGN_OR_RETURN(policy.limit.limit, Int(node["limit"], field + ".limit", 1, kMaxLimit));
    SLUICE_ASSIGN_OR_RETURN(policy.limit.period, Period(node["period"], field + ".period"));
    if (node["algorithm"]) {
      SLUICE_ASSIGN_OR_RETURN(std::string name, String(node["algorithm"], field + ".algorithm"));
      absl::StatusOr<Algorithm> algorithm = ParseAlgorithm(name);
      if (!algorithm.ok()) {
        return Error(node["algorithm"], field + ".algorithm", algorithm.status().message());
      }
      policy.limit.algorithm = *algorithm;
    }
    if (node["burst"]) {
      SLUICE_ASSIGN_OR_RETURN(policy.limit.burst,
                              Int(node["burst"], field + ".burst", 1, kMaxLimit));
    }
    if (absl::Status s = internal::ValidatePolicyLimit(policy.limit); !s.ok()) {
      // The message starts with the policy field at fault ("period: ..."); point at its line.
      const absl::string_view message = s.message();
      const std::string key(message.substr(0, message.find(':')));
      const YAML::Node at = node[key] ? node[key] : node;
      return SpecError(Location(at), field, message);
    }
    if (!policy.name.empty()) {
      if (absl::Status s = internal::ValidatePolicyName(policy.name); !s.ok()) {
        return Error(node["name"], field + ".name", s.message());
      }
    }
    return policy;
  }

  absl::StatusOr<std::vector<PolicySpec>> Policies(const YAML::Node& node,
                                                   const std::string& field) const {
    std::vector<PolicySpec> out;
    if (node.IsNull()) return out;  // `premium:` with nothing: not limited.
    if (!node.IsSequence()) return Error(node, field, "must be a list of limits");
    for (size_t i = 0; i < node.size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(PolicySpec policy, Policy(node[i], absl::StrCat(field, "[", i, "]")));
      out.push_back(std::move(policy));
    }
    return out;
  }

  // `global` for the global rule and for the policies attached by name (no path, prefix or
  // methods); a policy's name is required, as a route's is.
  absl::StatusOr<RuleSpec> Rule(const YAML::Node& node, const std::string& field, bool global,
                                bool name_required = false) const {
    if (global) {
      SLUICE_RETURN_IF_ERROR(CheckMap(node, field, {"name", "cost", "limits", "tiers"}));
    } else {
      SLUICE_RETURN_IF_ERROR(CheckMap(
          node, field, {"name", "method", "methods", "path", "prefix", "cost", "limits", "tiers"}));
    }
    RuleSpec rule{.location = Location(node)};
    if (node["name"]) {
      SLUICE_ASSIGN_OR_RETURN(rule.name, String(node["name"], field + ".name"));
    } else if (!global || name_required) {
      return Error(node, field + ".name", "is required");
    }
    if (node["method"] && node["methods"]) {
      return Error(node["methods"], field + ".methods", "give either method or methods");
    }
    for (const char* key : {"method", "methods"}) {
      if (!node[key]) continue;
      SLUICE_ASSIGN_OR_RETURN(rule.methods, StringList(node[key], absl::StrCat(field, ".", key)));
      for (const std::string& method : rule.methods) {
        if (absl::Status s = internal::ValidateMethod(method); !s.ok()) {
          return Error(node[key], absl::StrCat(field, ".", key), s.message());
        }
      }
    }
    if (!global) {
      if (node["path"].IsDefined() == node["prefix"].IsDefined()) {
        return Error(node, field, "give exactly one of path (a template) or prefix");
      }
      const bool prefix = node["prefix"].IsDefined();
      const char* key = prefix ? "prefix" : "path";
      rule.match = prefix ? PathMatch::kPrefix : PathMatch::kTemplate;
      SLUICE_ASSIGN_OR_RETURN(rule.path, String(node[key], absl::StrCat(field, ".", key)));
    }
    if (node["cost"]) {
      SLUICE_ASSIGN_OR_RETURN(rule.cost, Int(node["cost"], field + ".cost", 0, kMaxCost));
    }
    if (node["limits"] && node["tiers"]) {
      return Error(node["tiers"], field + ".tiers",
                   "give either limits (for every tier) or tiers (limits per tier); to combine "
                   "them, list the shared limits under tiers.\"*\"");
    }
    if (node["limits"]) {
      TierSpec tier{.tier = "*", .location = Location(node["limits"])};
      SLUICE_ASSIGN_OR_RETURN(tier.limits, Policies(node["limits"], field + ".limits"));
      rule.tiers.push_back(std::move(tier));
    }
    if (node["tiers"]) {
      const YAML::Node tiers = node["tiers"];
      if (!tiers.IsMap()) {
        return Error(tiers, field + ".tiers", "must be a mapping of tier to limits");
      }
      for (auto it = tiers.begin(); it != tiers.end(); ++it) {
        const std::string name = it->first.Scalar();
        const std::string tier_field = absl::StrCat(field, ".tiers.", name);
        if (absl::Status s = internal::ValidateTierName(name); !s.ok()) {
          return Error(it->first, tier_field, s.message());
        }
        for (const TierSpec& seen : rule.tiers) {
          if (seen.tier == name) return Error(it->first, tier_field, "tier listed twice");
        }
        TierSpec tier{.tier = name, .location = Location(it->first)};
        SLUICE_ASSIGN_OR_RETURN(tier.limits, Policies(it->second, tier_field));
        rule.tiers.push_back(std::move(tier));
      }
    }
    return rule;
  }

  absl::Status Identity(const YAML::Node& node, IdentitySpec& id) const {
    SLUICE_RETURN_IF_ERROR(
        CheckMap(node, "identity",
                 {"api_key_header", "api_key_unverified", "api_key_tier", "authenticated_tier",
                  "anonymous_tier", "trusted_proxies", "forwarded_header", "ipv6_prefix"}));
    id.location = Location(node);
    for (auto [key, target] :
         {std::pair<const char*, std::string*>{"api_key_header", &id.api_key_header},
          {"api_key_tier", &id.api_key_tier},
          {"authenticated_tier", &id.authenticated_tier},
          {"anonymous_tier", &id.anonymous_tier}}) {
      if (node[key]) {
        SLUICE_ASSIGN_OR_RETURN(*target, String(node[key], absl::StrCat("identity.", key)));
      }
    }
    if (node["api_key_unverified"]) {
      SLUICE_ASSIGN_OR_RETURN(id.api_key_unverified,
                              Bool(node["api_key_unverified"], "identity.api_key_unverified"));
    }
    if (node["trusted_proxies"]) {
      const YAML::Node list = node["trusted_proxies"];
      if (!list.IsSequence()) {
        return Error(list, "identity.trusted_proxies", "must be a list of CIDRs");
      }
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string field = absl::StrCat("identity.trusted_proxies[", i, "]");
        SLUICE_ASSIGN_OR_RETURN(std::string cidr, String(list[i], field));
        if (absl::StatusOr<Cidr> parsed = ParseCidr(cidr); !parsed.ok()) {
          return Error(list[i], field, parsed.status().message());
        }
        id.trusted_proxies.push_back(std::move(cidr));
      }
    }
    if (node["forwarded_header"]) {
      SLUICE_ASSIGN_OR_RETURN(std::string header,
                              String(node["forwarded_header"], "identity.forwarded_header"));
      if (EqualsIgnoreAsciiCase(header, "x-forwarded-for")) {
        id.forwarded_header = ForwardedHeader::kXForwardedFor;
      } else if (EqualsIgnoreAsciiCase(header, "forwarded")) {
        id.forwarded_header = ForwardedHeader::kForwarded;
      } else {
        return Error(node["forwarded_header"], "identity.forwarded_header",
                     "must be x-forwarded-for or forwarded");
      }
    }
    if (node["ipv6_prefix"]) {
      SLUICE_ASSIGN_OR_RETURN(int64_t bits,
                              Int(node["ipv6_prefix"], "identity.ipv6_prefix", 1, 128));
      id.ipv6_prefix_bits = static_cast<int>(bits);
    }
    return absl::OkStatus();
  }

  absl::Status Response(const YAML::Node& node, ResponseSpec& r) const {
    SLUICE_RETURN_IF_ERROR(CheckMap(
        node, "response",
        {"over_limit_status", "unavailable_status", "store_error", "local_fallback_instances",
         "ratelimit_headers", "legacy_headers", "legacy_reset"}));
    r.location = Location(node);
    if (node["over_limit_status"]) {
      SLUICE_ASSIGN_OR_RETURN(
          int64_t s, Int(node["over_limit_status"], "response.over_limit_status", 400, 599));
      r.over_limit_status = static_cast<int>(s);
    }
    if (node["unavailable_status"]) {
      SLUICE_ASSIGN_OR_RETURN(
          int64_t s, Int(node["unavailable_status"], "response.unavailable_status", 400, 599));
      r.unavailable_status = static_cast<int>(s);
    }
    if (node["store_error"]) {
      SLUICE_ASSIGN_OR_RETURN(std::string v, String(node["store_error"], "response.store_error"));
      if (v == "reject") {
        r.store_error = StoreErrorAction::kReject;
      } else if (v == "allow") {
        r.store_error = StoreErrorAction::kAllow;
      } else if (v == "local") {
        r.store_error = StoreErrorAction::kLocal;
      } else {
        return Error(node["store_error"], "response.store_error", "must be local, reject or allow");
      }
    }
    if (node["local_fallback_instances"]) {
      SLUICE_ASSIGN_OR_RETURN(
          r.local_fallback_instances,
          Int(node["local_fallback_instances"], "response.local_fallback_instances", 1, 1'000'000));
    }
    if (node["ratelimit_headers"]) {
      SLUICE_ASSIGN_OR_RETURN(r.ratelimit_headers,
                              Bool(node["ratelimit_headers"], "response.ratelimit_headers"));
    }
    if (node["legacy_headers"]) {
      SLUICE_ASSIGN_OR_RETURN(r.legacy_headers,
                              Bool(node["legacy_headers"], "response.legacy_headers"));
    }
    if (node["legacy_reset"]) {
      SLUICE_ASSIGN_OR_RETURN(std::string v, String(node["legacy_reset"], "response.legacy_reset"));
      if (v == "delta") {
        r.legacy_reset = LegacyReset::kDeltaSeconds;
      } else if (v == "epoch") {
        r.legacy_reset = LegacyReset::kEpochSeconds;
      } else {
        return Error(node["legacy_reset"], "response.legacy_reset", "must be delta or epoch");
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<MiddlewareSpec> Spec(const YAML::Node& root) const {
    MiddlewareSpec spec{.source = file_.Name()};
    if (root.IsNull()) return Error(root, "", "the file is empty");
    SLUICE_RETURN_IF_ERROR(CheckMap(root, "",
                                    {"area", "dry_run", "head_matches_get", "identity", "response",
                                     "global", "routes", "policies"}));
    if (root["area"]) {
      SLUICE_ASSIGN_OR_RETURN(spec.area, String(root["area"], "area"));
    }
    if (root["dry_run"]) {
      SLUICE_ASSIGN_OR_RETURN(spec.dry_run, Bool(root["dry_run"], "dry_run"));
    }
    if (root["head_matches_get"]) {
      SLUICE_ASSIGN_OR_RETURN(spec.head_matches_get,
                              Bool(root["head_matches_get"], "head_matches_get"));
    }
    if (root["identity"]) SLUICE_RETURN_IF_ERROR(Identity(root["identity"], spec.identity));
    if (root["response"]) SLUICE_RETURN_IF_ERROR(Response(root["response"], spec.response));
    if (root["global"]) {
      SLUICE_ASSIGN_OR_RETURN(spec.global, Rule(root["global"], "global", /*global=*/true));
    }
    if (root["routes"]) {
      const YAML::Node routes = root["routes"];
      if (!routes.IsSequence()) return Error(routes, "routes", "must be a list of rules");
      for (size_t i = 0; i < routes.size(); ++i) {
        SLUICE_ASSIGN_OR_RETURN(RuleSpec rule,
                                Rule(routes[i], absl::StrCat("routes[", i, "]"), /*global=*/false));
        spec.routes.push_back(std::move(rule));
      }
    }
    if (root["policies"]) {
      const YAML::Node policies = root["policies"];
      if (!policies.IsSequence()) {
        return Error(policies, "policies",
                     "must be a list of policies (name, cost, limits or tiers)");
      }
      for (size_t i = 0; i < policies.size(); ++i) {
        SLUICE_ASSIGN_OR_RETURN(RuleSpec policy,
                                Rule(policies[i], absl::StrCat("policies[", i, "]"),
                                     /*global=*/true, /*name_required=*/true));
        spec.policies.push_back(std::move(policy));
      }
    }
    return spec;
  }

 private:
  const ::sluice::internal::FileContext& file_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> ParseMiddlewareConfig(
    std::string_view yaml, std::string_view source_name) {
  // The same front end as the rate limit config: a document that cannot hang the parser, with
  // aliases and nesting bounded before the walk below.
  const ::sluice::internal::FileContext file{std::string(source_name)};
  const std::string text(yaml);
  SLUICE_ASSIGN_OR_RETURN(YAML::Node root, ::sluice::internal::LoadFirstDocument(file, text));
  SLUICE_RETURN_IF_ERROR(::sluice::internal::CheckExpandedSize(file, root, text.size()));
  Reader reader{file};
  absl::StatusOr<MiddlewareSpec> spec;
  try {
    spec = reader.Spec(root);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's own conversion errors carry the position too.
    return SpecError(reader.Location(e.mark), "", e.msg);
  }
  if (!spec.ok()) return spec.status();
  return MiddlewareConfig::Create(*std::move(spec));
}

absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> LoadMiddlewareConfig(
    const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path.string(), ": no such file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::Status(absl::ErrnoToStatusCode(errno),
                        absl::StrCat(path.string(), ": cannot read: ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseMiddlewareConfig(text.str(), path.string());
}

}  // namespace sluice::http
