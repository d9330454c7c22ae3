// Parsing: the reference README's examples (rewritten), sluice's extensions, and one fixture per
// error, each checked for its exact file:line:column and field.
#include <array>
#include <chrono>
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
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::shared_ptr<const RateLimitConfig> LoadFixture(const std::string& name) {
  auto config = LoadRateLimitConfig(FixturePath(name));
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : nullptr;
}

absl::StatusOr<std::shared_ptr<const RateLimitConfig>> ParseOne(const std::string& yaml) {
  const ConfigSource source{"inline.yaml", yaml};
  return ParseRateLimitConfig({&source, 1});
}

// The rule matched by a one-entry descriptor.
const Rule* RuleFor(const RateLimitConfig& config, std::string_view domain, std::string_view key,
                    std::string_view value) {
  const auto entries = std::to_array<DescriptorEntry>({{key, value}});
  const std::optional<RuleMatch> match = config.Match(domain, entries);
  return match.has_value() ? match->rule : nullptr;
}

TEST(ParseReadme, Example1TwoValuesOfOneKey) {
  const auto config = LoadFixture("readme_1_databases.yaml");
  ASSERT_NE(config, nullptr);
  for (std::string_view value : {"users", "default"}) {
    const Rule* rule = RuleFor(*config, "mongo_cps", "database", value);
    ASSERT_NE(rule, nullptr) << value;
    ASSERT_EQ(rule->limits.size(), 1u);
    const RuleLimit& limit = rule->limits[0];
    EXPECT_EQ(limit.unit, RateLimitUnit::kSecond);
    EXPECT_EQ(limit.requests_per_unit, 500u);
    ASSERT_TRUE(limit.limit.has_value());
    EXPECT_EQ(*limit.limit, (Limit{.algorithm = Algorithm::kFixedWindow,
                                   .limit = 500,
                                   .period = std::chrono::seconds(1),
                                   .burst = std::nullopt}));
  }
  EXPECT_EQ(RuleFor(*config, "mongo_cps", "database", "other"), nullptr);
}

TEST(ParseReadme, Example3ZeroRequestsPerUnitDeniesAll) {
  const auto config = LoadFixture("readme_3_per_ip.yaml");
  ASSERT_NE(config, nullptr);
  const Rule* blocked = RuleFor(*config, "edge_proxy_per_ip", "remote_address", "50.0.0.5");
  ASSERT_NE(blocked, nullptr);
  ASSERT_EQ(blocked->limits.size(), 1u);
  EXPECT_TRUE(blocked->limits[0].DenyAll());
  EXPECT_EQ(blocked->limits[0].requests_per_unit, 0u);
  const Rule* other = RuleFor(*config, "edge_proxy_per_ip", "remote_address", "50.0.0.1");
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(other->limits[0].DenyAll());
  EXPECT_EQ(other->limits[0].limit->limit, 10);
}

TEST(ParseReadme, Example5Unlimited) {
  const auto config = LoadFixture("readme_5_unlimited.yaml");
  ASSERT_NE(config, nullptr);
  const Rule* ldap = RuleFor(*config, "internal", "ldap", "x");
  ASSERT_NE(ldap, nullptr);
  EXPECT_TRUE(ldap->unlimited);
  EXPECT_TRUE(ldap->limits.empty());
  const Rule* azure = RuleFor(*config, "internal", "azure", "x");
  ASSERT_NE(azure, nullptr);
  EXPECT_FALSE(azure->unlimited);
  EXPECT_EQ(azure->limits[0].unit, RateLimitUnit::kMinute);
}

