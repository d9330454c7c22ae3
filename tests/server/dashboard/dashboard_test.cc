#include "src/server/dashboard/dashboard.h"

#include <array>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "gtest/gtest.h"

#include "src/server/dashboard/dashboard_routes.h"
#include "tests/testing/manual_clock.h"

namespace sluice::server {
namespace {

using ::std::chrono::seconds;

// Reports one decision of `domain` with one limit on the descriptor key=value.
void Decide(Dashboard& d, std::string_view domain, std::string_view key, bool over,
            const RlsLimit& limit = RlsLimit{.requests_per_unit = 10,
                                             .unit = RateLimitUnit::kMinute}) {
  RlsResponse response{.overall_code = over ? RlsCode::kOverLimit : RlsCode::kOk};
  const std::array<RuleStatsDelta, 1> limits = {
      {{.stats_key = "x",
        .stats = {.total_hits = 1, .over_limit = over ? 1u : 0u},
        .store_key = key,
        .limit = &limit}}};
  d.OnDecision(RlsDecisionReport{.domain = domain,
                                 .limits = limits,
                                 .response = &response,
                                 .latency = std::chrono::microseconds(300)});
}

boost::json::object Feed(const Dashboard& d, std::string_view domain = "") {
  return boost::json::parse(d.FeedJson(domain)).as_object();
}

class DashboardTest : public ::testing::Test {
 protected:
  testing::ManualClock clock_{seconds(1'700'000'000)};
  Dashboard dashboard_{
      clock_, DashboardOptions{.history_seconds = 120, .top_rows = 5, .caller_sample_every = 1}};
};

TEST_F(DashboardTest, FeedCountsDecisionsPerDomainAndSecond) {
  for (int i = 0; i < 7; ++i) {
    Decide(dashboard_, "edge", "{edge:user:alice}fixed_window:60000", i < 2);
  }
  Decide(dashboard_, "api", "{api:user:bob}fixed_window:60000", false);
  clock_.Advance(seconds(1));
  const boost::json::object feed = Feed(dashboard_);
  EXPECT_EQ(feed.at("version").to_number<int64_t>(), Dashboard::kFeedVersion);
  const boost::json::array& domains = feed.at("domains").as_array();
  ASSERT_EQ(domains.size(), 2u);
  const boost::json::object& edge = domains[1].as_object();  // sorted by name
  EXPECT_EQ(edge.at("name").as_string(), "edge");
  const boost::json::array& per_second = edge.at("decisions_per_second").as_array();
  ASSERT_EQ(per_second.size(), 120u);
  EXPECT_EQ(per_second.back().to_number<uint64_t>(), 7u);
  EXPECT_EQ(edge.at("over_limit_per_second").as_array().back().to_number<uint64_t>(), 2u);
  EXPECT_EQ(edge.at("last_minute_over_limit").to_number<uint64_t>(), 2u);
  EXPECT_EQ(feed.at("latency").at("p50_us").to_number<uint64_t>(),
            512u);  // 300 us: the bucket below 2^9
}

TEST_F(DashboardTest, TopOverLimitNamesTheDescriptorItsLimitAndSince) {
  const int64_t start_ms = 1'700'000'000'000;
  Decide(dashboard_, "edge", "{edge:user:alice}fixed_window:60000", true);
  clock_.Advance(seconds(20));  // into the next 30 s window: "since" carries over
  Decide(dashboard_, "edge", "{edge:user:alice}fixed_window:60000", true);
  Decide(dashboard_, "edge", "{edge:user:carol}fixed_window:60000", false);
  const boost::json::object feed = Feed(dashboard_);
  const boost::json::array& top = feed.at("top_over_limit").as_array();
  ASSERT_EQ(top.size(), 1u);
  const boost::json::object& row = top[0].as_object();
  EXPECT_EQ(row.at("domain").as_string(), "edge");
  EXPECT_EQ(row.at("descriptor").at(0).at("key").as_string(), "user");
  EXPECT_EQ(row.at("descriptor").at(0).at("value").as_string(), "alice");
  EXPECT_EQ(row.at("count").to_number<uint64_t>(), 2u);
  EXPECT_EQ(row.at("since_ms").to_number<int64_t>(), start_ms);
  EXPECT_EQ(row.at("limit").at("requests_per_unit").to_number<uint64_t>(), 10u);
  EXPECT_EQ(row.at("limit").at("unit").as_string(), "minute");
  const boost::json::array& callers = feed.at("top_callers").as_array();
  ASSERT_EQ(callers.size(), 2u);
  EXPECT_EQ(callers[0].at("descriptor").at(0).at("value").as_string(), "alice");

  clock_.Advance(seconds(70));  // both windows gone
  EXPECT_TRUE(Feed(dashboard_).at("top_over_limit").as_array().empty());
}

// Sampled, the callers' counts are estimates of the right size, and the heavy caller leads.
// An RLQS report counts its requests in the second it arrives and lists its bucket, with the rule's
// limit, beside the RLS descriptors.
TEST_F(DashboardTest, QuotaReportsFeedTheSeriesAndTheTopLists) {
  const std::vector<std::pair<std::string, std::string>> entries = {{"name", "orders"}};
  const QuotaUsageReport report{.domain = "quota",
                                .stats_key = "quota.name_orders",
                                .entries = entries,
                                .limit = 100,
                                .unit = seconds(60),
                                .allowed = 40,
                                .denied = 12};
  dashboard_.OnQuotaUsage(report);
  QuotaUsageReport later = report;
  later.allowed = 5;
  later.denied = 0;
  dashboard_.OnQuotaUsage(later);
  clock_.Advance(seconds(1));
  const boost::json::object feed = Feed(dashboard_);
  const boost::json::object& quota = feed.at("domains").at(0).as_object();
  EXPECT_EQ(quota.at("name").as_string(), "quota");
  EXPECT_EQ(quota.at("decisions_per_second").as_array().back().to_number<uint64_t>(), 57u);
  EXPECT_EQ(quota.at("over_limit_per_second").as_array().back().to_number<uint64_t>(), 12u);
  const boost::json::array& top = feed.at("top_over_limit").as_array();
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].at("domain").as_string(), "quota");
  EXPECT_EQ(top[0].at("descriptor").at(0).at("key").as_string(), "name");
  EXPECT_EQ(top[0].at("descriptor").at(0).at("value").as_string(), "orders");
  EXPECT_EQ(top[0].at("count").to_number<uint64_t>(), 12u);
  EXPECT_EQ(top[0].at("limit").at("requests_per_unit").to_number<uint64_t>(), 100u);
  EXPECT_EQ(top[0].at("limit").at("unit").as_string(), "minute");
  EXPECT_EQ(feed.at("top_callers").at(0).at("count").to_number<uint64_t>(), 57u);
}

TEST(DashboardSampleTest, SampledCallersKeepTheirOrderAndScale) {
  testing::ManualClock clock;
  Dashboard dashboard(clock, DashboardOptions{.caller_sample_every = 8});
  for (int i = 0; i < 8000; ++i) {
    Decide(dashboard, "edge",
           i % 4 == 0 ? "{edge:user:heavy}x" : "{edge:user:" + std::to_string(i) + "}x", false);
  }
  const boost::json::object feed = Feed(dashboard);
  const boost::json::array& callers = feed.at("top_callers").as_array();
  ASSERT_FALSE(callers.empty());
  EXPECT_EQ(callers[0].at("descriptor").at(0).at("value").as_string(), "heavy");
  const uint64_t heavy = callers[0].at("count").to_number<uint64_t>();
  EXPECT_GT(heavy, 1500u);  // 2000 true, estimated from about 250 samples of weight 8
  EXPECT_LT(heavy, 2600u);
}

TEST_F(DashboardTest, ADomainNarrowsTheTopLists) {
  Decide(dashboard_, "edge", "{edge:user:alice}fixed_window:60000", true);
  Decide(dashboard_, "api", "{api:user:bob}fixed_window:60000", true);
  const boost::json::object feed = Feed(dashboard_, "api");
  const boost::json::array& top = feed.at("top_over_limit").as_array();
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].at("domain").as_string(), "api");
}

