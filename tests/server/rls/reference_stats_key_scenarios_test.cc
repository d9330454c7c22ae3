// envoyproxy/ratelimit's stats-key tests whose configs are written inline in Go
// (test/config/config_test.go: TestDetailedMetric, the TestValueToMetric_* tests,
// TestWildcardStatsBehavior), ported with the same configs in YAML: which stats key a descriptor's
// hits are counted under.
// Counts and the list of what is not ported: docs/compatibility.md, "Reference scenarios".
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/config.h"

namespace sluice {
namespace {

// Ports the stats-key tables of config_test.go, whose configs are written inline in Go (here in
// YAML): TestDetailedMetric (7 cases), the TestValueToMetric_* tests (UsesRuntimeValuesInStats,
// DefaultKeyIncludesValueAtThatLevel, MidLevelOnly, NoFlag_Unchanged,
// DoesNotOverrideDetailedMetric, WithConfiguredValues, WithWildcard, WithEmptyValue,
// FullKeyMatchesStatsKey; sluice has one key, so "FullKey equals Stats.Key" holds by construction)
// and TestWildcardStatsBehavior (7 cases).
struct StatsKeyCase {
  std::string name;
  std::string yaml;
  std::string domain;
  std::vector<std::pair<std::string, std::string>> entries;
  std::string stats_key;
};

class ReferenceStatsKeys : public ::testing::TestWithParam<StatsKeyCase> {};

TEST_P(ReferenceStatsKeys, MatchUnderTheReferencesStatsKey) {
  const StatsKeyCase& c = GetParam();
  const ConfigSource source{.name = c.name + ".yaml", .content = c.yaml};
  absl::StatusOr<std::shared_ptr<const RateLimitConfig>> config =
      ParseRateLimitConfig({&source, 1});
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<DescriptorEntry> entries;
  for (const auto& [key, value] : c.entries) entries.push_back({key, value});
  const std::optional<RuleMatch> match = (*config)->Match(c.domain, entries);
  ASSERT_TRUE(match.has_value());
  EXPECT_FALSE(match->rule->limits.empty());
  EXPECT_EQ(match->stats_key, c.stats_key);
}

constexpr const char* kNestedTwoLevels = R"yaml(
domain: nested
descriptors:
  - key: key-1
    detailed_metric: %s
    rate_limit: {unit: minute, requests_per_unit: 100}
    descriptors:
      - key: key-2
        detailed_metric: %s
        rate_limit: {unit: minute, requests_per_unit: 5}
)yaml";

std::string NestedTwoLevels(bool outer, bool inner) {
  std::string out = kNestedTwoLevels;
  out.replace(out.find("%s"), 2, outer ? "true" : "false");
  out.replace(out.find("%s"), 2, inner ? "true" : "false");
  return out;
}

constexpr const char* kRealistic = R"yaml(
domain: nested
descriptors:
  - key: key_1
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 500}
  - key: key_1
    value: some-value-for-key-1
    rate_limit: {unit: minute, requests_per_unit: 500}
  - key: key_2
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 5000}
    descriptors:
      - key: key_3
        detailed_metric: true
      - key: key_3
        value: requested-key3-value
        detailed_metric: true
        rate_limit: {unit: minute, requests_per_unit: 5}
  - key: key_2
    value: specific-id
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 50000}
    descriptors:
      - key: key_3
        detailed_metric: true
      - key: key_3
        value: requested-key3-value
        detailed_metric: true
        rate_limit: {unit: minute, requests_per_unit: 100}
)yaml";

constexpr const char* kRouteMethodSubject = R"yaml(
domain: domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 60}
)yaml";

constexpr const char* kOneWildcard = R"yaml(
domain: test-domain
descriptors:
  - key: wild
    value: "%s"
    %s
    rate_limit: {unit: minute, requests_per_unit: 20}
)yaml";

std::string OneWildcard(const std::string& pattern, const std::string& flags) {
  std::string out = kOneWildcard;
  out.replace(out.find("%s"), 2, pattern);
  out.replace(out.find("%s"), 2, flags);
  return out;
}

