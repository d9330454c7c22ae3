// RateLimitService's reports to its RlsObserver (src/server/rls/rls_observer.h): one report per
// request, with the domain, each limit's stats key and stats, the answer and the latency; and the
// process's fan-out, ObserverList (src/server/observe/observer_list.h), which passes every event
// to each observer. Links the rate limit core alone (no stats, no protobuf; the observe room's
// interfaces are headers).
#include "src/server/rls/rls_observer.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/config.h"
#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"

#include "src/server/observe/observer_list.h"
#include "src/server/observe/process_observer.h"
#include "src/server/rls/rate_limit_service.h"
#include "tests/testing/faulty_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice::server {
namespace {

constexpr const char* kConfig = R"yaml(
domain: edge
descriptors:
  - key: two
    rate_limit: {unit: minute, requests_per_unit: 2}
)yaml";

// Keeps a copy of every report.
class RecordingObserver final : public ProcessObserver {
 public:
  struct Limit {
    std::string stats_key;
    RuleStats stats;
  };
  struct Decision {
    std::string domain;
    std::vector<Limit> limits;
    RlsCode overall = RlsCode::kOk;
    std::chrono::microseconds latency{0};
  };

  void OnInvalidRequest() override { ++invalid; }
  void OnUnknownDomain(std::string_view domain, uint64_t descriptors) override {
    unknown.emplace_back(domain);
    unknown_descriptors += descriptors;
  }
  void OnStoreError(std::string_view domain, std::chrono::microseconds latency) override {
    store_errors.emplace_back(domain);
    store_error_latency = latency;
  }
  void OnDecision(const RlsDecisionReport& report) override {
    Decision& d = decisions.emplace_back();
    d.domain = std::string(report.domain);
    for (const RuleStatsDelta& l : report.limits) {
      d.limits.push_back({std::string(l.stats_key), l.stats});
    }
    d.overall = report.response->overall_code;
    d.latency = report.latency;
  }
  void OnQuotaUsage(const QuotaUsageReport& usage) override {
    quota.emplace_back(usage.stats_key);
    quota_denied += usage.denied;
  }
  void OnConfigLoad(const ConfigLoadReport& load) override {
    config_loads.push_back(load.ok ? std::string(load.origin)
                                   : "refused: " + std::string(load.error));
  }

  int invalid = 0;
  std::vector<std::string> unknown;
  uint64_t unknown_descriptors = 0;
  std::vector<std::string> store_errors;
  std::chrono::microseconds store_error_latency{0};
  std::vector<Decision> decisions;
  std::vector<std::string> quota;
  uint64_t quota_denied = 0;
  std::vector<std::string> config_loads;
};

// Hears config loads only: every other event is the interface's no-op.
class ConfigLoadCounter final : public ProcessObserver {
 public:
  void OnConfigLoad(const ConfigLoadReport& /*load*/) override { ++loads; }
  int loads = 0;
};

class RlsObserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto memory = MemoryStore::Create({.clock = &clock_});
    ASSERT_TRUE(memory.ok());
    auto faulty = std::make_unique<testing::FaultyStore>(*std::move(memory));
    faulty_ = faulty.get();
    store_ = WithFailurePolicy(
        std::move(faulty),
        {.mode = FailureMode::kPropagate, .breaker_failure_threshold = 0, .clock = &clock_});
    service_ = std::make_unique<RateLimitService>(*store_, observers_,
                                                  RateLimitServiceOptions{.clock = &clock_});
    const ConfigSource source{.name = "edge.yaml", .content = kConfig};
    auto config = ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    service_->SetConfig(*config);
  }

  absl::StatusOr<RlsResponse> Decide(std::string_view domain, std::string_view key,
                                     std::string_view value) {
    RlsRequest request{.domain = domain, .descriptors = {{.entries = {{key, value}}}}};
    std::optional<absl::StatusOr<RlsResponse>> answer;
    service_->Decide(request, [&answer](absl::StatusOr<RlsResponse> r) { answer = std::move(r); });
    EXPECT_TRUE(answer.has_value());  // The memory store answers inline.
    return answer.value_or(absl::InternalError("no answer"));
  }

  testing::ManualClock clock_{std::chrono::seconds(1'700'000'000)};
  RecordingObserver first_;
  ConfigLoadCounter loads_only_;
  RecordingObserver second_;
  ObserverList observers_{{&first_, &loads_only_, &second_}};
  testing::FaultyStore* faulty_ = nullptr;
  std::unique_ptr<FailurePolicyStore> store_;
  std::unique_ptr<RateLimitService> service_;
};

TEST_F(RlsObserverTest, ADecisionIsReportedWithItsStatsKeyAndAnswer) {
  ASSERT_TRUE(Decide("edge", "two", "a").ok());
  ASSERT_TRUE(Decide("edge", "two", "a").ok());
  ASSERT_TRUE(Decide("edge", "two", "a").ok());
  ASSERT_EQ(first_.decisions.size(), 3u);
  const RecordingObserver::Decision& last = first_.decisions.back();
  EXPECT_EQ(last.domain, "edge");
  ASSERT_EQ(last.limits.size(), 1u);
  EXPECT_EQ(last.limits[0].stats_key, "edge.two");  // The rule names no value.
  EXPECT_EQ(last.limits[0].stats.total_hits, 1u);
  EXPECT_EQ(last.limits[0].stats.over_limit, 1u);
  EXPECT_EQ(last.overall, RlsCode::kOverLimit);
  EXPECT_EQ(first_.decisions[0].overall, RlsCode::kOk);
  EXPECT_EQ(first_.invalid, 0);
  EXPECT_TRUE(first_.store_errors.empty());
}

// Verifies the list reports to every observer, in the same words, past one that overrides only
// what it cares about.
TEST_F(RlsObserverTest, TheListReportsToEachObserver) {
  ASSERT_TRUE(Decide("edge", "two", "b").ok());
  ASSERT_EQ(second_.decisions.size(), 1u);
  EXPECT_EQ(second_.decisions[0].limits[0].stats_key, first_.decisions[0].limits[0].stats_key);
}

// Verifies the process's other events reach every observer through the same list.
TEST_F(RlsObserverTest, TheListPassesQuotaUsageAndConfigLoads) {
  const std::vector<std::pair<std::string, std::string>> entries = {{"name", "api"}};
  observers_.OnQuotaUsage(QuotaUsageReport{.domain = "quota",
                                           .stats_key = "quota.name_api",
                                           .entries = entries,
                                           .limit = 10,
                                           .allowed = 4,
                                           .denied = 2});
  observers_.OnConfigLoad({.ok = true, .origin = "/etc/ratelimit"});
  observers_.OnConfigLoad({.ok = false, .error = "bad yaml"});
  for (const RecordingObserver* o : {&first_, &second_}) {
    EXPECT_EQ(o->quota, std::vector<std::string>{"quota.name_api"});
    EXPECT_EQ(o->quota_denied, 2u);
    EXPECT_EQ(o->config_loads, (std::vector<std::string>{"/etc/ratelimit", "refused: bad yaml"}));
    EXPECT_TRUE(o->decisions.empty());
  }
  EXPECT_EQ(loads_only_.loads, 2);
}

TEST_F(RlsObserverTest, AnUnknownDomainIsReportedBeforeItsDecision) {
  ASSERT_TRUE(Decide("nowhere", "two", "a").ok());
  EXPECT_EQ(first_.unknown, std::vector<std::string>{"nowhere"});
  EXPECT_EQ(first_.unknown_descriptors, 1u);
  ASSERT_EQ(first_.decisions.size(), 1u);
  EXPECT_TRUE(first_.decisions[0].limits.empty());
}

TEST_F(RlsObserverTest, AMalformedRequestIsReportedAndNotDecided) {
  RlsRequest request{.domain = "", .descriptors = {{.entries = {{"two", "a"}}}}};
  absl::Status status;
  service_->Decide(request,
                   [&status](const absl::StatusOr<RlsResponse>& r) { status = r.status(); });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(first_.invalid, 1);
  EXPECT_TRUE(first_.decisions.empty());
  service_->ReportInvalidRequest();  // What an edge reports for a request it cannot convert.
  EXPECT_EQ(second_.invalid, 2);
}

TEST_F(RlsObserverTest, AStoreErrorIsReportedWithItsDomainAndLatency) {
  faulty_->Fail(absl::UnavailableError("down"));
  EXPECT_EQ(Decide("edge", "two", "a").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(first_.store_errors, std::vector<std::string>{"edge"});
  EXPECT_EQ(first_.store_error_latency, std::chrono::microseconds(0));  // The clock stood still.
  EXPECT_TRUE(first_.decisions.empty());
}

}  // namespace
}  // namespace sluice::server