TEST(ParseReadme, Example7NameAndReplaces) {
  const auto config = LoadFixture("readme_7_replaces.yaml");
  ASSERT_NE(config, nullptr);
  const auto first = std::to_array<DescriptorEntry>({{"key_1", "value_1"}, {"user", "bkthomps"}});
  const auto second = std::to_array<DescriptorEntry>({{"key_2", "value_2"}, {"user", "bkthomps"}});
  const auto named = config->Match("example7", first);
  const auto replacing = config->Match("example7", second);
  ASSERT_TRUE(named.has_value());
  ASSERT_TRUE(replacing.has_value());
  EXPECT_EQ(named->rule->name, "specific_limit");
  EXPECT_EQ(named->rule->limits[0].name, "specific_limit");
  EXPECT_TRUE(named->rule->replaces.empty());
  EXPECT_EQ(replacing->rule->replaces, std::vector<std::string>{"specific_limit"});
  EXPECT_EQ(replacing->rule->limits[0].requests_per_unit, 10u);
}

TEST(ParseReadme, AllExamplesLoad) {
  for (const char* name :
       {"readme_1_databases.yaml", "readme_2_messaging.yaml", "readme_3_per_ip.yaml",
        "readme_4_depth.yaml", "readme_5_unlimited.yaml", "readme_6_shadow.yaml",
        "readme_7_replaces.yaml", "readme_8_detailed_metric.yaml", "readme_9_wildcard.yaml"}) {
    EXPECT_TRUE(LoadRateLimitConfig(FixturePath(name)).ok()) << name;
  }
}

TEST(ParseExtensions, AlgorithmAndBurst) {
  const auto config = LoadFixture("sluice_extensions.yaml");
  ASSERT_NE(config, nullptr);
  const Rule* rule = RuleFor(*config, "extensions", "api_key", "k1");
  ASSERT_NE(rule, nullptr);
  ASSERT_EQ(rule->limits.size(), 1u);
  EXPECT_EQ(rule->name, "per_key");
  EXPECT_EQ(*rule->limits[0].limit, (Limit{.algorithm = Algorithm::kGcra,
                                           .limit = 100,
                                           .period = std::chrono::minutes(1),
                                           .burst = 20}));
}

TEST(ParseExtensions, SeveralLimitsOnOneNode) {
  const auto config = LoadFixture("sluice_extensions.yaml");
  ASSERT_NE(config, nullptr);
  const Rule* rule = RuleFor(*config, "extensions", "user", "u1");
  ASSERT_NE(rule, nullptr);
  ASSERT_EQ(rule->limits.size(), 2u);
  EXPECT_EQ(rule->name, "");
  EXPECT_EQ(rule->limits[0].name, "burst");
  EXPECT_EQ(*rule->limits[0].limit, (Limit{.algorithm = Algorithm::kFixedWindow,
                                           .limit = 5,
                                           .period = std::chrono::seconds(1),
                                           .burst = std::nullopt}));
  EXPECT_EQ(rule->limits[1].name, "hourly");
  EXPECT_EQ(*rule->limits[1].limit, (Limit{.algorithm = Algorithm::kSlidingWindow,
                                           .limit = 100,
                                           .period = std::chrono::hours(1),
                                           .burst = std::nullopt}));
  EXPECT_EQ(rule->replaces, std::vector<std::string>{"per_key"});
}

TEST(ParseExtensions, WeekMonthYearUnitsCaseInsensitive) {
  const auto config = LoadFixture("sluice_extensions.yaml");
  ASSERT_NE(config, nullptr);
  struct Case {
    const char* key;
    RateLimitUnit unit;
    std::chrono::hours period;
    Algorithm algorithm;
  };
  const auto cases = std::to_array<Case>({
      {"weekly", RateLimitUnit::kWeek, std::chrono::hours(24 * 7), Algorithm::kSlidingLog},
      {"monthly", RateLimitUnit::kMonth, std::chrono::hours(24 * 30), Algorithm::kTokenBucket},
      {"yearly", RateLimitUnit::kYear, std::chrono::hours(24 * 365), Algorithm::kFixedWindow},
  });
  for (const auto& c : cases) {
    const auto entries = std::to_array<DescriptorEntry>({{"tenant", "t1"}, {c.key, "x"}});
    const auto match = config->Match("extensions", entries);
    ASSERT_TRUE(match.has_value()) << c.key;
    EXPECT_EQ(match->rule->limits[0].unit, c.unit) << c.key;
    EXPECT_EQ(match->rule->limits[0].limit->period, c.period) << c.key;
    EXPECT_EQ(match->rule->limits[0].limit->algorithm, c.algorithm) << c.key;
  }
}

