#include "src/server/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Metrics, CountsHitsPerRuleAndOutcome) {
  Metrics m;
  m.CountRule("edge", "edge.remote_address", RuleOutcome::kWithinLimit, 3);
  m.CountRule("edge", "edge.remote_address", RuleOutcome::kOverLimit, 2);
  const std::string text = m.Render();
  EXPECT_THAT(text,
              HasSubstr(R"(sluice_rule_total_hits{domain="edge",rule="edge.remote_address"} 5)"));
  EXPECT_THAT(text,
              HasSubstr(R"(sluice_rule_over_limit{domain="edge",rule="edge.remote_address"} 2)"));
  EXPECT_THAT(text,
              HasSubstr(R"(sluice_rule_within_limit{domain="edge",rule="edge.remote_address"} 3)"));
}

// Verifies the series cap folds new label sets into one overflow series.
TEST(Metrics, CapsTheNumberOfSeries) {
  Metrics m({.max_series = 2});
  m.CountRule("d", "a", RuleOutcome::kWithinLimit, 1);
  m.CountRule("d", "b", RuleOutcome::kWithinLimit, 1);
  m.CountRule("d", "c", RuleOutcome::kWithinLimit, 1);
  m.CountRule("d", "e", RuleOutcome::kWithinLimit, 1);
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr(R"(sluice_rule_total_hits{domain="d",rule="_overflow"} 2)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(rule="c")")));
}

TEST(Metrics, EscapesLabelValues) {
  Metrics m;
  m.CountRule("d", "a\"b\\c\nd", RuleOutcome::kWithinLimit, 1);
  EXPECT_THAT(m.Render(), HasSubstr(R"(rule="a\"b\\c\nd")"));
}

TEST(Metrics, LatencyHistogramIsCumulative) {
  Metrics m;
  m.ObserveDecisionLatency(std::chrono::microseconds(40));
  m.ObserveDecisionLatency(std::chrono::microseconds(400));
  m.ObserveDecisionLatency(std::chrono::seconds(5));
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("sluice_decision_latency_seconds_bucket{le=\"5e-05\"} 1"));
  EXPECT_THAT(text, HasSubstr("sluice_decision_latency_seconds_bucket{le=\"0.0005\"} 2"));
  EXPECT_THAT(text, HasSubstr("sluice_decision_latency_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_THAT(text, HasSubstr("sluice_decision_latency_seconds_count 3"));
}

}  // namespace
}  // namespace sluice::server
