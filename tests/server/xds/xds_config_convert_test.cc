// The RateLimitConfig resource through the YAML config format
// (src/server/xds/xds_config_convert.h): every field, and the refusals of a response as a whole.
#include "src/server/xds/xds_config_convert.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "tests/server/xds/test_management_server.h"

namespace sluice::server {
namespace {

namespace rlc = ::ratelimit::config::ratelimit::v3;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::LimitedDescriptor;
using testing::RateLimitResource;
using testing::XdsResponse;

absl::StatusOr<std::shared_ptr<const RateLimitConfig>> Parse(
    const std::vector<rlc::RateLimitConfig>& resources, const XdsSettings& settings = {}) {
  return ParseXdsResponse(XdsResponse("v1", resources), settings);
}

const Rule* Find(const RateLimitConfig& config, std::string_view domain,
                 const std::vector<DescriptorEntry>& entries) {
  std::optional<RuleMatch> m = config.Match(domain, entries);
  return m.has_value() ? m->rule : nullptr;
}

TEST(XdsConfigConvert, NamesTheSourceAfterTheResource) {
  const ConfigSource source =
      XdsResourceToSource(RateLimitResource("gw/edge", "edge", {LimitedDescriptor("k", 5)}));
  EXPECT_EQ(source.name, "xds:gw/edge");
  EXPECT_THAT(source.content, HasSubstr("domain: \"edge\""));
  EXPECT_THAT(source.content, HasSubstr("unit: SECOND"));
}

// Verifies each field of a descriptor and of its rate limit reaches the parsed rule.
TEST(XdsConfigConvert, CarriesEveryField) {
  rlc::RateLimitDescriptor outer = LimitedDescriptor("remote_address", 10, rlc::MINUTE);
  outer.set_value("10.0.0.1");
  outer.set_shadow_mode(true);
  outer.set_detailed_metric(true);
  outer.set_quota_mode(true);
  outer.mutable_rate_limit()->set_name("per_ip");
  outer.mutable_rate_limit()->add_replaces()->set_name("global");
  auto& fields = *outer.mutable_metadata()->mutable_fields();
  fields["team"].set_string_value("true");  // a string that YAML would read as a bool
  fields["weight"].set_number_value(3);
  fields["ratio"].set_number_value(0.25);
  fields["on"].set_bool_value(true);
  fields["none"].set_null_value(google::protobuf::NULL_VALUE);
  fields["list"].mutable_list_value()->add_values()->set_string_value("a");
  (*fields["nested"].mutable_struct_value()->mutable_fields())["k"].set_string_value("v");
  rlc::RateLimitDescriptor inner = LimitedDescriptor("path", 2, rlc::WEEK);
  *outer.add_descriptors() = inner;
  rlc::RateLimitDescriptor global = LimitedDescriptor("global", 100, rlc::YEAR);
  global.mutable_rate_limit()->set_name("global");
  rlc::RateLimitDescriptor free;
  free.set_key("free");
  free.mutable_rate_limit()->set_unlimited(true);

  auto config = Parse({RateLimitResource("r", "edge", {outer, global, free})});
  ASSERT_TRUE(config.ok()) << config.status();
  const Rule* rule = Find(**config, "edge", {{"remote_address", "10.0.0.1"}});
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ(rule->name, "per_ip");
  EXPECT_THAT(rule->replaces, ElementsAre("global"));
  EXPECT_TRUE(rule->shadow_mode);
  EXPECT_TRUE(rule->detailed_metric);
  EXPECT_TRUE(rule->quota_mode);
  ASSERT_EQ(rule->limits.size(), 1u);
  EXPECT_EQ(rule->limits[0].unit, RateLimitUnit::kMinute);
  EXPECT_EQ(rule->limits[0].requests_per_unit, 10u);
  EXPECT_EQ(rule->metadata_json,
            R"({"list":["a"],"nested":{"k":"v"},"none":null,"on":true,"ratio":0.25,)"
            R"("team":"true","weight":3})");
  EXPECT_THAT(rule->location, HasSubstr("xds:r"));

  const Rule* nested = Find(**config, "edge", {{"remote_address", "10.0.0.1"}, {"path", "/x"}});
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->limits[0].unit, RateLimitUnit::kWeek);
  EXPECT_EQ(Find(**config, "edge", {{"global", "x"}})->limits[0].unit, RateLimitUnit::kYear);
  const Rule* unlimited = Find(**config, "edge", {{"free", "x"}});
  ASSERT_NE(unlimited, nullptr);
  EXPECT_TRUE(unlimited->unlimited);
}

// Verifies the units are mapped by name, not by number (WEEK is 7 in the proto).
TEST(XdsConfigConvert, MapsEveryUnitByName) {
  const std::array<std::pair<rlc::RateLimitUnit, RateLimitUnit>, 7> units = {
      {{rlc::SECOND, RateLimitUnit::kSecond},
       {rlc::MINUTE, RateLimitUnit::kMinute},
       {rlc::HOUR, RateLimitUnit::kHour},
       {rlc::DAY, RateLimitUnit::kDay},
       {rlc::WEEK, RateLimitUnit::kWeek},
       {rlc::MONTH, RateLimitUnit::kMonth},
       {rlc::YEAR, RateLimitUnit::kYear}}};
  for (const auto& [proto, ours] : units) {
    auto config = Parse({RateLimitResource("r", "d", {LimitedDescriptor("k", 1, proto)})});
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(Find(**config, "d", {{"k", "v"}})->limits[0].unit, ours);
  }
}

TEST(XdsConfigConvert, RefusesWhatTheReferenceRefuses) {
  // A limit without a unit.
  auto unknown = Parse({RateLimitResource("r", "d", {LimitedDescriptor("k", 1, rlc::UNKNOWN)})});
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("invalid rate limit unit 'UNKNOWN'"));
  // A unit next to unlimited.
  rlc::RateLimitDescriptor both = LimitedDescriptor("k", 1);
  both.mutable_rate_limit()->set_unlimited(true);
  auto unlimited = Parse({RateLimitResource("r", "d", {both})});
  EXPECT_THAT(std::string(unlimited.status().message()),
              HasSubstr("should not specify rate limit unit when unlimited"));
  // No domain; one domain twice.
  EXPECT_FALSE(Parse({RateLimitResource("r", "", {LimitedDescriptor("k", 1)})}).ok());
  auto twice = Parse({RateLimitResource("a", "d", {LimitedDescriptor("k", 1)}),
                      RateLimitResource("b", "d", {LimitedDescriptor("j", 1)})});
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("duplicate domain 'd'"));
}

