// What one decision report costs the dashboard (src/server/dashboard/dashboard.h), alone: the
// hot-path share bench/dashboard_ab.sh measures end to end, without the noise of a server run.
// KEYS distinct callers (1: one hot key, 10,000: the tables churn), over the limit or not.
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

#include "sluice/clock.h"

#include "src/server/dashboard/dashboard.h"

namespace sluice::server {
namespace {

void BM_OnDecision(benchmark::State& state) {
  Dashboard dashboard(Clock::Real(), DashboardOptions{});
  const auto keys = static_cast<size_t>(state.range(0));
  const bool over = state.range(1) != 0;
  std::vector<std::string> store_keys;
  for (size_t i = 0; i < keys; ++i) {
    store_keys.push_back("{bench:user:user-" + std::to_string(i) + "}fixed_window:60000");
  }
  const RlsLimit limit{.requests_per_unit = 100, .unit = RateLimitUnit::kMinute};
  RlsResponse response{.overall_code = over ? RlsCode::kOverLimit : RlsCode::kOk};
  size_t i = 0;
  for (auto _ : state) {
    const RuleStatsDelta limits[] = {{.stats_key = "bench.user",
                                      .stats = {.total_hits = 1, .over_limit = over ? 1u : 0u},
                                      .store_key = store_keys[i],
                                      .limit = &limit}};
    dashboard.OnDecision(RlsDecisionReport{
        .domain = "bench", .limits = limits, .response = &response, .latency = {}});
    i = i + 1 == keys ? 0 : i + 1;
  }
}
BENCHMARK(BM_OnDecision)->Args({1, 0})->Args({10'000, 0})->Args({10'000, 1});

}  // namespace
}  // namespace sluice::server

BENCHMARK_MAIN();
