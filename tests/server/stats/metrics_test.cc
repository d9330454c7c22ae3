#include "src/server/stats/metrics.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/server/observe/gauge_source.h"

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

// Sums the counters whose statsd name ends with `suffix`.
uint64_t SumCounters(const Metrics& m, absl::string_view suffix) {
  uint64_t sum = 0;
  for (const Metrics::Counter& c : m.Counters()) {
    if (absl::EndsWith(c.name, suffix)) sum += c.value;
  }
  return sum;
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

TEST(Metrics, BuildInfo) {
  Metrics m;
  EXPECT_THAT(m.Render(), HasSubstr("sluice_build_info{version=\""));
}

// A reported RLQS bucket counts in its rule's counters as decisions do: the requests its client
// allowed within the limit, the denied ones over it; nothing was decided here, so no latency.
TEST(Metrics, QuotaUsageCountsInTheRuleCounters) {
  Metrics m;
  m.OnQuotaUsage({.domain = "quota", .stats_key = "quota.name_api", .allowed = 7, .denied = 3});
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr(R"(total_hits_total{domain="quota",key="name_api"} 10)"));
  EXPECT_THAT(text, HasSubstr(R"(within_limit_total{domain="quota",key="name_api"} 7)"));
  EXPECT_THAT(text, HasSubstr(R"(over_limit_total{domain="quota",key="name_api"} 3)"));
  EXPECT_THAT(text, HasSubstr("ratelimit_service_response_time_seconds_count 0\n"));
}

TEST(Metrics, ConfigLoadsAreCounted) {
  Metrics m;
  m.OnConfigLoad({.ok = true, .origin = "/etc/ratelimit"});
  m.OnConfigLoad({.ok = false, .error = "bad yaml"});
  m.OnConfigLoad({.ok = false, .error = "bad yaml"});
  EXPECT_EQ(CounterValue(m, "ratelimit.service.config_load_success"), 1u);
  EXPECT_EQ(CounterValue(m, "ratelimit.service.config_load_error"), 2u);
}

// A gauge source that renders one fixed family.
class FixedGauge final : public GaugeSource {
 public:
  explicit FixedGauge(std::string name) : name_(std::move(name)) {}
  void AppendPrometheus(std::string& out) const override {
    out += "# TYPE " + name_ + " gauge\n" + name_ + " 1\n";
  }

 private:
  const std::string name_;
};

// Verifies the gauges come last, in the list's order, the metrics' own where the list puts them;
// that without a list the page ends with the metrics' own; and that nullptr restores that.
TEST(Metrics, GaugesFollowTheCountersInTheListsOrder) {
  Metrics m;
  const std::string alone = m.Render();
  EXPECT_THAT(alone, HasSubstr("sluice_metrics_series_bytes "));
  EXPECT_TRUE(absl::EndsWith(alone, "sluice_metrics_series_folded_total 0\n")) << alone;

  const FixedGauge first("first_gauge");
  const FixedGauge last("last_gauge");
  const GaugeList gauges({&first, nullptr, &m.SeriesGauges(), &last});
  m.SetGauges(&gauges);
  const std::string text = m.Render();
  const size_t build_info = text.find("# TYPE sluice_build_info");
  const size_t first_at = text.find("first_gauge 1\n");
  const size_t series_at = text.find("# TYPE sluice_metrics_series_bytes");
  const size_t last_at = text.find("last_gauge 1\n");
  ASSERT_NE(last_at, std::string::npos);
  EXPECT_LT(build_info, first_at);
  EXPECT_LT(first_at, series_at);
  EXPECT_LT(series_at, last_at);
  EXPECT_TRUE(absl::EndsWith(text, "last_gauge 1\n"));

  m.SetGauges(nullptr);
  EXPECT_EQ(m.Render(), alone);
}

TEST(BoundLabelValue, KeepsShortValuesAndHashesLongOnes) {
  EXPECT_EQ(BoundLabelValue(std::string(64, 'a'), 64), std::string(64, 'a'));
  const std::string long_a = std::string(64, 'a') + "1";
  const std::string long_b = std::string(64, 'a') + "2";
  const std::string bounded = BoundLabelValue(long_a, 64);
  EXPECT_EQ(bounded.size(), 64u);
  EXPECT_EQ(bounded.substr(0, 47), std::string(47, 'a'));
  EXPECT_EQ(bounded[47], '~');
  EXPECT_EQ(BoundLabelValue(long_a, 64), bounded);  // Stable: the same value, the same series.
  EXPECT_NE(BoundLabelValue(long_b, 64), bounded);
  // FNV-1a 64 of "a" * 64 + "1", so the suffix is the same in every process.
  EXPECT_EQ(bounded.substr(48).size(), 16u);
}

TEST(BoundLabelValue, NeverSplitsAUtf8Character) {
  // "é" is two bytes (0xC3 0xA9); 46 'a' put its second byte at the cut (index 47).
  const std::string value = std::string(46, 'a') + "\xC3\xA9" + std::string(40, 'b');
  const std::string bounded = BoundLabelValue(value, 64);
  EXPECT_EQ(bounded.substr(0, 47), std::string(46, 'a') + "~");
  EXPECT_LE(bounded.size(), 64u);
}