TEST(XdsConfigConvert, MergesOneDomainOfSeveralResourcesWhenAsked) {
  auto merged = Parse({RateLimitResource("a", "d", {LimitedDescriptor("k", 1)}),
                       RateLimitResource("b", "d", {LimitedDescriptor("j", 1)})},
                      XdsSettings{.merge_domains = true});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_NE(Find(**merged, "d", {{"k", "v"}}), nullptr);
  EXPECT_NE(Find(**merged, "d", {{"j", "v"}}), nullptr);
}

TEST(XdsConfigConvert, AnEmptyResponseIsAnEmptyConfig) {
  auto config = Parse({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE((*config)->Domains().empty());
}

TEST(XdsConfigConvert, BoundsTheResourcesAndTheirSize) {
  const auto two = {RateLimitResource("a", "d", {LimitedDescriptor("k", 1)}),
                    RateLimitResource("b", "e", {LimitedDescriptor("k", 1)})};
  EXPECT_TRUE(Parse(two, XdsSettings{.max_resources = 2}).ok());
  EXPECT_THAT(std::string(Parse(two, XdsSettings{.max_resources = 1}).status().message()),
              HasSubstr("more than the bound of 1"));
  EXPECT_THAT(std::string(Parse(two, XdsSettings{.max_config_bytes = 10}).status().message()),
              HasSubstr("more than 10 bytes"));
}

TEST(XdsConfigConvert, RefusesAResourceOfAnotherTypeOrUnparsable) {
  auto response = XdsResponse("v1", {});
  google::protobuf::Any* any = response.add_resources();
  any->set_type_url(std::string(kRateLimitConfigTypeUrl));
  any->set_value("\xff\xff\xff");
  EXPECT_THAT(std::string(ParseXdsResponse(response, {}).status().message()),
              HasSubstr("not a valid RateLimitConfig"));
  any->set_type_url("type.googleapis.com/google.protobuf.Empty");
  EXPECT_THAT(std::string(ParseXdsResponse(response, {}).status().message()),
              HasSubstr("google.protobuf.Empty"));
}

}  // namespace
}  // namespace sluice::server
