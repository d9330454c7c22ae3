// Metrics: sluiced's counters, a latency histogram and a few gauges, under envoyproxy/ratelimit's
// names, rendered for Prometheus (Render()) and read by the statsd sink (Counters()).
//
// Per-rule counters are kept per stats key ("domain.key_value...", RuleMatch::stats_key) and
// counted as the reference counts them (src/server/rls/rls_evaluate.h). Their statsd names are the
// reference's, `ratelimit.service.rate_limit.<stats key>.<stat>` with the key sanitized as the
// reference sanitizes it (':' and '|' to '_', the dots of IPv4 addresses to '_'); in Prometheus
// they are `ratelimit_service_rate_limit_<stat>_total{domain="...",key="..."}`, `key` being the
// stats key without its domain.
//
// Bounds (request values reach the labels, so they are attacker-controlled):
// - A label value (the domain, the key) longer than `max_label_bytes` is cut to a prefix, ended on
//   a UTF-8 character boundary, followed by "~" and the 16 hex digits of the FNV-1a 64-bit hash of
//   the whole value; the result is at most `max_label_bytes` long. Distinct long values stay
//   distinct series (up to the hash), and the same value always maps to the same series.
// - Series are bounded in number (`max_series`) and in bytes (`max_series_bytes`, SeriesBytes()).
//   Beyond either bound, a label set without a series of its own is counted in its domain's
//   `key="_overflow"` series; at most `max_overflow_series` of those exist, and beyond them it is
//   counted in `{domain="_overflow",key="_overflow"}`. Every update folded this way is counted
//   (`sluice_metrics_series_folded_total`). Unknown domains are bounded the same way.
//
// Metrics is one of the process's observers (src/server/observe/process_observer.h): each
// decision, quota usage report and config load becomes the counter updates named below. The
// gauges that follow the counters on the page are read from their rooms at each Render()
// (SetGauges(), src/server/observe/gauge_source.h); Metrics knows none of those rooms.
//
// Recording never waits on a scrape: each series holds its own atomic counters and is never
// removed, the maps are locked only to find or add a series, and Render() and Counters() copy the
// series pointers under that lock, then read and format without it.
//
// Example:
//   Metrics metrics({.max_series = 1000});
//   metrics.AddRuleStats("edge", "edge.remote_address", RuleStats{.total_hits = 1});
//   std::string text = metrics.Render();
//
// Thread safety: thread-safe.
#ifndef SLUICE_SERVER_STATS_METRICS_H_
#define SLUICE_SERVER_STATS_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

#include "src/server/observe/gauge_source.h"
#include "src/server/observe/process_observer.h"
#include "src/server/rls/rule_stats.h"
#include "src/util/mutex.h"

namespace sluice::server {

struct MetricsOptions {
  // Most per-rule series (and, separately, unknown domains) kept; further label sets are folded
  // into an overflow series. Default: 10000.
  size_t max_series = 10'000;
  // Most bytes the per-rule and unknown-domain series take together, as SeriesBytes() counts
  // them; further label sets are folded into an overflow series. Default: 4 MiB.
  size_t max_series_bytes = size_t{4} << 20;
  // Longest label value kept whole; longer ones become a prefix, "~" and a hash. At least 32.
  // Default: 128.
  size_t max_label_bytes = 128;
  // Most per-domain overflow series; beyond them one global overflow series. Default: 100.
  size_t max_overflow_series = 100;
};

// BoundLabelValue()
//
// Returns `value` when it is at most `max_bytes` long (max_bytes >= 32), else its first bytes (cut
// back to a UTF-8 character boundary), "~" and 16 lowercase hex digits of its FNV-1a 64-bit hash,
// at most `max_bytes` in all.
std::string BoundLabelValue(absl::string_view value, size_t max_bytes);

// SanitizeStatName()
//
// Returns `name` as the reference sanitizes stat names: ':' and '|' become '_', and so do the dots
// of every IPv4-looking address (\d{1,3}(\.\d{1,3}){3}).
std::string SanitizeStatName(absl::string_view name);

class Metrics final : public ProcessObserver {
 public:
  explicit Metrics(MetricsOptions options = {});