TEST_F(DashboardTest, ValuesArePlainJsonStringsAndLongOnesAreCut) {
  const std::string xss = "<img src=x onerror=alert(1)>";
  Decide(dashboard_, "edge", "{edge:user:" + xss + "}fixed_window:60000", true);
  // Past max_key_bytes (160): the key is cut before its tag closes.
  Decide(dashboard_, "edge", "{edge:user:" + std::string(300, 'v') + "}fixed_window:60000", true);
  const boost::json::object feed = Feed(dashboard_);
  const boost::json::array& top = feed.at("top_over_limit").as_array();
  ASSERT_EQ(top.size(), 2u);
  bool saw_xss = false;
  bool saw_cut = false;
  for (const boost::json::value& row : top) {
    const std::string value(row.at("descriptor").at(0).at("value").as_string());
    if (value == xss) saw_xss = !row.at("truncated").as_bool();
    if (value == std::string(64, 'v')) {
      saw_cut = row.at("truncated").as_bool() && row.at("domain").as_string() == "edge";
    }
  }
  EXPECT_TRUE(saw_xss);
  EXPECT_TRUE(saw_cut);
}

TEST_F(DashboardTest, ConfigLoadsAndErrors) {
  dashboard_.OnConfigLoad({.ok = true, .origin = "/etc/ratelimit"});
  dashboard_.OnConfigLoad({.ok = false, .error = "bad yaml"});
  const boost::json::object feed = Feed(dashboard_);
  EXPECT_EQ(feed.at("config").at("version").to_number<uint64_t>(), 1u);
  EXPECT_EQ(feed.at("config").at("load_errors").to_number<uint64_t>(), 1u);
  EXPECT_EQ(feed.at("config").at("last_error").as_string(), "bad yaml");
  EXPECT_FALSE(feed.contains("store"));
}

