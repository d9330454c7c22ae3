// Tests of the middleware rules: YAML and C++ specs, validation errors with file:line:column and
// field, defaults, and the compiled per-tier policy lists.
#include "sluice/http/middleware_config.h"

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/key.h"

#include "src/http/compiled_rules.h"

namespace sluice::http {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr char kRules[] = R"(area: shop
dry_run: false
identity:
  api_key_header: X-Key
  trusted_proxies: [10.0.0.0/8, "::1"]
  forwarded_header: forwarded
  ipv6_prefix: 56
response:
  over_limit_status: 429
  store_error: allow
  legacy_headers: true
  legacy_reset: epoch
global:
  tiers:
    "*":
      - {name: global, limit: 100, period: 1s, algorithm: gcra, burst: 200}
routes:
  - name: orders
    method: GET
    path: /api/orders/{id}
    cost: 2
    tiers:
      anonymous:
        - {name: burst, limit: 10, period: 1s}
        - {name: daily, limit: 1000, period: 1d}
      premium: []
  - name: static
    prefix: /static
    limits:
      - {limit: 5, period: 90s, algorithm: sliding_window}
)";

absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> Parse(std::string_view yaml) {
  return ParseMiddlewareConfig(yaml, "rules.yaml");
}

std::string ErrorOf(std::string_view yaml) {
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config = Parse(yaml);
  EXPECT_FALSE(config.ok()) << yaml;
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

std::vector<std::string> PolicyNames(const internal::CompiledTier* tier) {
  std::vector<std::string> names;
  if (tier != nullptr) {
    for (const internal::CompiledPolicy& p : tier->policies) names.push_back(p.name);
  }
  return names;
}

TEST(MiddlewareConfig, ParsesEveryField) {
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config = Parse(kRules);
  ASSERT_TRUE(config.ok()) << config.status();
  const MiddlewareSpec& spec = (*config)->spec();
  EXPECT_EQ(spec.area, "shop");
  EXPECT_EQ(spec.source, "rules.yaml");
  EXPECT_EQ(spec.identity.api_key_header, "X-Key");
  EXPECT_THAT(spec.identity.trusted_proxies, ::testing::ElementsAre("10.0.0.0/8", "::1"));
  EXPECT_EQ(spec.identity.forwarded_header, ForwardedHeader::kForwarded);
  EXPECT_EQ(spec.identity.ipv6_prefix_bits, 56);
  EXPECT_EQ(spec.response.store_error, StoreErrorAction::kAllow);
  EXPECT_TRUE(spec.response.legacy_headers);
  EXPECT_EQ(spec.response.legacy_reset, LegacyReset::kEpochSeconds);
  ASSERT_TRUE(spec.global.has_value());
  EXPECT_EQ(spec.global->name, "global");
  ASSERT_EQ(spec.routes.size(), 2u);
  EXPECT_EQ(spec.routes[0].methods, std::vector<std::string>{"GET"});
  EXPECT_EQ(spec.routes[0].cost, 2);
  EXPECT_EQ(spec.routes[0].location, "rules.yaml:18:5");
  EXPECT_EQ(spec.routes[1].match, PathMatch::kPrefix);
  // An unnamed limit is named after its quota and period.
  EXPECT_EQ(spec.routes[1].tiers[0].limits[0].name, "5-per-90s");
  EXPECT_EQ(spec.routes[1].tiers[0].limits[0].limit.algorithm, Algorithm::kSlidingWindow);
  EXPECT_EQ(spec.routes[1].tiers[0].limits[0].limit.period, seconds(90));
}

TEST(MiddlewareConfig, CompilesTiersWithTheGlobalRuleFirst) {
  std::shared_ptr<const MiddlewareConfig> config = Parse(kRules).value();
  const internal::CompiledRules& rules = config->compiled();
  ASSERT_EQ(rules.routes.size(), 2u);
  const internal::TierTable& orders = rules.routes[0].tiers;
  EXPECT_THAT(PolicyNames(orders.Find("anonymous")),
              ::testing::ElementsAre("global", "burst", "daily"));
  // premium is listed with no limits: only the global rule applies to it.
  EXPECT_THAT(PolicyNames(orders.Find("premium")), ::testing::ElementsAre("global"));
  // Other tiers get the global "*" limits and no route limits.
  EXPECT_THAT(PolicyNames(orders.Find("gold")), ::testing::ElementsAre("global"));
  EXPECT_EQ(orders.Find("anonymous")->policy_header,
            R"("global";q=200;w=2, "burst";q=10;w=1, "daily";q=1000;w=86400)");
  const internal::CompiledPolicy& burst = orders.Find("anonymous")->policies[1];
  EXPECT_EQ(burst.cost, 2);
  EXPECT_EQ(internal::BuildCounterKey(burst, "ip:192.0.2.7"),
            R"({ip:192.0.2.7}shop:GET /api/orders/{id}:anonymous:burst)");
  const internal::CompiledPolicy& global = orders.Find("anonymous")->policies[0];
  EXPECT_EQ(global.cost, 1);
  EXPECT_EQ(internal::BuildCounterKey(global, "user:a}b"), R"({user:a\}b}shop:*:*:global)");
  // The per-request tag agrees with the core key rule (docs/keys.md) on every shape, and the
  // identity is the key's tag.
  for (const std::string_view identity :
       {"", ":", "\\", "}", "a", "ip:1.2.3.4", "::1", "a\\}b", "\\\\}}", "user:x\\", "key:abc"}) {
    const std::string key =
        internal::BuildCounterKeyFromTag(burst, internal::IdentityKeyTag(identity));
    EXPECT_EQ(key, TaggedKey(identity, burst.key_name)) << identity;
    const KeyParts parts = SplitKey(key);
    EXPECT_TRUE(parts.tagged) << identity;
    EXPECT_EQ(UnescapeKeyTag(parts.tag), identity);
    EXPECT_EQ(parts.name, burst.key_name);
  }
  EXPECT_THAT(PolicyNames(rules.routes[1].tiers.Find("anonymous")),
              ::testing::ElementsAre("global", "5-per-90s"));
  EXPECT_THAT(PolicyNames(rules.global_only.Find("anyone")), ::testing::ElementsAre("global"));
  EXPECT_EQ(rules.client_ip.trusted_proxies.size(), 2u);
  EXPECT_EQ(rules.client_ip.header, ForwardedHeader::kForwarded);
}

TEST(MiddlewareConfig, CppSpecAndYamlAreTheSameModel) {
  MiddlewareSpec spec{
      .area = "shop",
      .global = RuleSpec{.tiers = {{.tier = "*",
                                    .limits = {{.name = "global",
                                                .limit = {.algorithm = Algorithm::kGcra,
                                                          .limit = 100,
                                                          .period = seconds(1),
                                                          .burst = 200}}}}}},
      .routes = {
          {.name = "orders",
           .methods = {"GET"},
           .path = "/api/orders/{id}",
           .cost = 2,
           .tiers = {{.tier = "anonymous",
                      .limits = {{.name = "burst", .limit = {.limit = 10, .period = seconds(1)}},
                                 {.name = "daily",
                                  .limit = {.limit = 1000, .period = seconds(86400)}}}},
                     {.tier = "premium", .limits = {}}}},
          {.name = "static",
           .match = PathMatch::kPrefix,
           .path = "/static",
           .tiers = {{.tier = "*",
                      .limits = {{.limit = {.algorithm = Algorithm::kSlidingWindow,
                                            .limit = 5,
                                            .period = seconds(90)}}}}}}}};
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> built =
      MiddlewareConfig::Create(std::move(spec));
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ((*built)->Describe(), Parse(kRules).value()->Describe());
}

TEST(MiddlewareConfig, BucketWindowIsTheTimeToRefillTheCapacity) {
  std::shared_ptr<const MiddlewareConfig> config = Parse(R"(routes:
  - name: r
    path: /r
    limits:
      - {name: g, limit: 100, period: 1m, algorithm: gcra, burst: 20}
      - {name: t, limit: 3, period: 10s, algorithm: token_bucket, burst: 7}
      - {name: f, limit: 3, period: 10s}
)")
                                                       .value();
  const internal::CompiledTier* tier = config->compiled().routes[0].tiers.Find("anonymous");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->policy_header, R"("g";q=20;w=12, "t";q=7;w=24, "f";q=3;w=10)");
}

