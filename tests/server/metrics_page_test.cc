// The whole /metrics page as sluiced serves it: Metrics' counters, then the gauges each room
// renders (the store's, the listeners', the xDS client's, the metrics' own series bounds, RLQS's),
// in the order RunServer lists them. testdata/metrics_page.txt is the page the metrics rendered
// before the rooms rendered their own families, for the same values: the page must not change by
// a byte (the build's labels aside).
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/server/listener_gauges.h"
#include "src/server/observe/gauge_source.h"
#include "src/server/stats/metrics.h"
#include "src/server/store_gauges.h"
#include "src/server/xds/xds_client.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;

// A room's gauges, rendered by `render`.
class FunctionGauge final : public GaugeSource {
 public:
  explicit FunctionGauge(std::function<void(std::string&)> render) : render_(std::move(render)) {}
  void AppendPrometheus(std::string& out) const override { render_(out); }

 private:
  const std::function<void(std::string&)> render_;
};

StoreState TestStoreState() {
  StoreState s{.redis_connected = true,
               .breaker_open = true,
               .breaker_opens = 3,
               .breaker_closes = 2,
               .redis = RedisStoreStats{.script_calls = 40,
                                        .noscript_resends = 1,
                                        .connects = 3,
                                        .connect_failures = 5,
                                        .disconnects = 2},
               .memory = MemoryStoreStats{.entries = 7, .bytes = 504, .evicted = 9}};
  s.redis->leases = true;
  s.redis->lease.local_admits = 11;
  s.redis->lease.keys = 4;
  s.redis->lease.instances_seen = 2;
  s.redis->lease.units_refunded_ending = 6;
  return s;
}

ListenersState TestListenersState() {
  return ListenersState{
      .listeners =
          {{.name = "grpc", .accepted = 4, .rejected_over_cap = 2, .accept_failures = 1},
           {.name = "http", .accepted = 9, .closed_idle_at_cap = 7, .rejected_per_address = 8}},
      .grpc_in_flight = 3,
      .grpc_rejected_in_flight = 5,
      .grpc_rejected_connection_share = 10,
      .grpc_unparsable_requests = 6,
      .grpc_silent_connections_closed = 12};
}

// Every room's gauges, fixed, around `metrics`.
class MetricsPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    metrics_.AddRuleStats("edge", "edge.remote_address", {.total_hits = 3, .within_limit = 3});
    metrics_.CountDomainNotFound("nowhere", 2);
    metrics_.CountConfigLoad(true);
    metrics_.ObserveDecisionLatency(std::chrono::microseconds(40));
    metrics_.SetGauges(&gauges_);
  }
  void TearDown() override { metrics_.SetGauges(nullptr); }

  Metrics metrics_;
  const FunctionGauge store_{[](std::string& out) { AppendStoreFamilies(TestStoreState(), out); }};
  const FunctionGauge listeners_{
      [](std::string& out) { AppendListenerFamilies(TestListenersState(), out); }};
  const FunctionGauge xds_{[](std::string& out) {
    AppendXdsFamilies(XdsClientStats{.responses = 1,
                                     .acks = 2,
                                     .nacks = 3,
                                     .streams = 4,
                                     .stream_failures = 5,
                                     .connected = true},
                      out);
  }};
  const FunctionGauge rlqs_{
      [](std::string& out) { out += "# HELP rlqs x\n# TYPE rlqs gauge\nrlqs 1\n"; }};
  // RunServer's order.
  const GaugeList gauges_{{&store_, &listeners_, &xds_, &metrics_.SeriesGauges(), &rlqs_}};
};

std::string ReadTestData(const std::string& name) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  std::ifstream in(std::string(root != nullptr ? root : ".") + "/tests/server/testdata/" +
                   name);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The page, its sluice_build_info labels (which differ by build) replaced by "BUILD".
std::string WithoutBuildLabels(const std::string& page) {
  std::istringstream lines(page);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    out += absl::StartsWith(line, "sluice_build_info{") ? "sluice_build_info{BUILD} 1" : line;
    out += "\n";
  }
  return out;
}

TEST_F(MetricsPageTest, IsTheSamePageByteForByte) {
  const std::string golden = ReadTestData("metrics_page.txt");
  ASSERT_FALSE(golden.empty()) << "tests/server/testdata/metrics_page.txt not found";
  EXPECT_EQ(WithoutBuildLabels(metrics_.Render()), golden);
}

// Verifies the Prometheus conventions over every room's families: each counter family ends in
// _total, gauges do not.
TEST_F(MetricsPageTest, CounterFamiliesEndInTotal) {
  std::istringstream lines(metrics_.Render());
  int families = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!absl::StartsWith(line, "# TYPE ")) continue;
    ++families;
    std::istringstream words(line.substr(7));
    std::string name, type;
    words >> name >> type;
    if (type == "counter") {
      EXPECT_TRUE(absl::EndsWith(name, "_total")) << name;
    } else if (type == "gauge") {
      EXPECT_FALSE(absl::EndsWith(name, "_total")) << name;
    }
  }
  EXPECT_GT(families, 60);
}

// Verifies the listener and gRPC counters reach the page, one series per listener.
TEST_F(MetricsPageTest, OneSeriesPerListener) {
  const std::string text = metrics_.Render();
  EXPECT_THAT(text, HasSubstr("sluice_listener_accepted_total{listener=\"grpc\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("sluice_listener_accepted_total{listener=\"http\"} 9\n"));
  EXPECT_THAT(text, HasSubstr("sluice_listener_rejected_over_cap_total{listener=\"grpc\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("sluice_listener_accept_failures_total{listener=\"grpc\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("sluice_listener_closed_idle_at_cap_total{listener=\"http\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("sluice_grpc_in_flight 3\n"));
  EXPECT_THAT(text, HasSubstr("sluice_grpc_rejected_in_flight_total 5\n"));
  EXPECT_THAT(text, HasSubstr("sluice_grpc_unparsable_requests_total 6\n"));
  EXPECT_THAT(text, HasSubstr("sluice_xds_connected 1\n"));
}

}  // namespace
}  // namespace sluice::server
