// Matching: the reference's GetLimit() order (exact, first wildcard, value-less default), depth,
// no backtracking, and what sluiced needs to build counter and stats keys.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/config.h"

#include "tests/config/fixture_path.h"

namespace sluice {
namespace {

using ::sluice::testing::FixturePath;
using ::testing::ElementsAre;

std::shared_ptr<const RateLimitConfig> Parse(const std::string& yaml) {
  const ConfigSource source{"match.yaml", yaml};
  auto config = ParseRateLimitConfig({&source, 1});
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : nullptr;
}

std::shared_ptr<const RateLimitConfig> Load(const std::string& fixture) {
  auto config = LoadRateLimitConfig(FixturePath(fixture));
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : nullptr;
}

// requests_per_unit of the single limit matched by `entries`, or -1 when nothing matches.
int64_t Quota(const RateLimitConfig& config, std::string_view domain,
              const std::vector<DescriptorEntry>& entries) {
  const std::optional<RuleMatch> match = config.Match(domain, entries);
  if (!match.has_value()) return -1;
  if (match->rule->limits.empty()) return -2;  // unlimited
  return match->rule->limits[0].requests_per_unit;
}

constexpr const char* kPrecedence = R"(
domain: d
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: k
    value: ab*
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: k
    value: a*
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: k
    value: abc
    rate_limit: {unit: second, requests_per_unit: 4}
)";

TEST(Match, ExactBeatsWildcardBeatsDefault) {
  const auto config = Parse(kPrecedence);
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(Quota(*config, "d", {{"k", "abc"}}), 4);
  EXPECT_EQ(Quota(*config, "d", {{"k", "abd"}}), 2);
  EXPECT_EQ(Quota(*config, "d", {{"k", "xyz"}}), 1);
}

// Verifies that wildcards are tried in file order, not by specificity: "ab*" comes first, so "a*"
// only gets values that "ab*" does not match.
TEST(Match, FirstMatchingWildcardInFileOrderWins) {
  const auto config = Parse(kPrecedence);
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(Quota(*config, "d", {{"k", "ab"}}), 2);
  EXPECT_EQ(Quota(*config, "d", {{"k", "ac"}}), 3);
  EXPECT_EQ(Quota(*config, "d", {{"k", "a"}}), 3);
}

TEST(Match, WildcardsAnywhereInTheValue) {
  const auto config = Parse(R"(
domain: d
descriptors:
  - key: host
    value: "*.example.com"
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: path
    value: /api/*/v1*
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: path
    value: "*"
    rate_limit: {unit: second, requests_per_unit: 3}
)");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(Quota(*config, "d", {{"host", "www.example.com"}}), 1);
  EXPECT_EQ(Quota(*config, "d", {{"host", "example.com"}}), -1);
  EXPECT_EQ(Quota(*config, "d", {{"path", "/api/users/v1"}}), 2);
  EXPECT_EQ(Quota(*config, "d", {{"path", "/api/users/v12/x"}}), 2);
  EXPECT_EQ(Quota(*config, "d", {{"path", "/api/users/v2"}}), 3);
}

TEST(Match, WildcardNeedsTheSameKey) {
  const auto config = Parse(R"(
domain: d
descriptors:
  - key: a
    value: x*
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: "b*"
    rate_limit: {unit: second, requests_per_unit: 2}
)");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(Quota(*config, "d", {{"ab", "x1"}}), -1);
  // A '*' in a key is literal.
  EXPECT_EQ(Quota(*config, "d", {{"bc", "v"}}), -1);
  EXPECT_EQ(Quota(*config, "d", {{"b*", "v"}}), 2);
}

// Verifies the reference's composite keys: nodes are found by "key_value", so a key containing '_'
// can meet a value containing '_'.
TEST(Match, LooksUpByCompositeKeyAsTheReferenceDoes) {
  const auto config = Parse(R"(
domain: d
descriptors:
  - key: a
    value: b_c
    rate_limit: {unit: second, requests_per_unit: 1}
)");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(Quota(*config, "d", {{"a", "b_c"}}), 1);
  EXPECT_EQ(Quota(*config, "d", {{"a_b", "c"}}), 1);
}

TEST(Match, NestedDescriptors) {
  const auto config = Load("readme_2_messaging.yaml");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(
      Quota(*config, "messaging", {{"message_type", "marketing"}, {"to_number", "2061111111"}}), 5);
  EXPECT_EQ(Quota(*config, "messaging", {{"to_number", "2061111111"}}), 100);
  // The placeholder has no limit of its own.
  EXPECT_EQ(Quota(*config, "messaging", {{"message_type", "marketing"}}), -1);
  EXPECT_EQ(Quota(*config, "messaging", {{"message_type", "other"}, {"to_number", "1"}}), -1);
}

TEST(Match, OnlyTheNodeReachedByTheLastEntryCounts) {
  const auto config = Load("readme_4_depth.yaml");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(Quota(*config, "example4", {{"key", "value"}}), -1);
  EXPECT_EQ(Quota(*config, "example4", {{"key", "value"}, {"subkey", "x"}}), 300);
  EXPECT_EQ(Quota(*config, "example4", {{"key", "value"}, {"subkey", "x"}, {"extra", "y"}}), -1);
}

// Verifies the deepest node wins when several levels have limits, and a shallower limit is not a
// fallback for a deeper miss.
TEST(Match, DeepestLevelWithoutFallbackToShallowerLimit) {
  const auto config = Parse(R"(
domain: d
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 1}
    descriptors:
      - key: b
        rate_limit: {unit: second, requests_per_unit: 2}
      - key: c
)");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(Quota(*config, "d", {{"a", "1"}}), 1);
  EXPECT_EQ(Quota(*config, "d", {{"a", "1"}, {"b", "2"}}), 2);
  EXPECT_EQ(Quota(*config, "d", {{"a", "1"}, {"c", "2"}}), -1);
  EXPECT_EQ(Quota(*config, "d", {{"a", "1"}, {"z", "2"}}), -1);
}

// Verifies there is no backtracking: once (a, x) picks the exact node, the default node's children
// are not tried.
TEST(Match, NoBacktrackingToTheDefaultNode) {
  const auto config = Parse(R"(
domain: d
descriptors:
  - key: a
    value: x
    descriptors:
      - key: b
        rate_limit: {unit: second, requests_per_unit: 1}
  - key: a
    descriptors:
      - key: c
        rate_limit: {unit: second, requests_per_unit: 2}
)");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(Quota(*config, "d", {{"a", "x"}, {"b", "1"}}), 1);
  EXPECT_EQ(Quota(*config, "d", {{"a", "x"}, {"c", "1"}}), -1);
  EXPECT_EQ(Quota(*config, "d", {{"a", "y"}, {"c", "1"}}), 2);
}

TEST(Match, ValueLessKeyCountsEachValueSeparately) {
  const auto config = Load("readme_2_messaging.yaml");
  ASSERT_NE(config, nullptr);
  const std::vector<DescriptorEntry> entries = {{"message_type", "marketing"},
                                                {"to_number", "2061111111"}};
  const auto match = config->Match("messaging", entries);
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->domain, "messaging");
  EXPECT_THAT(match->counter_entries, ElementsAre(DescriptorEntry{"message_type", "marketing"},
                                                  DescriptorEntry{"to_number", "2061111111"}));
  EXPECT_EQ(match->stats_key, "messaging.message_type_marketing.to_number");
  EXPECT_EQ(match->rule->config_key, "messaging.message_type_marketing.to_number");
}

TEST(Match, UnlimitedAndShadowMode) {
  const auto unlimited = Load("readme_5_unlimited.yaml");
  ASSERT_NE(unlimited, nullptr);
  EXPECT_EQ(Quota(*unlimited, "internal", {{"ldap", "cn=x"}}), -2);
  const auto shadow = Load("readme_6_shadow.yaml");
  ASSERT_NE(shadow, nullptr);
  const std::vector<DescriptorEntry> a = {{"service", "auth"}, {"user", "user-a"}};
  const std::vector<DescriptorEntry> b = {{"service", "auth"}, {"user", "user-b"}};
  EXPECT_TRUE(shadow->Match("example6", a)->rule->shadow_mode);
  EXPECT_FALSE(shadow->Match("example6", b)->rule->shadow_mode);
}

TEST(Match, ReplacesAndNamesAreOnTheRule) {
  const auto config = Load("readme_7_replaces.yaml");
  ASSERT_NE(config, nullptr);
  const std::vector<DescriptorEntry> entries = {{"key_2", "value_2"}, {"user", "bkthomps"}};
  const auto match = config->Match("example7", entries);
  ASSERT_TRUE(match.has_value());
  EXPECT_THAT(match->rule->replaces, ElementsAre("specific_limit"));
}

TEST(Match, SeveralRateLimitsOnOneNode) {
  const auto config = Parse(R"(
domain: d
descriptors:
  - key: user
    rate_limits:
      - {unit: second, requests_per_unit: 5}
      - {unit: hour, requests_per_unit: 100, algorithm: gcra, burst: 10}
)");
  ASSERT_NE(config, nullptr);
  const std::vector<DescriptorEntry> entries = {{"user", "alice"}};
  const auto match = config->Match("d", entries);
  ASSERT_TRUE(match.has_value());
  ASSERT_EQ(match->rule->limits.size(), 2u);
  EXPECT_EQ(match->rule->limits[0].limit->period, std::chrono::seconds(1));
  EXPECT_EQ(match->rule->limits[0].limit->limit, 5);
  EXPECT_EQ(match->rule->limits[1].limit->period, std::chrono::hours(1));
  EXPECT_EQ(match->rule->limits[1].limit->algorithm, Algorithm::kGcra);
  EXPECT_EQ(match->rule->limits[1].limit->burst, 10);
}

TEST(Match, WildcardStatsKeyKeepsThePattern) {
  const auto config = Load("readme_9_wildcard.yaml");
  ASSERT_NE(config, nullptr);
  const std::vector<DescriptorEntry> entries = {{"key1", "value_2"}};
  const auto match = config->Match("example9", entries);
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->stats_key, "example9.key1_value*");
  // Without share_threshold each value has its own counter.
  EXPECT_THAT(match->counter_entries, ElementsAre(DescriptorEntry{"key1", "value_2"}));
}

TEST(Match, ShareThresholdSharesOneCounterPerPattern) {
  const auto config = Parse(R"(
domain: d
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    descriptors:
      - key: user
        rate_limit: {unit: minute, requests_per_unit: 100}
)");
  ASSERT_NE(config, nullptr);
  const std::vector<DescriptorEntry> entries = {{"files", "files/a.pdf"}, {"user", "u1"}};
  const auto match = config->Match("d", entries);
  ASSERT_TRUE(match.has_value());
  EXPECT_THAT(match->counter_entries,
              ElementsAre(DescriptorEntry{"files", "files/*"}, DescriptorEntry{"user", "u1"}));
  EXPECT_EQ(match->stats_key, "d.files_files/*.user");
}

TEST(Match, ValueToMetricPutsTheRequestValueInTheStatsKey) {
  const auto config = Parse(R"(
domain: d
descriptors:
  - key: route
    value: /api/*
    value_to_metric: true
    descriptors:
      - key: method
        value_to_metric: true
        rate_limit: {unit: minute, requests_per_unit: 60}
)");
  ASSERT_NE(config, nullptr);
  const std::vector<DescriptorEntry> entries = {{"route", "/api/users"}, {"method", "GET"}};
  const auto match = config->Match("d", entries);
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->stats_key, "d.route_/api/users.method_GET");
}

TEST(Match, DetailedMetricPutsEveryValueInTheStatsKey) {
  const auto config = Load("readme_8_detailed_metric.yaml");
  ASSERT_NE(config, nullptr);
  const std::vector<DescriptorEntry> unspecified = {{"key1", "unspecified_value"}};
  const std::vector<DescriptorEntry> listed = {{"key1", "value1"}};
  EXPECT_EQ(config->Match("example8", unspecified)->stats_key, "example8.key1_unspecified_value");
  EXPECT_EQ(config->Match("example8", unspecified)->rule->limits[0].requests_per_unit, 10u);
  EXPECT_EQ(config->Match("example8", listed)->stats_key, "example8.key1_value1");
  EXPECT_EQ(config->Match("example8", listed)->rule->limits[0].requests_per_unit, 20u);
}

TEST(Match, UnknownDomainAndEmptyDescriptorMatchNothing) {
  const auto config = Load("readme_1_databases.yaml");
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(config->HasDomain("mongo_cps"));
  EXPECT_FALSE(config->HasDomain("other"));
  EXPECT_EQ(Quota(*config, "other", {{"database", "users"}}), -1);
  EXPECT_FALSE(config->Match("mongo_cps", {}).has_value());
}

}  // namespace
}  // namespace sluice