TEST(MiddlewareConfig, ErrorsNameFileLineAndField) {
  EXPECT_EQ(
      ErrorOf("routes:\n  - name: r\n    path: /r\n    limits:\n      - {limit: 0, period: 1s}\n"),
      "rules.yaml:5:17: routes[0].limits[0].limit: must be in 1..4294967295, got 0");
  EXPECT_EQ(
      ErrorOf(
          "routes:\n  - name: r\n    path: /r\n    limits:\n      - {limit: 5, period: 1.5s}\n"),
      "rules.yaml:5:28: routes[0].limits[0].period: must be a positive whole number of "
      "seconds, or one with a unit: 30s, 5m, 1h, 1d, 1w");
  EXPECT_THAT(ErrorOf("routes:\n  - name: r\n    path: /r\n    limits:\n"
                      "      - {limit: 5, period: 1s, burst: 3}\n"),
              HasSubstr("rules.yaml:5:39: routes[0].limits[0]: burst: only token_bucket and gcra"));
  EXPECT_THAT(ErrorOf("routes:\n  - name: r\n    path: /r\n    limitz: []\n"),
              HasSubstr("rules.yaml:4:5: routes[0].limitz: unknown field (expected one of:"));
  EXPECT_EQ(ErrorOf("routes:\n  - name: r\n    path: api\n"),
            "rules.yaml:2:5: routes[0].path: 'api': must start with '/'");
  EXPECT_EQ(ErrorOf("routes:\n  - path: /r\n"), "rules.yaml:2:5: routes[0].name: is required");
  EXPECT_EQ(ErrorOf("routes:\n  - name: r\n    path: /r\n    prefix: /r\n"),
            "rules.yaml:2:5: routes[0]: give exactly one of path (a template) or prefix");
  EXPECT_EQ(ErrorOf("identity:\n  trusted_proxies: [10.0.0.1/8]\n"),
            "rules.yaml:2:21: identity.trusted_proxies[0]: '10.0.0.1/8' has host bits set; did "
            "you mean 10.0.0.0/8?");
  EXPECT_EQ(ErrorOf("response:\n  over_limit_status: 200\n"),
            "rules.yaml:2:22: response.over_limit_status: must be in 400..599, got 200");
  EXPECT_EQ(ErrorOf("dry_run: maybe\n"), "rules.yaml:1:10: dry_run: must be true or false");
  EXPECT_EQ(ErrorOf("routes:\n  - name: r\n    method: get\n    path: /r\n"),
            "rules.yaml:3:13: routes[0].method: 'get': methods are upper-case, like GET or POST");
  EXPECT_EQ(ErrorOf("routes:\n  - name: r\n    path: /r\n    tiers:\n      bad tier: []\n"),
            "rules.yaml:5:7: routes[0].tiers.bad tier: 'bad tier': a tier name is '*' or 1 to 64 "
            "characters of [A-Za-z0-9_.-]");
  EXPECT_THAT(ErrorOf("routes: [\n"), HasSubstr("rules.yaml:"));
  EXPECT_THAT(ErrorOf("area: a\narea: b\n"), HasSubstr("rules.yaml:2:1: area: repeated field"));
  EXPECT_EQ(ErrorOf(""), "rules.yaml: the file is empty");
}

