// The reference's stats (src/limiter/base_limiter.go), counted through RateLimitService::Decide()
// without protobuf, on the memory store: which counter each hit lands in, under the reference's
// statsd names.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/config.h"
#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"

#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/faulty_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice::server {
namespace {

constexpr const char* kConfig = R"yaml(
domain: edge
descriptors:
  - key: ten
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: three
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
)yaml";

class RlsStatsTest : public ::testing::Test {
 protected:
  void Build(RateLimitServiceOptions options) {
    auto memory = MemoryStore::Create({.clock = &clock_});
    ASSERT_TRUE(memory.ok());
    auto faulty = std::make_unique<testing::FaultyStore>(*std::move(memory));
    faulty_ = faulty.get();
    store_ = WithFailurePolicy(
        std::move(faulty),
        {.mode = FailureMode::kPropagate, .breaker_failure_threshold = 0, .clock = &clock_});
    options.clock = &clock_;
    service_ = std::make_unique<RateLimitService>(*store_, metrics_, options);
    const ConfigSource source{.name = "edge.yaml", .content = kConfig};
    auto config = ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    service_->SetConfig(*config);
  }

  // Decides one descriptor {key: value} with `hits` (nullopt: the default) and returns the
  // overall code.
  RlsCode Decide(std::string_view key, std::string_view value,
                 std::optional<uint64_t> hits = std::nullopt, std::string_view domain = "edge") {
    RlsRequest request{.domain = domain,
                       .descriptors = {{.entries = {{key, value}}, .hits_addend = hits}}};
    std::optional<RlsCode> code;
    service_->Decide(request, [&code](absl::StatusOr<RlsResponse> r) {
      ASSERT_TRUE(r.ok()) << r.status();
      code = r->overall_code;
    });
    EXPECT_TRUE(code.has_value());  // The memory store answers inline.
    return code.value_or(RlsCode::kOk);
  }

  uint64_t Stat(const std::string& name) const {
    for (const Metrics::Counter& c : metrics_.Counters()) {
      if (c.name == name) return c.value;
    }
    ADD_FAILURE() << "no counter " << name;
    return 0;
  }
  uint64_t Rule(const std::string& key, const std::string& stat) const {
    return Stat("ratelimit.service.rate_limit.edge." + key + "." + stat);
  }

  testing::ManualClock clock_{std::chrono::seconds(1'700'000'000)};
  Metrics metrics_;
  testing::FaultyStore* faulty_ = nullptr;
  std::unique_ptr<FailurePolicyStore> store_;
  std::unique_ptr<RateLimitService> service_;
};

// Verifies a near-limit hit also counts as within limit: 10/min, near-limit threshold 8.
TEST_F(RlsStatsTest, NearLimitHitsAreAlsoWithinLimit) {
  Build({});
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Decide("ten", "a"), RlsCode::kOk);
  EXPECT_EQ(Decide("ten", "a"), RlsCode::kOverLimit);
  EXPECT_EQ(Rule("ten", "total_hits"), 11u);
  EXPECT_EQ(Rule("ten", "within_limit"), 10u);
  EXPECT_EQ(Rule("ten", "near_limit"), 2u);  // The 9th and the 10th.
  EXPECT_EQ(Rule("ten", "over_limit"), 1u);
  EXPECT_EQ(Rule("ten", "shadow_mode"), 0u);
}

// Verifies a shadow-mode limit's over-limit hits count in both over_limit and shadow_mode.
TEST_F(RlsStatsTest, ShadowedOverLimitHitsCountAsOverLimitAndShadowMode) {
  Build({});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Decide("shadow", "s"), RlsCode::kOk);
  EXPECT_EQ(Rule("shadow", "total_hits"), 3u);
  EXPECT_EQ(Rule("shadow", "within_limit"), 1u);
  EXPECT_EQ(Rule("shadow", "over_limit"), 2u);
  EXPECT_EQ(Rule("shadow", "shadow_mode"), 2u);
}

// Verifies the split of one request's hits across the thresholds: 5 hits on an empty 3/min limit
// are 2 over the limit and 1 in the near-limit range (threshold floor(3 * 0.8) = 2), as the
// reference counts a request that crosses both.
TEST_F(RlsStatsTest, HitsCrossingTheLimitAreSplitAsTheReferenceSplitsThem) {
  Build({});
  EXPECT_EQ(Decide("three", "x", 5), RlsCode::kOverLimit);
  EXPECT_EQ(Rule("three", "total_hits"), 5u);
  EXPECT_EQ(Rule("three", "over_limit"), 2u);
  EXPECT_EQ(Rule("three", "near_limit"), 1u);
  EXPECT_EQ(Rule("three", "within_limit"), 0u);
}

TEST_F(RlsStatsTest, OverLimitCacheHitsCountWithLocalCache) {
  Build({.over_limit_cache_entries = 100});
  for (int i = 0; i < 4; ++i) Decide("three", "y");  // The 4th is denied and cached.
  EXPECT_EQ(Decide("three", "y"), RlsCode::kOverLimit);
  EXPECT_EQ(Rule("three", "over_limit"), 2u);
  EXPECT_EQ(Rule("three", "over_limit_with_local_cache"), 1u);
}

TEST_F(RlsStatsTest, GlobalShadowModeCountsTheAnswersItTurnedOk) {
  Build({.global_shadow_mode = true});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Decide("three", "z"), RlsCode::kOk);
  EXPECT_EQ(Stat("ratelimit.service.global_shadow_mode"), 2u);
  EXPECT_EQ(Rule("three", "over_limit"), 2u);
}

TEST_F(RlsStatsTest, UnknownDomainsAndErrorsAreCounted) {
  Build({});
  EXPECT_EQ(Decide("three", "z", std::nullopt, "nowhere"), RlsCode::kOk);
  EXPECT_EQ(Stat("ratelimit.service.rate_limit.nowhere.domain_not_found"), 1u);
  faulty_->Fail(absl::UnavailableError("down"));
  service_->Decide(
      RlsRequest{.domain = "edge", .descriptors = {{.entries = {{"ten", "q"}}}}},
      [](absl::StatusOr<RlsResponse> r) { EXPECT_TRUE(absl::IsUnavailable(r.status())); });
  service_->Decide(RlsRequest{.domain = ""}, [](absl::StatusOr<RlsResponse> r) {
    EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  });
  EXPECT_EQ(Stat("ratelimit.service.call.should_rate_limit.redis_error"), 1u);
  EXPECT_EQ(Stat("ratelimit.service.call.should_rate_limit.service_error"), 1u);
}

}  // namespace
}  // namespace sluice::server