TEST(ParseExtensions, MetadataAndQuotaModeAreKept) {
  const auto config = LoadFixture("sluice_extensions.yaml");
  ASSERT_NE(config, nullptr);
  const Rule* rule = RuleFor(*config, "extensions", "path", "/files/a.pdf");
  ASSERT_NE(rule, nullptr);
  EXPECT_TRUE(rule->quota_mode);
  EXPECT_EQ(rule->metadata_json, R"({"owner":"storage","tiers":["gold",2,true]})");
}

TEST(ParseInline, EmptyAndNullValuesMeanNoValue) {
  for (const char* value : {"value:", "value: ~", "value: \"\""}) {
    const auto config = ParseOne(std::string("domain: d\ndescriptors:\n  - key: k\n    ") + value +
                                 "\n    rate_limit: {unit: second, requests_per_unit: 1}\n");
    ASSERT_TRUE(config.ok()) << value << ": " << config.status();
    EXPECT_NE(RuleFor(**config, "d", "k", "anything"), nullptr) << value;
  }
}

TEST(ParseInline, YamlOneOneBooleans) {
  for (const char* flag : {"true", "yes", "on", "True"}) {
    const auto config =
        ParseOne(std::string("domain: d\ndescriptors:\n  - key: k\n    shadow_mode: ") + flag +
                 "\n    rate_limit: {unit: second, requests_per_unit: 1}\n");
    ASSERT_TRUE(config.ok()) << flag << ": " << config.status();
    EXPECT_TRUE(RuleFor(**config, "d", "k", "v")->shadow_mode) << flag;
  }
  const auto quoted = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: 'true'\n"
      "    rate_limit: {unit: second, requests_per_unit: 1}\n");
  ASSERT_FALSE(quoted.ok());
  EXPECT_THAT(std::string(quoted.status().message()),
              StartsWith("inline.yaml:4:5: descriptors[0].shadow_mode: expected true or false"));
}

TEST(ParseInline, NumbersMayUseUnderscoresButNotLeadingZeros) {
  const auto config = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: "
      "1_000}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(RuleFor(**config, "d", "k", "v")->limits[0].requests_per_unit, 1000u);
  const auto octal = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: "
      "010}\n");
  ASSERT_FALSE(octal.ok());
  EXPECT_THAT(std::string(octal.status().message()), HasSubstr("leading zero"));
}

TEST(ParseInline, EmptyFileHasEmptyDomain) {
  const auto config = ParseOne("# nothing here\n");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "inline.yaml:1:1: domain: config file cannot have empty domain");
}

TEST(ParseInline, EmptyRateLimitIsAnErrorNotAWhitelist) {
  const auto config = ParseOne("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("descriptors[0].rate_limit: expected a mapping, got null"));
}

TEST(ParseInline, UnlimitedMayBeNamed) {
  const auto config = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, name: free}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  const Rule* rule = RuleFor(**config, "d", "k", "v");
  EXPECT_TRUE(rule->unlimited);
  EXPECT_EQ(rule->name, "free");
}