// The middleware reads YAML through the same front end as the rate limit config: aliases are
// bounded once expanded (a few lines must not stand for an exponential tree), an anchor used inside
// itself is an error rather than a cycle, a second document is refused rather than ignored, and
// malformed input ends in an error rather than an endless parse.
TEST(MiddlewareConfig, HostileYamlIsALocatedErrorNotABlowUp) {
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 7; ++i) {
    laughs += absl::StrCat("a", i, ": &a", i, " [*a", i - 1, ", *a", i - 1, ", *a", i - 1, ", *a",
                           i - 1, ", *a", i - 1, ", *a", i - 1, ", *a", i - 1, ", *a", i - 1,
                           ", *a", i - 1, ", *a", i - 1, "]\n");
  }
  EXPECT_THAT(ErrorOf(laughs), HasSubstr("YAML nodes once aliases are expanded"));
  EXPECT_THAT(ErrorOf("routes: &r [*r]\n"), HasSubstr("or an anchor is used inside itself"));
  EXPECT_THAT(ErrorOf("dry_run: true\n---\ndry_run: false\n"),
              HasSubstr("rules.yaml:3:1: more than one YAML document"));
  EXPECT_THAT(ErrorOf(","), HasSubstr("rules.yaml:"));
}

TEST(MiddlewareConfig, RejectsAmbiguousOrUnreachableRules) {
  EXPECT_THAT(ErrorOf("routes:\n  - {name: a, path: /x}\n  - {name: a, path: /y}\n"),
              HasSubstr("rules.yaml:3:5: routes[1].name: 'a' is the name of routes[0] too"));
  EXPECT_THAT(ErrorOf("routes:\n  - {name: a, method: GET, path: \"/x/{id}\"}\n"
                      "  - {name: b, method: GET, path: \"/x/{other}\"}\n"),
              HasSubstr("rules.yaml:3:5: routes[1]: rule 'b' (GET /x/{other}) is shadowed by "
                        "routes[0] ('a')"));
  EXPECT_THAT(
      ErrorOf("routes:\n  - {name: a, prefix: /x}\n  - {name: b, method: POST, prefix: /x/}\n"),
      HasSubstr("shadowed"));
  EXPECT_TRUE(Parse("routes:\n  - {name: a, method: GET, path: /x}\n"
                    "  - {name: b, method: POST, path: /x}\n  - {name: c, path: /x}\n")
                  .ok());
  EXPECT_THAT(ErrorOf("routes:\n  - {name: a, methods: [GET, POST], path: /x}\n"
                      "  - {name: b, method: POST, path: /x}\n"),
              HasSubstr("shadowed"));
  EXPECT_THAT(
      ErrorOf("routes:\n  - name: r\n    path: /r\n    limits:\n      - {name: x, limit: 1, "
              "period: 1s}\n"
              "      - {name: x, limit: 2, period: 1d}\n"),
      HasSubstr("rules.yaml:6:9: routes[0].tiers.*[1].name: 'x' is used twice in this tier"));
  EXPECT_THAT(ErrorOf("global:\n  limits:\n    - {name: x, limit: 1, period: 1s}\n"
                      "routes:\n  - name: r\n    path: /r\n    limits:\n"
                      "      - {name: x, limit: 2, period: 1s}\n"),
              HasSubstr("rules.yaml:8:9: routes[0]: policy name 'x' of tier '*' is used twice"));
  EXPECT_THAT(ErrorOf("global:\n  name: g\n  path: /x\n"), HasSubstr("unknown field"));
  EXPECT_THAT(ErrorOf("routes:\n  - name: r\n    path: /r\n    limits: []\n    tiers: {}\n"),
              HasSubstr("give either limits"));
}

