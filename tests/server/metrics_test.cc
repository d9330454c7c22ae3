#include "src/server/metrics.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

uint64_t CounterValue(const Metrics& m, const std::string& name) {
  const std::vector<Metrics::Counter> counters = m.Counters();
  auto it = std::find_if(counters.begin(), counters.end(),
                         [&](const Metrics::Counter& c) { return c.name == name; });
  return it == counters.end() ? ~uint64_t{0} : it->value;
}

TEST(Metrics, CountsPerStatsKeyUnderPrometheusNames) {
  Metrics m;
  m.AddRuleStats("edge", "edge.remote_address", {.total_hits = 3, .within_limit = 3});
  m.AddRuleStats("edge", "edge.remote_address", {.total_hits = 2, .over_limit = 2});
  const std::string text = m.Render();
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(ratelimit_service_rate_limit_total_hits_total{domain="edge",key="remote_address"} 5)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(ratelimit_service_rate_limit_over_limit_total{domain="edge",key="remote_address"} 2)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(ratelimit_service_rate_limit_within_limit_total{domain="edge",key="remote_address"} 3)"));
  EXPECT_THAT(text, HasSubstr("# TYPE ratelimit_service_rate_limit_total_hits_total counter"));
}

TEST(Metrics, CountersCarryTheReferenceStatsdNames) {
  Metrics m;
  m.AddRuleStats("edge", "edge.remote_address_10.0.0.1", {.total_hits = 4, .shadow_mode = 1});
  m.CountConfigLoad(true);
  m.CountStoreError();
  m.CountDomainNotFound("nowhere", 2);
  EXPECT_EQ(CounterValue(m, "ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.total_hits"),
            4u);
  EXPECT_EQ(
      CounterValue(m, "ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.shadow_mode"), 1u);
  EXPECT_EQ(CounterValue(m, "ratelimit.service.config_load_success"), 1u);
  EXPECT_EQ(CounterValue(m, "ratelimit.service.call.should_rate_limit.redis_error"), 1u);
  EXPECT_EQ(CounterValue(m, "ratelimit.service.rate_limit.nowhere.domain_not_found"), 2u);
}

TEST(SanitizeStatName, ReplacesSeparatorsAndTheDotsOfIpv4Addresses) {
  EXPECT_EQ(SanitizeStatName("edge.remote_address_10.0.0.1"), "edge.remote_address_10_0_0_1");
  EXPECT_EQ(SanitizeStatName("d.k_a:b|c"), "d.k_a_b_c");
  EXPECT_EQ(SanitizeStatName("d.k_1.2.3"), "d.k_1.2.3");  // Three groups: not an address.
  EXPECT_EQ(SanitizeStatName("d.v_1234.5.6.7"), "d.v_1234_5_6_7");
}

// Verifies the series cap folds new stats keys into one overflow series.
TEST(Metrics, CapsTheNumberOfSeries) {
  Metrics m({.max_series = 2});
  for (const char* key : {"d.a", "d.b", "d.c", "d.e"}) m.AddRuleStats("d", key, {.total_hits = 1});
  const std::string text = m.Render();
  EXPECT_THAT(
      text,
      HasSubstr(R"(ratelimit_service_rate_limit_total_hits_total{domain="d",key="_overflow"} 2)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(key="c")")));
}

TEST(Metrics, EscapesLabelValues) {
  Metrics m;
  m.AddRuleStats("d", "d.a\"b\\c\nd", {.total_hits = 1});
  EXPECT_THAT(m.Render(), HasSubstr(R"(key="a\"b\\c\nd")"));
}

TEST(Metrics, LatencyHistogramIsCumulative) {
  Metrics m;
  m.ObserveDecisionLatency(std::chrono::microseconds(40));
  m.ObserveDecisionLatency(std::chrono::microseconds(400));
  m.ObserveDecisionLatency(std::chrono::seconds(5));
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("ratelimit_service_response_time_seconds_bucket{le=\"5e-05\"} 1"));
  EXPECT_THAT(text, HasSubstr("ratelimit_service_response_time_seconds_bucket{le=\"0.0005\"} 2"));
  EXPECT_THAT(text, HasSubstr("ratelimit_service_response_time_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_THAT(text, HasSubstr("ratelimit_service_response_time_seconds_count 3"));
  EXPECT_THAT(
      text, HasSubstr("ratelimit_service_total_requests_total{grpc_method=\"ShouldRateLimit\"} 3"));
}

TEST(Metrics, BuildInfoAndStoreGauges) {
  Metrics m;
  m.SetStoreStateSource([] {
    return StoreState{.redis_connected = false, .breaker_open = true, .breaker_opens = 3};
  });
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("sluice_build_info{version=\""));
  EXPECT_THAT(text, HasSubstr("sluice_redis_connected 0\n"));
  EXPECT_THAT(text, HasSubstr("sluice_store_breaker_open 1\n"));
  EXPECT_THAT(text, HasSubstr("sluice_store_breaker_opens_total 3\n"));
}

}  // namespace
}  // namespace sluice::server