std::vector<StatsKeyCase> StatsKeyCases() {
  const std::vector<std::pair<std::string, std::string>> draw = {
      {"route", "draw"}, {"http_method", "GET"}, {"subject_id", "123"}};
  return {
      // TestDetailedMetric.
      {"DetailedTopLevelOnly",
       NestedTwoLevels(true, false),
       "nested",
       {{"key-1", "value-1"}},
       "nested.key-1_value-1"},
      {"NotDetailedTopLevelOnly",
       NestedTwoLevels(false, false),
       "nested",
       {{"key-1", "value-1"}},
       "nested.key-1"},
      {"DetailedNested",
       NestedTwoLevels(true, true),
       "nested",
       {{"key-1", "value-1"}, {"key-2", "value-2"}},
       "nested.key-1_value-1.key-2_value-2"},
      {"NotDetailedNested",
       NestedTwoLevels(false, false),
       "nested",
       {{"key-1", "value-1"}, {"key-2", "value-2"}},
       "nested.key-1.key-2"},
      {"RealisticSimple",
       kRealistic,
       "nested",
       {{"key_1", "value-for-key-1"}},
       "nested.key_1_value-for-key-1"},
      {"RealisticSecondNotNested",
       kRealistic,
       "nested",
       {{"key_2", "key-2-value"}},
       "nested.key_2_key-2-value"},
      {"RealisticNested",
       kRealistic,
       "nested",
       {{"key_2", "key-2-value"}, {"key_3", "requested-key3-value"}},
       "nested.key_2_key-2-value.key_3_requested-key3-value"},
      // TestValueToMetric_*.
      {"ValueToMetricUsesRuntimeValues", kRouteMethodSubject, "domain", draw,
       "domain.route_draw.http_method_GET.subject_id"},
      {"ValueToMetricDefaultKeyIncludesValueAtThatLevel",
       R"yaml(
domain: d
descriptors:
  - key: k1
    value_to_metric: true
    descriptors:
      - key: k2
        rate_limit: {unit: second, requests_per_unit: 1}
)yaml",
       "d",
       {{"k1", "A"}, {"k2", "foo"}},
       "d.k1_A.k2"},
      {"ValueToMetricMidLevelOnly",
       R"yaml(
domain: d
descriptors:
  - key: k1
    descriptors:
      - key: k2
        value_to_metric: true
        descriptors:
          - key: k3
            rate_limit: {unit: second, requests_per_unit: 1}
)yaml",
       "d",
       {{"k1", "X"}, {"k2", "Y"}, {"k3", "Z"}},
       "d.k1.k2_Y.k3"},
      {"ValueToMetricNoFlagUnchanged",
       R"yaml(
domain: d
descriptors:
  - key: k1
    descriptors:
      - key: k2
        rate_limit: {unit: second, requests_per_unit: 1}
)yaml",
       "d",
       {{"k1", "X"}, {"k2", "Y"}},
       "d.k1.k2"},
      {"ValueToMetricDoesNotOverrideDetailedMetric", R"yaml(
domain: domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            detailed_metric: true
            rate_limit: {unit: minute, requests_per_unit: 60}
)yaml",
       "domain", draw, "domain.route_draw.http_method_GET.subject_id_123"},
      {"ValueToMetricWithConfiguredValuesGet",
       R"yaml(
domain: test-domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value: GET
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 60}
      - key: http_method
        value: POST
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 30}
)yaml",
       "test-domain",
       {{"route", "api"}, {"http_method", "GET"}, {"subject_id", "user123"}},
       "test-domain.route_api.http_method_GET.subject_id"},
      {"ValueToMetricWithConfiguredValuesPost",
       R"yaml(
domain: test-domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value: GET
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 60}
      - key: http_method
        value: POST
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 30}
)yaml",
       "test-domain",
       {{"route", "api"}, {"http_method", "POST"}, {"subject_id", "user456"}},
       "test-domain.route_api.http_method_POST.subject_id"},
      {"ValueToMetricWithWildcard",
       R"yaml(
domain: domain
descriptors:
  - key: user
    value_to_metric: true
    descriptors:
      - key: action
        value: read*
        value_to_metric: true
        descriptors:
          - key: resource
            rate_limit: {unit: minute, requests_per_unit: 100}
)yaml",
       "domain",
       {{"user", "alice"}, {"action", "readfile"}, {"resource", "documents"}},
       "domain.user_alice.action_readfile.resource"},
      {"ValueToMetricWithWildcardAgain",
       R"yaml(
domain: domain
descriptors:
  - key: user
    value_to_metric: true
    descriptors:
      - key: action
        value: read*
        value_to_metric: true
        descriptors:
          - key: resource
            rate_limit: {unit: minute, requests_per_unit: 100}
)yaml",
       "domain",
       {{"user", "bob"}, {"action", "readdata"}, {"resource", "database"}},
       "domain.user_bob.action_readdata.resource"},
      {"ValueToMetricWithEmptyRouteValue",
       kRouteMethodSubject,
       "domain",
       {{"route", ""}, {"http_method", "GET"}, {"subject_id", "123"}},
       "domain.route.http_method_GET.subject_id"},
      {"ValueToMetricWithEmptyMethodValue",
       kRouteMethodSubject,
       "domain",
       {{"route", "draw"}, {"http_method", ""}, {"subject_id", "123"}},
       "domain.route_draw.http_method.subject_id"},
      {"ValueToMetricWithEmptyValues",
       kRouteMethodSubject,
       "domain",
       {{"route", ""}, {"http_method", ""}, {"subject_id", "123"}},
       "domain.route.http_method.subject_id"},
      {"ValueToMetricFullKeyMatchesStatsKey",
       kRouteMethodSubject,
       "domain",
       {{"route", "api"}, {"http_method", "GET"}, {"subject_id", "user123"}},
       "domain.route_api.http_method_GET.subject_id"},
      // TestWildcardStatsBehavior.
      {"WildcardNoFlags",
       OneWildcard("foo*", ""),
       "test-domain",
       {{"wild", "foo1"}},
       "test-domain.wild_foo*"},
      {"WildcardValueToMetric",
       OneWildcard("foo*", "value_to_metric: true"),
       "test-domain",
       {{"wild", "foo1"}},
       "test-domain.wild_foo1"},
      {"WildcardShareThreshold",
       OneWildcard("foo*", "share_threshold: true"),
       "test-domain",
       {{"wild", "foo1"}},
       "test-domain.wild_foo*"},
      {"WildcardShareThresholdBeatsValueToMetric",
       OneWildcard("foo*", "share_threshold: true\n    value_to_metric: true"),
       "test-domain",
       {{"wild", "foo1"}},
       "test-domain.wild_foo*"},
      {"WildcardValueToMetricInOtherDescriptor",
       R"yaml(
domain: test-domain
descriptors:
  - key: wild
    value: foo*
    descriptors:
      - key: other
        value_to_metric: true
        descriptors:
          - key: limit
            rate_limit: {unit: minute, requests_per_unit: 20}
)yaml",
       "test-domain",
       {{"wild", "foo1"}, {"other", "bar"}, {"limit", "X"}},
       "test-domain.wild_foo*.other_bar.limit"},
      {"MiddleWildcardNoFlags",
       OneWildcard("foo*bar*", ""),
       "test-domain",
       {{"wild", "fooXbarY"}},
       "test-domain.wild_foo*bar*"},
      {"MiddleWildcardValueToMetric",
       OneWildcard("foo*bar*", "value_to_metric: true"),
       "test-domain",
       {{"wild", "foo123bar456"}},
       "test-domain.wild_foo123bar456"},
  };
}

INSTANTIATE_TEST_SUITE_P(ConfigTest, ReferenceStatsKeys, ::testing::ValuesIn(StatsKeyCases()),
                         [](const ::testing::TestParamInfo<StatsKeyCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace sluice