TEST(MiddlewareConfig, CppSpecErrorsNameTheField) {
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config = MiddlewareConfig::Create(
      {.routes = {
           {.name = "r",
            .path = "/r",
            .tiers = {{.tier = "premium",
                       .limits = {{.name = "p",
                                   .limit = {.limit = 5,
                                             .period = std::chrono::milliseconds(1500)}}}}}}}});
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              HasSubstr("routes[0].tiers.premium[0]: period: must be a whole number of seconds"));
  EXPECT_FALSE(MiddlewareConfig::Create({.area = ""}).ok());
  EXPECT_FALSE(MiddlewareConfig::Create({.identity = {.anonymous_tier = "*"}}).ok());
  EXPECT_FALSE(MiddlewareConfig::Create({.identity = {.ipv6_prefix_bits = 0}}).ok());
  EXPECT_FALSE(
      MiddlewareConfig::Create({.routes = {{.name = "r", .path = "/r", .cost = -1}}}).ok());
  EXPECT_FALSE(MiddlewareConfig::Create({.global = RuleSpec{.methods = {"GET"}}}).ok());
}

TEST(MiddlewareConfig, LoadsFilesAndReportsMissingOnes) {
  EXPECT_EQ(LoadMiddlewareConfig("/nonexistent/rules.yaml").status().code(),
            absl::StatusCode::kNotFound);
  // sluice_add_test() sets SLUICE_SOURCE_DIR; without it, run from the source tree root.
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  const std::string source_dir = root != nullptr ? root : ".";
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> example =
      LoadMiddlewareConfig(std::filesystem::path(source_dir) / "examples/api_server/rules.yaml");
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ((*example)->spec().routes.size(), 3u);
}

}  // namespace
}  // namespace sluice::http