TEST(ParseInline, NodeWithoutRateLimitOrChildrenIsAWhitelist) {
  const auto config = ParseOne("domain: d\ndescriptors:\n  - key: k\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(RuleFor(**config, "d", "k", "v"), nullptr);
}

TEST(ParseInline, RulesCarryTheirLocationAndConfigKey) {
  const auto config = ParseOne(
      "domain: d\ndescriptors:\n  - key: a\n    value: b\n    descriptors:\n      - key: c\n"
      "        rate_limit: {unit: second, requests_per_unit: 1}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  const auto entries = std::to_array<DescriptorEntry>({{"a", "b"}, {"c", "x"}});
  const auto match = (*config)->Match("d", entries);
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->rule->config_key, "d.a_b.c");
  EXPECT_EQ(match->rule->location, "inline.yaml:6:9");
}

TEST(ParseInline, DumpListsEveryRule) {
  const auto config = LoadFixture("readme_7_replaces.yaml");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->Dump(),
            "example7.key_1_value_1.user_bkthomps: 5/second fixed_window name=specific_limit\n"
            "example7.key_2_value_2.user_bkthomps: 10/second fixed_window, "
            "replaces=specific_limit\n");
}

TEST(ParseInline, MetadataBecomesTypedJson) {
  const auto config = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    metadata: {a: [1, 2.5, \"x\", null, yes, 0x1F, "
      ".inf], \"q\\\"\": \"line\\nbreak\"}\n"
      "    rate_limit: {unit: second, requests_per_unit: 1}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(RuleFor(**config, "d", "k", "v")->metadata_json,
            R"({"a":[1,2.5,"x",null,true,"0x1F",".inf"],"q\"":"line\nbreak"})");
}

// Metadata becomes JSON through the tree's one JSON string writer: bytes that are not UTF-8
// cannot be JSON text, so they are a located error instead of a broken document.
TEST(ParseInline, MetadataThatIsNotUtf8IsAnError) {
  const auto config = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    metadata: {a: \"\xff\xfe\"}\n"
      "    rate_limit: {unit: second, requests_per_unit: 1}\n");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              AllOf(StartsWith("inline.yaml:4:"), HasSubstr("is not valid UTF-8")));
}

TEST(ParseInline, DeepNestingIsAnErrorNotACrash) {
  const auto config =
      ParseOne("domain: d\ndescriptors: " + std::string(5000, '[') + std::string(5000, ']') + "\n");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()), StartsWith("inline.yaml:2:"));
}

// Regression (found by fuzz/config_fuzzer.cc): yaml-cpp 0.7's LoadAll() never returned on a
// stray ',' (jbeder/yaml-cpp#1040): it produced empty documents without end, until memory ran out.
TEST(ParseInline, StrayCommaIsAnErrorNotAnEndlessLoop) {
  for (const std::string yaml : {",", "domain: d\n---\n,", "domain: d\n,\n"}) {
    const auto config = ParseOne(yaml);
    ASSERT_FALSE(config.ok()) << yaml;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(config.status().message()), StartsWith("inline.yaml:")) << yaml;
  }
  // Empty documents after the first are still accepted, as before.
  const auto config = ParseOne("domain: d\n---\n...\n---\n# nothing\n--- ~\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE((*config)->HasDomain("d"));
}

// Regression (found while fuzzing the config parser): an anchor used inside itself made yaml-cpp
// build a cyclic tree, and the descriptor and metadata walks recursed until the stack overflowed.
TEST(ParseInline, RecursiveAnchorIsAnErrorNotAStackOverflow) {
  for (const std::string yaml : {
           "domain: d\ndescriptors: &d\n  - key: a\n    descriptors: *d\n",
           "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {x: *m}\n",
       }) {
    const auto config = ParseOne(yaml);
    ASSERT_FALSE(config.ok()) << yaml;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(config.status().message()),
                AllOf(StartsWith("inline.yaml:"), HasSubstr("anchor is used inside itself")));
  }
}