// A store state read at each feed, as the process's store wiring gives it.
class FixedStoreState final : public StoreStateSource {
 public:
  explicit FixedStoreState(const StoreState& state) : state_(state) {}
  StoreState ReadStoreState() const override { return state_; }

 private:
  const StoreState state_;
};

TEST_F(DashboardTest, StoreStateWithLeases) {
  StoreState s{.redis_connected = true, .breaker_open = false, .redis = RedisStoreStats{}};
  s.redis->leases = true;
  s.redis->lease.local_admits = 40;
  s.redis->lease.grants = 3;
  const FixedStoreState source(s);
  dashboard_.SetStoreStateSource(&source);
  const boost::json::object feed = Feed(dashboard_);
  dashboard_.SetStoreStateSource(nullptr);
  const boost::json::object& store = feed.at("store").as_object();
  EXPECT_EQ(store.at("kind").as_string(), "redis");
  EXPECT_TRUE(store.at("connected").as_bool());
  EXPECT_FALSE(store.at("breaker_open").as_bool());
  EXPECT_EQ(store.at("leases").at("local_admits").to_number<uint64_t>(), 40u);
  EXPECT_EQ(store.at("leases").at("grants").to_number<uint64_t>(), 3u);
}

TEST_F(DashboardTest, MemoryIsBoundedWhateverTheCardinality) {
  const size_t before = dashboard_.MemoryBytes();
  for (int i = 0; i < 50'000; ++i) {
    Decide(dashboard_, "domain" + std::to_string(i % 1000),
           "{edge:user:" + std::to_string(i) + std::string(500, 'z') + "}fixed_window:1000", true);
  }
  // Only the domains' series grow, up to max_domains per shard.
  const DashboardOptions o{.history_seconds = 120};
  const size_t domains = o.shards * (o.max_domains + 1) * (o.history_seconds * 32 + 256);
  EXPECT_LE(dashboard_.MemoryBytes(), before + domains);
}

// The defaults sluiced runs with, as docs/sluiced.md states them: about 0.5 MiB of heavy-hitter
// tables, and at most 32 domains (and "(other)") of 300 s per shard beside them.
TEST(DashboardMemoryTest, DefaultsStayUnderTwoMebibytes) {
  testing::ManualClock clock;
  Dashboard dashboard(clock, DashboardOptions{});
  const size_t tables = dashboard.MemoryBytes();
  EXPECT_LT(tables, size_t{640} * 1024) << tables;
  for (int i = 0; i < 1000; ++i) Decide(dashboard, "domain" + std::to_string(i), "{d:k:v}x", true);
  EXPECT_LT(dashboard.MemoryBytes(), size_t{2} * 1024 * 1024) << dashboard.MemoryBytes();
}

TEST(DashboardRoutesTest, DomainParameterIsDecoded) {
  EXPECT_EQ(DomainParameter("/dashboard/feed.json"), "");
  EXPECT_EQ(DomainParameter("/dashboard/feed.json?domain=a%20b&x=1"), "a b");
  EXPECT_EQ(DomainParameter("/dashboard/feed.json?x=1&domain=edge"), "edge");
}

TEST(DashboardRoutesTest, EveryAnswerIsUncachedUnderTheStrictPolicy) {
  testing::ManualClock clock;
  Dashboard dashboard(clock, DashboardOptions{});
  for (const Route& route : DashboardRoutes(dashboard)) {
    HttpResponse got;
    route.handler(HttpRequest{.method = "GET", .target = route.path},
                  [&got](HttpResponse r) { got = std::move(r); });
    EXPECT_EQ(got.status, 200) << route.path;
    EXPECT_FALSE(got.body.empty()) << route.path;
    bool no_store = false;
    bool csp = false;
    for (const auto& [name, value] : got.headers) {
      no_store = no_store || (name == "Cache-Control" && value == "no-store");
      csp = csp || (name == "Content-Security-Policy" && value == kDashboardCsp);
    }
    EXPECT_TRUE(no_store) << route.path;
    EXPECT_TRUE(csp) << route.path;
  }
}

}  // namespace
}  // namespace sluice::server
