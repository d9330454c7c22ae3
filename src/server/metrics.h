// Metrics: sluiced's counters, a latency histogram and a few gauges, under envoyproxy/ratelimit's
// names, rendered for Prometheus (Render()) and read by the statsd sink (Counters()).
//
// Per-rule counters are kept per stats key ("domain.key_value...", RuleMatch::stats_key) and
// counted as the reference counts them (rls_evaluate.h). Their statsd names are the reference's,
// `ratelimit.service.rate_limit.<stats key>.<stat>` with the key sanitized as the reference
// sanitizes it (':' and '|' to '_', the dots of IPv4 addresses to '_'); in Prometheus they are
// `ratelimit_service_rate_limit_<stat>_total{domain="...",key="..."}`, `key` being the stats key
// without its domain. The number of series is capped (`max_series`): once reached, new stats keys
// are counted under the key "_overflow" instead of growing memory without bound (the reference's
// per-key stats have leaked memory this way).
//
// Example:
//   Metrics metrics({.max_series = 1000});
//   metrics.AddRuleStats("edge", "edge.remote_address", RuleStats{.total_hits = 1});
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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"

#include "src/util/mutex.h"

namespace sluice::server {

// What one decision adds to a stats key's counters.
struct RuleStats {
  uint64_t total_hits = 0;
  uint64_t within_limit = 0;
  uint64_t near_limit = 0;
  uint64_t over_limit = 0;
  uint64_t over_limit_with_local_cache = 0;
  uint64_t shadow_mode = 0;
};

// The state of the store, for gauges; read on every render.
struct StoreState {
  // Redis: whether a connection is ready. Empty for the memory store.
  std::optional<bool> redis_connected{};
  // Whether the failure policy's circuit breaker is open (the store is skipped).
  bool breaker_open = false;
  uint64_t breaker_opens = 0;
};

struct MetricsOptions {
  // Most stats keys (and unknown domains) kept; more are folded into one overflow series.
  // Default: 10000.
  size_t max_series = 10'000;
};

// SanitizeStatName()
//
// Returns `name` as the reference sanitizes stat names: ':' and '|' become '_', and so do the dots
// of every IPv4-looking address (\d{1,3}(\.\d{1,3}){3}).
std::string SanitizeStatName(absl::string_view name);

class Metrics {
 public:
  explicit Metrics(MetricsOptions options = {});

  // Adds `stats` to the counters of `stats_key` (which starts with "`domain`.").
  void AddRuleStats(absl::string_view domain, absl::string_view stats_key, const RuleStats& stats);
  // A request named an unknown domain (the reference counts one per descriptor).
  void CountDomainNotFound(absl::string_view domain, uint64_t descriptors);
  // A request failed in the store (the reference's should_rate_limit.redis_error).
  void CountStoreError() { store_errors_.fetch_add(1, std::memory_order_relaxed); }
  // A request was malformed (the reference's should_rate_limit.service_error).
  void CountServiceError() { service_errors_.fetch_add(1, std::memory_order_relaxed); }
  // Global shadow mode turned an OVER_LIMIT answer OK.
  void CountGlobalShadowMode() { global_shadow_mode_.fetch_add(1, std::memory_order_relaxed); }
  void CountFallbackDecisions(uint64_t n) {
    fallback_decisions_.fetch_add(n, std::memory_order_relaxed);
  }
  void CountLocalCacheHits(uint64_t n) {
    local_cache_hits_.fetch_add(n, std::memory_order_relaxed);
  }
  void CountConfigLoad(bool success);
  // One ShouldRateLimit call answered (gRPC or /json) after `latency`.
  void ObserveDecisionLatency(std::chrono::microseconds latency);
  // Where the store gauges come from; called on every Render(). Default: none.
  void SetStoreStateSource(absl::AnyInvocable<StoreState() const> source);

  // Metrics::Render()
  //
  // Returns every metric in the Prometheus text exposition format (version 0.0.4).
  std::string Render() const;

  // A counter's statsd name and its value since start.
  struct Counter {
    std::string name;
    uint64_t value = 0;
  };
  // Metrics::Counters()
  //
  // Returns every counter under its statsd name (without tags).
  std::vector<Counter> Counters() const;

 private:
  struct RuleCounters {
    std::string domain;
    std::string key;  // The stats key without "domain."; "_overflow" for the overflow series.
    std::string statsd_prefix;  // "ratelimit.service.rate_limit.<sanitized stats key>."
    std::atomic<uint64_t> total_hits{0};
    std::atomic<uint64_t> within_limit{0};
    std::atomic<uint64_t> near_limit{0};
    std::atomic<uint64_t> over_limit{0};
    std::atomic<uint64_t> over_limit_with_local_cache{0};
    std::atomic<uint64_t> shadow_mode{0};
  };
  // Upper bounds of the latency buckets, in microseconds.
  static constexpr std::array<int64_t, 12> kLatencyBucketsUs = {
      50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000};

  RuleCounters& CountersFor(absl::string_view domain, absl::string_view stats_key);

  const MetricsOptions options_;
  mutable internal::Mutex mu_;
  // Node-stable values: the map stores pointers so counters can be bumped outside the lock.
  absl::flat_hash_map<std::string, std::unique_ptr<RuleCounters>> rules_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> domains_not_found_ ABSL_GUARDED_BY(mu_);
  absl::AnyInvocable<StoreState() const> store_state_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> store_errors_{0};
  std::atomic<uint64_t> service_errors_{0};
  std::atomic<uint64_t> global_shadow_mode_{0};
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