// Regression (found while fuzzing the config parser): aliases of aliases ("billion laughs") made a
// file of a few lines expand to billions of nodes, which the metadata JSON and the descriptor tree
// were built from, exhausting memory. Expansion is now bounded; aliases within it still work.
TEST(ParseInline, AliasExpansionIsBounded) {
  std::string yaml = "domain: d\ndescriptors:\n  - key: a\n    metadata:\n";
  yaml += "      l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n";
  for (int i = 1; i < 9; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    yaml += "      l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) yaml += (j == 0 ? "" : ", ") + prev;
    yaml += "]\n";
  }
  yaml += "    rate_limit: {unit: second, requests_per_unit: 1}\n";
  const auto config = ParseOne(yaml);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              AllOf(StartsWith("inline.yaml:"), HasSubstr("once aliases are expanded")));

  const auto small = ParseOne(
      "domain: d\ndescriptors:\n  - key: a\n    rate_limit: &r {unit: second, "
      "requests_per_unit: 1}\n  - key: b\n    rate_limit: *r\n");
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_NE(RuleFor(**small, "d", "b", "x"), nullptr);
}

// One invalid fixture per error: its exact location and field, and the gist of the message.
struct ErrorCase {
  const char* file;
  // "line:column: field"
  const char* where;
  const char* message;
};

class ParseErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParseErrorTest, NamesFileLineColumnAndField) {
  const ErrorCase& c = GetParam();
  const std::string path = FixturePath(std::string("errors/") + c.file);
  const auto config = LoadRateLimitConfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              AllOf(StartsWith(path + ":" + c.where + ": "), HasSubstr(c.message)));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, ParseErrorTest,
    ::testing::Values(
        ErrorCase{"bad_syntax.yaml", "6:8", "invalid YAML: end of sequence flow not found"},
        ErrorCase{"unknown_key.yaml", "5:5: descriptors[0].rate_limt",
                  "unknown key 'rate_limt' (did you mean 'rate_limit'?)"},
        ErrorCase{"misplaced_key.yaml", "8:7: descriptors[0].rate_limit.shadow_mode",
                  "'shadow_mode' is not allowed in rate_limit; it belongs in a descriptor"},
        ErrorCase{"duplicate_composite.yaml", "9:5: descriptors[1]",
                  "duplicate descriptor composite key 'dup.key1_value1' (first defined at "},
        ErrorCase{"empty_key.yaml", "6:9: descriptors[0].descriptors[0].key",
                  "descriptor has empty key"},
        ErrorCase{"non_string_key.yaml", "5:5: descriptors[0]",
                  "key is not a string: 10 (an integer)"},
        ErrorCase{"non_scalar_value.yaml", "5:5: descriptors[0].value",
                  "expected a string, got a list"},
        ErrorCase{"unlimited_with_unit.yaml", "7:7: descriptors[0].rate_limit.unit",
                  "should not specify rate limit unit when unlimited"},
        ErrorCase{"unlimited_with_requests.yaml",
                  "7:7: descriptors[0].rate_limit.requests_per_unit",
                  "should not specify requests_per_unit when unlimited"},
        ErrorCase{"negative_requests.yaml", "7:7: descriptors[0].rate_limit.requests_per_unit",
                  "must not be negative, got -1"},
        ErrorCase{"fractional_requests.yaml", "7:7: descriptors[0].rate_limit.requests_per_unit",
                  "expected a whole number, got 2.5"},
        ErrorCase{"quoted_requests.yaml", "7:7: descriptors[0].rate_limit.requests_per_unit",
                  "expected an integer, got a string '5'"},
        ErrorCase{"overflow_requests.yaml", "7:7: descriptors[0].rate_limit.requests_per_unit",
                  "must be at most 4294967295, got 4294967296"},
        ErrorCase{"missing_requests.yaml", "6:7: descriptors[0].rate_limit.requests_per_unit",
                  "missing; write requests_per_unit: 0 to deny every request"},
        ErrorCase{"unknown_unit.yaml",
                  "12:15: descriptors[0].descriptors[0].descriptors[0].rate_limit.unit",
                  "invalid rate limit unit 'mintue'"},
        ErrorCase{"unknown_algorithm.yaml", "8:7: descriptors[0].rate_limit.algorithm",
                  "unknown algorithm 'leaky_bucket'"},
        ErrorCase{"burst_on_window.yaml", "13:9: descriptors[0].rate_limits[1].burst",
                  "burst applies only to token_bucket and gcra, not sliding_window"},
        ErrorCase{"replaces_self.yaml", "10:11: descriptors[0].rate_limit.replaces[0].name",
                  "replaces should not contain name of same descriptor"},
        ErrorCase{"empty_domain.yaml", "2:1: domain", "config file cannot have empty domain"},
        ErrorCase{"repeated_key.yaml", "8:7: descriptors[0].rate_limit.unit",
                  "key 'unit' is repeated"},
        ErrorCase{"share_threshold_without_wildcard.yaml", "6:5: descriptors[0].share_threshold",
                  "share_threshold can only be used with wildcard values"},
        ErrorCase{"invalid_limit.yaml", "7:7: descriptors[0].rate_limit.requests_per_unit",
                  "gcra needs max(limit, burst) x period_us <= 2^50"},
        ErrorCase{"both_rate_limit_forms.yaml", "8:5: descriptors[0].rate_limits",
                  "use either rate_limit or rate_limits, not both"},
        ErrorCase{"duplicate_rate_limits.yaml", "8:9: descriptors[0].rate_limits[1]",
                  "same unit and algorithm as rate_limits[0]"},
        ErrorCase{"two_documents.yaml", "4:1", "more than one YAML document"},
        ErrorCase{"list_of_strings.yaml", "4:5: descriptors[0]",
                  "expected a mapping, got a string"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.find('.'));
      return name;
    });

}  // namespace
// Verifies unit_multiplier: a window of several units, its own counter beside the single unit.
TEST(ParseUnitMultiplier, MakesAWindowOfSeveralUnits) {
  const auto config = ParseOne(R"yaml(
domain: d
descriptors:
  - key: k
    rate_limits:
      - {unit: minute, unit_multiplier: 5, requests_per_unit: 100}
      - {unit: minute, requests_per_unit: 30}
)yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  const Rule* rule = RuleFor(**config, "d", "k", "v");
  ASSERT_NE(rule, nullptr);
  ASSERT_EQ(rule->limits.size(), 2u);
  EXPECT_EQ(rule->limits[0].unit_multiplier, 5u);
  EXPECT_EQ(rule->limits[0].limit->period, std::chrono::minutes(5));
  EXPECT_EQ(rule->limits[1].unit_multiplier, 1u);
  EXPECT_EQ(rule->limits[1].limit->period, std::chrono::minutes(1));
}