TEST(Metrics, LongLabelValuesAreBoundedAndStayDistinct) {
  Metrics m({.max_label_bytes = 64});
  const std::string a = "d.user_" + std::string(4096, 'x') + "a";
  const std::string b = "d.user_" + std::string(4096, 'x') + "b";
  m.AddRuleStats("d", a, {.total_hits = 1});
  m.AddRuleStats("d", a, {.total_hits = 1});
  m.AddRuleStats("d", b, {.total_hits = 1});
  const std::string text = m.Render();
  const std::string key_a = BoundLabelValue(a.substr(2), 64);
  const std::string key_b = BoundLabelValue(b.substr(2), 64);
  EXPECT_THAT(text, HasSubstr(R"(ratelimit_service_rate_limit_total_hits_total{domain="d",key=")" +
                              key_a + "\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(R"(ratelimit_service_rate_limit_total_hits_total{domain="d",key=")" +
                              key_b + "\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr(std::string(100, 'x'))));
  EXPECT_EQ(CounterValue(m, "ratelimit.service.rate_limit.d." + key_a + ".total_hits"), 2u);
}

// Verifies a flood of unique 4 KB label values (the attack of issue 13, point 4) keeps the series
// within their byte bound, the scrape small, and every hit counted somewhere.
TEST(Metrics, FloodOfUniqueLongLabelsStaysUnderTheByteBound) {
  constexpr size_t kMaxBytes = 256 << 10;
  constexpr int kRequests = 20'000;
  Metrics m({.max_series = 1'000'000, .max_series_bytes = kMaxBytes});
  const std::string filler(4096, 'v');
  for (int i = 0; i < kRequests; ++i) {
    const std::string value = absl::StrCat(i, filler);
    m.AddRuleStats("edge", absl::StrCat("edge.user_", value), {.total_hits = 1});
    m.CountDomainNotFound(value, 1);
    ASSERT_LE(m.SeriesBytes(), kMaxBytes) << "after " << i;
  }
  // The bound was reached (not merely never approached) and the rest was folded.
  EXPECT_GT(m.SeriesBytes(), kMaxBytes - 1024);
  const std::string text = m.Render();
  // 160 MB of label values were offered; each series renders 6 lines of at most ~350 bytes, and
  // a series counts at least kSeriesOverheadBytes.
  EXPECT_LT(text.size(), kMaxBytes / Metrics::kSeriesOverheadBytes * 6 * 350 + (64 << 10));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) ASSERT_LT(line.size(), 400u);
  EXPECT_THAT(
      text,
      HasSubstr(R"(ratelimit_service_rate_limit_total_hits_total{domain="edge",key="_overflow"})"));
  EXPECT_THAT(
      text,
      HasSubstr(R"(ratelimit_service_rate_limit_domain_not_found_total{domain="_overflow"})"));
  EXPECT_THAT(text, Not(HasSubstr("sluice_metrics_series_folded_total 0\n")));
  EXPECT_EQ(SumCounters(m, ".total_hits"), uint64_t{kRequests});
  EXPECT_EQ(SumCounters(m, ".domain_not_found"), uint64_t{kRequests});
}

// Verifies the per-domain overflow series are capped too (a descriptor's own limit lets a request
// name any domain): beyond them, one global overflow series.
TEST(Metrics, OverflowSeriesAreCapped) {
  Metrics m({.max_series = 1, .max_overflow_series = 2});
  m.AddRuleStats("a", "a.k", {.total_hits = 1});
  for (const char* d : {"b", "c", "e", "f"}) {
    m.AddRuleStats(d, absl::StrCat(d, ".k"), {.total_hits = 1});
  }
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr(R"(total_hits_total{domain="b",key="_overflow"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(total_hits_total{domain="c",key="_overflow"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(total_hits_total{domain="_overflow",key="_overflow"} 2)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(domain="e")")));
  EXPECT_THAT(text, HasSubstr("sluice_metrics_series_folded_total 4\n"));
}

// Verifies recording never waits on a scrape: the render is held in the middle of formatting
// (after its first metric family) while another thread counts an existing series, creates a new
// one, counts an unknown domain and a latency, and reads the statsd counters. Under a render that
// held the series lock while formatting, that thread could not finish until the render did, and
// the render waits for it.
TEST(Metrics, DecisionsRecordWhileARenderIsInProgress) {
  Metrics m;
  m.AddRuleStats("edge", "edge.a", {.total_hits = 1});
  std::promise<void> paused;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  m.SetRenderHookForTest([&] {
    paused.set_value();
    released.wait();
  });
  std::string during;
  std::thread renderer([&] { during = m.Render(); });
  paused.get_future().wait();

  std::future<void> recorded = std::async(std::launch::async, [&] {
    m.AddRuleStats("edge", "edge.a", {.total_hits = 1});
    m.AddRuleStats("edge", "edge.b", {.total_hits = 1});
    m.CountDomainNotFound("nowhere", 1);
    m.ObserveDecisionLatency(std::chrono::microseconds(10));
    (void)m.Counters();
  });
  // Real time only as a watchdog: ready at once unless recording waits on the render.
  const bool finished = recorded.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  release.set_value();
  renderer.join();
  ASSERT_TRUE(finished) << "recording waited for the render";
  m.SetRenderHookForTest(nullptr);

  EXPECT_THAT(during, HasSubstr(R"(total_hits_total{domain="edge",key="a"} 1)"));
  EXPECT_THAT(during, Not(HasSubstr(R"(key="b")")));  // Created after the render's snapshot.
  const std::string after = m.Render();
  EXPECT_THAT(after, HasSubstr(R"(total_hits_total{domain="edge",key="a"} 2)"));
  EXPECT_THAT(after, HasSubstr(R"(total_hits_total{domain="edge",key="b"} 1)"));
  EXPECT_THAT(after, HasSubstr(R"(domain_not_found_total{domain="nowhere"} 1)"));
}

}  // namespace
}  // namespace sluice::server