  // ProcessObserver: a malformed request is CountServiceError(); an unknown domain
  // CountDomainNotFound(); a store error CountStoreError() and its latency; a decision its
  // AddRuleStats(), CountGlobalShadowMode(), CountLocalCacheHits(), CountFallbackDecisions() and
  // its latency; a quota usage report AddRuleStats() of the requests its client allowed and
  // denied, as decisions count them (no latency: nothing was decided here); a config load
  // CountConfigLoad().
  void OnInvalidRequest() override { CountServiceError(); }
  void OnUnknownDomain(std::string_view domain, uint64_t descriptors) override;
  void OnStoreError(std::string_view domain, std::chrono::microseconds latency) override;
  void OnDecision(const RlsDecisionReport& report) override;
  void OnQuotaUsage(const QuotaUsageReport& usage) override;
  void OnConfigLoad(const ConfigLoadReport& load) override { CountConfigLoad(load.ok); }

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
  // The families that follow the counters and sluice_build_info on the page, in their order:
  // each room's gauges, read on every Render() outside the series lock, so a slow source delays
  // only the scrape. `gauges` replaces the default, SeriesGauges() alone, so it holds
  // SeriesGauges() where they belong; nullptr restores the default. REQUIRES: `gauges` outlives
  // its use (set nullptr before it goes).
  void SetGauges(const GaugeSource* gauges);
  // The metrics' own gauges: sluice_metrics_series_bytes and sluice_metrics_series_folded_total.
  const GaugeSource& SeriesGauges() const { return series_gauges_; }

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

  // Metrics::SeriesBytes()
  //
  // Returns the bytes the per-rule and unknown-domain series take, as counted against
  // max_series_bytes: per series, its fixed size plus a map slot (kSeriesOverheadBytes) and the
  // heap copies of its strings (label values, statsd name, map key) as glibc's malloc sizes them.
  // Overflow series are counted too; the two global ones from the start, so the bound always holds.
  size_t SeriesBytes() const { return series_bytes_.load(std::memory_order_relaxed); }
  static constexpr size_t kSeriesOverheadBytes = 192;

  // Metrics::SetRenderHookForTest()
  //
  // `hook` runs in every later Render() once the series are snapshotted and the first metric
  // family is formatted, with no lock held: a test blocks it there to show that recording goes on.
  void SetRenderHookForTest(std::function<void()> hook);

 private:
  // SeriesGauges(): the bounds of the series below.
  class SeriesGaugeSource final : public GaugeSource {
   public:
    explicit SeriesGaugeSource(const Metrics& metrics) : metrics_(metrics) {}
    void AppendPrometheus(std::string& out) const override;

   private:
    const Metrics& metrics_;
  };

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
    std::atomic<uint64_t> total_negative_hits{0};
  };
  struct DomainCounter {
    std::string domain;
    std::atomic<uint64_t> descriptors{0};
  };
  // Upper bounds of the latency buckets, in microseconds.
  static constexpr std::array<int64_t, 12> kLatencyBucketsUs = {
      50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000};

  // The value of the `metric`-th per-rule counter (the order of Render()'s families).
  static uint64_t RuleValue(const RuleCounters& c, size_t metric);
  RuleCounters& CountersFor(absl::string_view domain, absl::string_view stats_key);
  // Adds a series and counts its bytes, unless they are `counted` already.
  RuleCounters& AddSeriesLocked(absl::string_view map_key, std::string domain, std::string key,
                                bool counted = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a new series of `bytes` fits the bounds, given `count` series of its kind.
  bool FitsLocked(size_t count, size_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MetricsOptions options_;
  mutable internal::Mutex mu_;
  // Node-stable values, never removed: counters are bumped and read outside the lock.
  absl::flat_hash_map<std::string, std::unique_ptr<RuleCounters>> rules_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<DomainCounter>> domains_not_found_
      ABSL_GUARDED_BY(mu_);
  size_t overflow_series_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<void()> render_hook_ ABSL_GUARDED_BY(mu_);
  const SeriesGaugeSource series_gauges_{*this};
  // Taken only to read or replace the gauges: never while `mu_` is held.
  mutable internal::Mutex source_mu_;
  const GaugeSource* gauges_ ABSL_GUARDED_BY(source_mu_) = &series_gauges_;
  std::atomic<size_t> series_bytes_{0};
  std::atomic<uint64_t> series_folded_{0};
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

#endif  // SLUICE_SERVER_STATS_METRICS_H_
