// Metrics: counters and one latency histogram, rendered in the Prometheus text format.
//
// Per-rule series are labelled by domain and rule key. Their number is capped (`max_series`): once
// the cap is reached, new label sets are counted under {rule="_overflow"} instead of growing memory
// without bound (envoyproxy/ratelimit's per-key stats have leaked memory this way).
//
// Example:
//   Metrics metrics({.max_series = 1000});
//   metrics.CountRule("sluice-demo", "remote_address", RuleOutcome::kOverLimit, 1);
//   std::string text = metrics.Render();
//
// Thread safety: thread-safe.
#ifndef SLUICE_SERVER_METRICS_H_
#define SLUICE_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

#include "src/util/mutex.h"

namespace sluice::server {

enum class RuleOutcome : uint8_t { kWithinLimit, kNearLimit, kOverLimit, kShadowMode };

struct MetricsOptions {
  // Most (domain, rule) series kept; more are folded into one overflow series. Default: 10000.
  size_t max_series = 10'000;
};

class Metrics {
 public:
  explicit Metrics(MetricsOptions options = {});

  // Counts `hits` for a rule: total_hits always, plus the outcome's counter.
  void CountRule(absl::string_view domain, absl::string_view rule, RuleOutcome outcome,
                 uint64_t hits);
  void CountStoreError() { store_errors_.fetch_add(1, std::memory_order_relaxed); }
  void CountFallbackDecision() { fallback_decisions_.fetch_add(1, std::memory_order_relaxed); }
  void CountLocalCacheHit() { local_cache_hits_.fetch_add(1, std::memory_order_relaxed); }
  void CountConfigLoad(bool success);
  void ObserveDecisionLatency(std::chrono::microseconds latency);

  // Metrics::Render()
  //
  // Returns every metric in the Prometheus text exposition format (version 0.0.4).
  std::string Render() const;

 private:
  struct RuleCounters {
    std::atomic<uint64_t> total_hits{0};
    std::atomic<uint64_t> within_limit{0};
    std::atomic<uint64_t> near_limit{0};
    std::atomic<uint64_t> over_limit{0};
    std::atomic<uint64_t> shadow_mode{0};
  };
  // Upper bounds of the latency buckets, in microseconds.
  static constexpr std::array<int64_t, 12> kLatencyBucketsUs = {
      50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000};

  RuleCounters& CountersFor(absl::string_view domain, absl::string_view rule);

  const MetricsOptions options_;
  mutable internal::Mutex mu_;
  // Node-stable values: the map stores pointers so counters can be bumped outside the lock.
  absl::flat_hash_map<std::string, std::unique_ptr<RuleCounters>> rules_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> store_errors_{0};
  std::atomic<uint64_t> fallback_decisions_{0};
  std::atomic<uint64_t> local_cache_hits_{0};
  std::atomic<uint64_t> config_load_success_{0};
  std::atomic<uint64_t> config_load_error_{0};
  std::array<std::atomic<uint64_t>, kLatencyBucketsUs.size() + 1> latency_buckets_{};
  std::atomic<uint64_t> latency_sum_us_{0};
  std::atomic<uint64_t> latency_count_{0};
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_METRICS_H_