TEST(ParseUnitMultiplier, RefusesZeroAndPeriodsBeyondTheLongest) {
  const auto zero = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, unit_multiplier: 0, "
      "requests_per_unit: 1}\n");
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(std::string(zero.status().message()),
              HasSubstr("rate_limit.unit_multiplier: must be at least 1"));
  const auto long_period = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, unit_multiplier: 367, "
      "requests_per_unit: 1}\n");
  ASSERT_FALSE(long_period.ok());
  EXPECT_THAT(std::string(long_period.status().message()), HasSubstr("366 days"));
}

// Verifies `debt`: kept on a fixed window (the default algorithm), refused by name on another.
TEST(ParseDebt, AFixedWindowTakesItAndOtherAlgorithmsAreRefused) {
  const auto config = ParseOne(R"yaml(
domain: d
descriptors:
  - key: k
    rate_limits:
      - {unit: minute, requests_per_unit: 3, debt: true}
      - {unit: hour, requests_per_unit: 30}
)yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  const Rule* rule = RuleFor(**config, "d", "k", "v");
  ASSERT_NE(rule, nullptr);
  EXPECT_TRUE(rule->limits[0].debt);
  EXPECT_FALSE(rule->limits[1].debt);
  const auto bucket = ParseOne(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, "
      "algorithm: token_bucket, debt: true}\n");
  ASSERT_FALSE(bucket.ok());
  EXPECT_THAT(std::string(bucket.status().message()),
              HasSubstr("rate_limit.debt: only a fixed_window limit"));
}

}  // namespace sluice
