// The response's dynamic metadata (RESPONSE_DYNAMIC_METADATA, rls_metadata.h), through the service
// and its protobuf edge as Envoy receives it. The reference's own three cases are ported in
// reference_service_scenarios_test.cc; these cover the rest of ratelimitToMetadata: the request
// part, nested merges, and which descriptors count as passed.
#include "src/server/rls/rls_metadata.h"

#include <memory>
#include <string>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/grpc/rls_proto.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/manual_clock.h"

namespace sluice::server {
namespace {

constexpr const char* kConfig = R"yaml(
domain: shop
descriptors:
  - key: service
    value: a
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
    metadata: {route: {name: a, zone: eu}, owner: team-a}
  - key: service
    value: b
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
    metadata: {route: {name: b, weight: 3}, tags: [x, z]}
  - key: free
    rate_limit: {unlimited: true}
    metadata: {never: returned}
  - key: plan
    value: base
    rate_limit: {unit: minute, requests_per_unit: 100, name: base}
    metadata: {plan: base}
    descriptors:
      - key: tenant
        rate_limit: {unit: minute, requests_per_unit: 10, replaces: [{name: base}]}
        metadata: {plan: tenant}
)yaml";

class DynamicMetadataTest : public ::testing::Test {
 protected:
  void Build(bool enabled) {
    auto memory = MemoryStore::Create({.clock = &clock_});
    ASSERT_TRUE(memory.ok());
    store_ = *std::move(memory);
    service_ = std::make_unique<RateLimitService>(
        *store_, metrics_,
        RateLimitServiceOptions{.clock = &clock_, .response_dynamic_metadata = enabled});
    const ConfigSource source{.name = "shop.yaml", .content = kConfig};
    auto config = ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    service_->SetConfig(*config);
  }

  RateLimitResponse Call(const std::string& text_proto) {
    RateLimitRequest request;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text_proto, &request)) << text_proto;
    RateLimitResponse out;
    ShouldRateLimit(*service_, request, [&](absl::StatusOr<RateLimitResponse> r) {
      ASSERT_TRUE(r.ok()) << r.status();
      out = *std::move(r);
    });
    return out;
  }

  // The dynamic metadata as a JSON value, for comparing whole objects.
  static boost::json::value Metadata(const RateLimitResponse& r) {
    std::string json;
    EXPECT_TRUE(google::protobuf::util::MessageToJsonString(r.dynamic_metadata(), &json).ok());
    return boost::json::parse(json);
  }

  testing::ManualClock clock_{std::chrono::seconds(1'700'000'000)};
  Metrics metrics_;
  std::unique_ptr<MemoryStore> store_;
  std::unique_ptr<RateLimitService> service_;
};

constexpr const char* kAB = R"pb(domain: "shop"
                                 descriptors { entries { key: "service" value: "a" } }
                                 descriptors { entries { key: "service" value: "b" } })pb";

TEST_F(DynamicMetadataTest, OffByDefault) {
  Build(false);
  EXPECT_FALSE(Call(kAB).has_dynamic_metadata());
}

// Objects under one key merge, the first descriptor's scalar wins, and the request part lists
// every descriptor in order.
TEST_F(DynamicMetadataTest, MergesThePassedDescriptorsMetadataFirstWins) {
  Build(true);
  EXPECT_EQ(Metadata(Call(kAB)), boost::json::parse(R"({
    "domain": "shop",
    "descriptors": [{"entries": ["service=a"]}, {"entries": ["service=b"]}],
    "metadata": {"route": {"name": "a", "zone": "eu", "weight": 3}, "owner": "team-a",
                 "tags": ["x", "z"]}})"));
}

// A descriptor over its limit no longer contributes: Envoy routes to the one with quota left.
TEST_F(DynamicMetadataTest, ADescriptorOverItsLimitContributesNothing) {
  Build(true);
  (void)Call(R"pb(domain: "shop"
                  descriptors { entries { key: "service" value: "a" } })pb");
  const RateLimitResponse r = Call(kAB);
  EXPECT_EQ(r.overall_code(), RateLimitResponse::OK);  // b, in quota mode, still passes.
  EXPECT_EQ(Metadata(r).at("metadata"),
            boost::json::parse(R"({"route": {"name": "b", "weight": 3}, "tags": ["x", "z"]})"));
}

// No descriptor passed: the request part alone (also on an OVER_LIMIT answer).
TEST_F(DynamicMetadataTest, NothingPassedLeavesTheMetadataOut) {
  Build(true);
  (void)Call(kAB);
  (void)Call(kAB);
  const RateLimitResponse r = Call(kAB);
  EXPECT_EQ(r.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_FALSE(Metadata(r).as_object().contains("metadata"));
  EXPECT_EQ(Metadata(r).at("domain"), "shop");
}

// The request's and each descriptor's hits_addend, and a request-level limit in Go's text format.
TEST_F(DynamicMetadataTest, RequestPartCarriesHitsAddendAndLimits) {
  Build(true);
  const RateLimitResponse r = Call(R"pb(
    domain: "shop"
    hits_addend: 2
    descriptors {
      entries { key: "user" value: "u1" }
      entries { key: "path" value: "/x" }
      limit { requests_per_unit: 42 unit: HOUR }
      hits_addend { value: 0 }
    })pb");
  EXPECT_EQ(Metadata(r), boost::json::parse(R"({
    "domain": "shop",
    "hitsAddend": 2,
    "descriptors": [{"entries": ["user=u1", "path=/x"],
                     "limit": "requests_per_unit:42 unit:HOUR", "hitsAddend": 0}]})"));
}

// `unlimited` descriptors do not pass (the reference leaves them out), and a replaced limit takes
// its metadata with it.
TEST_F(DynamicMetadataTest, UnlimitedAndReplacedDescriptorsContributeNothing) {
  Build(true);
  RateLimitResponse r = Call(R"pb(domain: "shop"
                                  descriptors { entries { key: "free" value: "1" } })pb");
  EXPECT_FALSE(Metadata(r).as_object().contains("metadata"));
  r = Call(R"pb(domain: "shop"
                descriptors { entries { key: "plan" value: "base" } }
                descriptors {
                  entries { key: "plan" value: "base" }
                  entries { key: "tenant" value: "t1" }
                })pb");
  EXPECT_EQ(Metadata(r).at("metadata"), boost::json::parse(R"({"plan": "tenant"})"));
}

}  // namespace
}  // namespace sluice::server
