#include "src/server/stats/metrics.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

#include "sluice/version.h"

#include "src/server/observe/prometheus_text.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

constexpr absl::string_view kOverflowKey = "_overflow";
constexpr absl::string_view kRulePrefix = "ratelimit.service.rate_limit.";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The bytes glibc's malloc gives a std::string of `size` bytes: none within the inline buffer
// (15 bytes), else size + 1 for the terminator + 8 for the chunk header, rounded up to 16, at
// least 32.
size_t StringHeapBytes(size_t size) {
  if (size <= 15) return 0;
  const size_t chunk = (size + 1 + 8 + 15) & ~size_t{15};
  return chunk < 32 ? 32 : chunk;
}

// The bytes a per-rule series counts: its fixed part, and the heap copies of its map key, its two
// labels and its statsd prefix (kRulePrefix, the sanitized map key, "."; sanitizing keeps sizes).
size_t RuleSeriesBytes(absl::string_view map_key, absl::string_view domain, absl::string_view key) {
  return Metrics::kSeriesOverheadBytes + StringHeapBytes(map_key.size()) +
         StringHeapBytes(domain.size()) + StringHeapBytes(key.size()) +
         StringHeapBytes(kRulePrefix.size() + map_key.size() + 1);
}

// The bytes an unknown domain's series counts: its fixed part, its map key and its label.
size_t DomainSeriesBytes(absl::string_view domain) {
  return Metrics::kSeriesOverheadBytes + 2 * StringHeapBytes(domain.size());
}

// The stats key without its leading "`domain`.", or all of it when it does not start so.
absl::string_view KeyWithoutDomain(absl::string_view domain, absl::string_view stats_key) {
  if (stats_key.size() > domain.size() && stats_key.substr(0, domain.size()) == domain &&
      stats_key[domain.size()] == '.') {
    return stats_key.substr(domain.size() + 1);
  }
  return stats_key;
}

// Returns the length of the IPv4-looking run (\d{1,3}(\.\d{1,3}){3}) at s[i], or 0. Like the
// reference's unanchored regular expression, it matches inside longer digit runs too: the leftmost
// match wins, and the first group takes as many digits (up to 3) as still let the rest match.
size_t Ipv4RunAt(absl::string_view s, size_t i) {
  for (size_t first = 3; first >= 1; --first) {
    size_t p = i;
    size_t n = 0;
    while (n < first && p < s.size() && IsDigit(s[p])) ++p, ++n;
    if (n != first) continue;
    bool ok = true;
    for (int group = 0; group < 3 && ok; ++group) {
      if (p >= s.size() || s[p] != '.') {
        ok = false;
        break;
      }
      ++p;
      size_t digits = 0;
      while (digits < 3 && p < s.size() && IsDigit(s[p])) ++p, ++digits;
      ok = digits > 0;
    }
    if (ok) return p - i;
  }
  return 0;
}

}  // namespace

std::string BoundLabelValue(absl::string_view value, size_t max_bytes) {
  constexpr size_t kHashSuffix = 17;  // "~" and 16 hex digits.
  max_bytes = std::max<size_t>(max_bytes, 32);
  if (value.size() <= max_bytes) return std::string(value);
  // FNV-1a rather than absl::Hash: the same value must name the same series after a restart.
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : value) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  // value[cut] is the first byte left out; while it continues a UTF-8 sequence (10xxxxxx), the
  // character it belongs to would be split, so leave that character out too.
  size_t cut = max_bytes - kHashSuffix;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(value.substr(0, cut), "~", absl::Hex(hash, absl::kZeroPad16));
}

std::string SanitizeStatName(absl::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == ':' || c == '|') c = '_';
  }
  for (size_t i = 0; i < out.size();) {
    const size_t run = IsDigit(out[i]) ? Ipv4RunAt(out, i) : 0;
    if (run == 0) {
      ++i;
      continue;
    }
    for (size_t j = i; j < i + run; ++j) {
      if (out[j] == '.') out[j] = '_';
    }
    i += run;
  }
  return out;
}

// The two global overflow series (per-rule and unknown domain) must always find room, so their
// bytes are counted from the start, before they exist.
Metrics::Metrics(MetricsOptions options)
    : options_(options),
      series_bytes_(RuleSeriesBytes(absl::StrCat(kOverflowKey, ".", kOverflowKey), kOverflowKey,
                                    kOverflowKey) +
                    DomainSeriesBytes(kOverflowKey)) {}

bool Metrics::FitsLocked(size_t count, size_t bytes) const {
  return count < options_.max_series &&
         series_bytes_.load(std::memory_order_relaxed) + bytes <= options_.max_series_bytes;
}

Metrics::RuleCounters& Metrics::AddSeriesLocked(absl::string_view map_key, std::string domain,
                                                std::string key, bool counted) {
  auto counters = std::make_unique<RuleCounters>();
  counters->domain = std::move(domain);
  counters->key = std::move(key);
  counters->statsd_prefix = absl::StrCat(kRulePrefix, SanitizeStatName(map_key), ".");
  if (!counted) {
    series_bytes_.fetch_add(RuleSeriesBytes(map_key, counters->domain, counters->key),
                            std::memory_order_relaxed);
  }
  RuleCounters& added = *counters;
  rules_.try_emplace(std::string(map_key), std::move(counters));
  return added;
}

Metrics::RuleCounters& Metrics::CountersFor(absl::string_view domain, absl::string_view stats_key) {
  const absl::string_view rest = KeyWithoutDomain(domain, stats_key);
  // A long label makes the map key the bounded stats key, so the map holds bounded strings only.
  std::string bounded;
  absl::string_view map_key = stats_key;
  if (domain.size() > options_.max_label_bytes || rest.size() > options_.max_label_bytes) {
    bounded = absl::StrCat(BoundLabelValue(domain, options_.max_label_bytes), ".",
                           BoundLabelValue(rest, options_.max_label_bytes));
    map_key = bounded;
  }
  internal::MutexLock lock(&mu_);
  auto it = rules_.find(map_key);
  if (it != rules_.end()) return *it->second;
  std::string domain_label = BoundLabelValue(domain, options_.max_label_bytes);
  std::string key_label = BoundLabelValue(rest, options_.max_label_bytes);
  if (FitsLocked(rules_.size() - overflow_series_,
                 RuleSeriesBytes(map_key, domain_label, key_label))) {
    return AddSeriesLocked(map_key, std::move(domain_label), std::move(key_label));
  }
  // Over a bound: the domain's overflow series, while there are few of them (a request's domain
  // names one with a descriptor's own limit, so domains are attacker-controlled too), else the
  // global one.
  series_folded_.fetch_add(1, std::memory_order_relaxed);
  std::string overflow_key = absl::StrCat(domain_label, ".", kOverflowKey);
  it = rules_.find(overflow_key);
  if (it != rules_.end()) return *it->second;
  if (overflow_series_ < options_.max_overflow_series &&
      FitsLocked(0, RuleSeriesBytes(overflow_key, domain_label, kOverflowKey))) {
    ++overflow_series_;
    return AddSeriesLocked(overflow_key, std::move(domain_label), std::string(kOverflowKey));
  }
  overflow_key = absl::StrCat(kOverflowKey, ".", kOverflowKey);
  it = rules_.find(overflow_key);
  if (it != rules_.end()) return *it->second;
  ++overflow_series_;
  return AddSeriesLocked(overflow_key, std::string(kOverflowKey), std::string(kOverflowKey),
                         /*counted=*/true);
}

void Metrics::AddRuleStats(absl::string_view domain, absl::string_view stats_key,
                           const RuleStats& s) {
  RuleCounters& c = CountersFor(domain, stats_key);
  c.total_hits.fetch_add(s.total_hits, std::memory_order_relaxed);
  c.within_limit.fetch_add(s.within_limit, std::memory_order_relaxed);
  c.near_limit.fetch_add(s.near_limit, std::memory_order_relaxed);
  c.over_limit.fetch_add(s.over_limit, std::memory_order_relaxed);
  c.over_limit_with_local_cache.fetch_add(s.over_limit_with_local_cache, std::memory_order_relaxed);
  c.shadow_mode.fetch_add(s.shadow_mode, std::memory_order_relaxed);
  c.total_negative_hits.fetch_add(s.total_negative_hits, std::memory_order_relaxed);
}

void Metrics::CountDomainNotFound(absl::string_view domain, uint64_t descriptors) {
  std::string bounded;
  absl::string_view name = domain;
  if (domain.size() > options_.max_label_bytes) {
    bounded = BoundLabelValue(domain, options_.max_label_bytes);
    name = bounded;
  }
  DomainCounter* counter = nullptr;
  {
    internal::MutexLock lock(&mu_);
    auto it = domains_not_found_.find(name);
    if (it == domains_not_found_.end()) {
      const bool has_overflow = domains_not_found_.contains(kOverflowKey);
      if (!FitsLocked(domains_not_found_.size() - (has_overflow ? 1 : 0),
                      DomainSeriesBytes(name))) {
        series_folded_.fetch_add(1, std::memory_order_relaxed);
        name = kOverflowKey;
        it = domains_not_found_.find(name);
      }
    }
    if (it == domains_not_found_.end()) {
      auto added = std::make_unique<DomainCounter>();
      added->domain = std::string(name);
      // The overflow series was counted at construction.
      if (name != kOverflowKey) {
        series_bytes_.fetch_add(DomainSeriesBytes(name), std::memory_order_relaxed);
      }
      it = domains_not_found_.emplace(std::string(name), std::move(added)).first;
    }
    counter = it->second.get();
  }
  counter->descriptors.fetch_add(descriptors, std::memory_order_relaxed);
}

void Metrics::OnUnknownDomain(std::string_view domain, uint64_t descriptors) {
  CountDomainNotFound(internal::AbslView(domain), descriptors);
}

void Metrics::OnStoreError(std::string_view /*domain*/, std::chrono::microseconds latency) {
  CountStoreError();
  ObserveDecisionLatency(latency);
}

void Metrics::OnDecision(const RlsDecisionReport& report) {
  for (const RuleStatsDelta& d : report.limits) {
    AddRuleStats(internal::AbslView(report.domain), internal::AbslView(d.stats_key), d.stats);
  }
  if (report.global_shadow_applied) CountGlobalShadowMode();
  CountLocalCacheHits(report.local_cache_hits);
  CountFallbackDecisions(report.fallback_decisions);
  ObserveDecisionLatency(report.latency);
}

void Metrics::OnQuotaUsage(const QuotaUsageReport& u) {
  AddRuleStats(
      internal::AbslView(u.domain), internal::AbslView(u.stats_key),
      RuleStats{
          .total_hits = u.allowed + u.denied, .within_limit = u.allowed, .over_limit = u.denied});
}

void Metrics::CountConfigLoad(bool success) {
  (success ? config_load_success_ : config_load_error_).fetch_add(1, std::memory_order_relaxed);
}

void Metrics::ObserveDecisionLatency(std::chrono::microseconds latency) {
  const int64_t us = latency.count();
  size_t bucket = 0;
  while (bucket < kLatencyBucketsUs.size() && us > kLatencyBucketsUs[bucket]) ++bucket;
  latency_buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  latency_sum_us_.fetch_add(static_cast<uint64_t>(us < 0 ? 0 : us), std::memory_order_relaxed);
  latency_count_.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::SetGauges(const GaugeSource* gauges) {
  internal::MutexLock lock(&source_mu_);
  gauges_ = gauges != nullptr ? gauges : &series_gauges_;
}

void Metrics::SeriesGaugeSource::AppendPrometheus(std::string& out) const {
  AppendGauge(out, "sluice_metrics_series_bytes",
              "Bytes the per-rule and unknown-domain series take (bounded).",
              metrics_.SeriesBytes());
  AppendCounter(out, "sluice_metrics_series_folded_total",
                "Updates counted in an _overflow series because the series bounds were reached.",
                metrics_.series_folded_.load(std::memory_order_relaxed));
}

void Metrics::SetRenderHookForTest(std::function<void()> hook) {
  internal::MutexLock lock(&mu_);
  render_hook_ = std::move(hook);
}

namespace {

struct RuleMetric {
  absl::string_view stat;
  absl::string_view help;
};
constexpr std::array<RuleMetric, 7> kRuleMetrics = {{
    {"total_hits", "Hits seen per rate limit."},
    {"within_limit", "Hits within the limit (near-limit hits included)."},
    {"near_limit", "Hits within the limit but above the near-limit ratio of it."},
    {"over_limit", "Hits over the limit (shadow-mode ones included)."},
    {"over_limit_with_local_cache", "Hits the over-limit cache denied without a store call."},
    {"shadow_mode", "Hits over the limit of shadow-mode rules (not denied)."},
    {"total_negative_hits", "Hits given back by refunds (is_negative_hits) per rate limit."},
}};

}  // namespace

uint64_t Metrics::RuleValue(const RuleCounters& c, size_t metric) {
  const std::array<const std::atomic<uint64_t>*, kRuleMetrics.size()> values = {
      &c.total_hits,
      &c.within_limit,
      &c.near_limit,
      &c.over_limit,
      &c.over_limit_with_local_cache,
      &c.shadow_mode,
      &c.total_negative_hits};
  return values[metric]->load(std::memory_order_relaxed);
}

std::string Metrics::Render() const {
  std::string out;
  auto header = [&out](absl::string_view name, absl::string_view type, absl::string_view help) {
    AppendFamilyHeader(out, internal::StdView(name), internal::StdView(type),
                       internal::StdView(help));
  };
  auto counter = [&out](absl::string_view name, absl::string_view help, uint64_t value) {
    AppendCounter(out, internal::StdView(name), internal::StdView(help), value);
  };
  // The lock is held only to copy the series pointers: series are never removed and their labels
  // never change, so they are read and formatted without it while decisions go on counting.
  std::vector<const RuleCounters*> rules;
  std::vector<const DomainCounter*> domains;
  std::function<void()> hook;
  {
    internal::MutexLock lock(&mu_);
    rules.reserve(rules_.size());
    for (const auto& [full, c] : rules_) rules.push_back(c.get());
    domains.reserve(domains_not_found_.size());
    for (const auto& [name, c] : domains_not_found_) domains.push_back(c.get());
    hook = render_hook_;
  }
  for (size_t m = 0; m < kRuleMetrics.size(); ++m) {
    const std::string name =
        absl::StrCat("ratelimit_service_rate_limit_", kRuleMetrics[m].stat, "_total");
    header(name, "counter", kRuleMetrics[m].help);
    for (const RuleCounters* c : rules) {
      absl::StrAppend(&out, name, "{domain=\"", EscapeLabelValue(c->domain), "\",key=\"",
                      EscapeLabelValue(c->key), "\"} ", RuleValue(*c, m), "\n");
    }
    if (m == 0 && hook) hook();
  }
  header("ratelimit_service_rate_limit_domain_not_found_total", "counter",
         "Descriptors of requests naming a domain no config defines.");
  for (const DomainCounter* c : domains) {
    absl::StrAppend(&out, "ratelimit_service_rate_limit_domain_not_found_total{domain=\"",
                    EscapeLabelValue(c->domain), "\"} ",
                    c->descriptors.load(std::memory_order_relaxed), "\n");
  }
  // The rooms' gauges, read now (as the series were snapshotted) and appended last.
  std::string gauges;
  {
    internal::MutexLock lock(&source_mu_);
    gauges_->AppendPrometheus(gauges);
  }
  header("ratelimit_service_should_rate_limit_error_total", "counter",
         "Requests that failed: redis_error in the store, service_error malformed.");
  absl::StrAppend(&out,
                  "ratelimit_service_should_rate_limit_error_total{err_type=\"redis_error\"} ",
                  store_errors_.load(std::memory_order_relaxed), "\n",
                  "ratelimit_service_should_rate_limit_error_total{err_type=\"service_error\"} ",
                  service_errors_.load(std::memory_order_relaxed), "\n");
  counter("ratelimit_service_global_shadow_mode_total",
          "OVER_LIMIT answers global shadow mode turned OK.",
          global_shadow_mode_.load(std::memory_order_relaxed));
  counter("ratelimit_service_config_load_success_total", "Successful config loads.",
          config_load_success_.load(std::memory_order_relaxed));
  counter("ratelimit_service_config_load_error_total",
          "Rejected config loads (the old config stays).",
          config_load_error_.load(std::memory_order_relaxed));
  counter("sluice_fallback_decisions_total", "Decisions made by the store failure policy.",
          fallback_decisions_.load(std::memory_order_relaxed));
  counter("sluice_over_limit_local_cache_hits_total",
          "Limits the over-limit cache answered without a store call.",
          local_cache_hits_.load(std::memory_order_relaxed));

  header("ratelimit_service_total_requests_total", "counter", "ShouldRateLimit calls answered.");
  absl::StrAppend(&out, "ratelimit_service_total_requests_total{grpc_method=\"ShouldRateLimit\"} ",
                  latency_count_.load(std::memory_order_relaxed), "\n");
  header("ratelimit_service_response_time_seconds", "histogram", "Time to decide one request.");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kLatencyBucketsUs.size(); ++i) {
    cumulative += latency_buckets_[i].load(std::memory_order_relaxed);
    absl::StrAppend(&out, "ratelimit_service_response_time_seconds_bucket{le=\"",
                    static_cast<double>(kLatencyBucketsUs[i]) / 1e6, "\"} ", cumulative, "\n");
  }
  cumulative += latency_buckets_[kLatencyBucketsUs.size()].load(std::memory_order_relaxed);
  absl::StrAppend(&out, "ratelimit_service_response_time_seconds_bucket{le=\"+Inf\"} ", cumulative,
                  "\n", "ratelimit_service_response_time_seconds_sum ",
                  static_cast<double>(latency_sum_us_.load(std::memory_order_relaxed)) / 1e6, "\n",
                  "ratelimit_service_response_time_seconds_count ",
                  latency_count_.load(std::memory_order_relaxed), "\n");

  header("sluice_build_info", "gauge", "Always 1; the labels say which build is running.");
  absl::StrAppend(&out, "sluice_build_info{version=\"", EscapeLabelValue(kBuildInfo.version),
                  "\",compiler=\"", EscapeLabelValue(kBuildInfo.compiler), "\",build_type=\"",
                  EscapeLabelValue(kBuildInfo.build_type), "\"} 1\n");
  out += gauges;
  return out;
}

std::vector<Metrics::Counter> Metrics::Counters() const {
  std::vector<const RuleCounters*> rules;
  std::vector<const DomainCounter*> domains;
  {
    internal::MutexLock lock(&mu_);
    rules.reserve(rules_.size());
    for (const auto& [full, c] : rules_) rules.push_back(c.get());
    domains.reserve(domains_not_found_.size());
    for (const auto& [name, c] : domains_not_found_) domains.push_back(c.get());
  }
  std::vector<Counter> out;
  out.reserve(rules.size() * kRuleMetrics.size() + domains.size() + 8);
  for (const RuleCounters* c : rules) {
    for (size_t m = 0; m < kRuleMetrics.size(); ++m) {
      out.push_back({absl::StrCat(c->statsd_prefix, kRuleMetrics[m].stat), RuleValue(*c, m)});
    }
  }
  for (const DomainCounter* c : domains) {
    out.push_back({absl::StrCat(kRulePrefix, SanitizeStatName(c->domain), ".domain_not_found"),
                   c->descriptors.load(std::memory_order_relaxed)});
  }
  auto add = [&out](absl::string_view name, const std::atomic<uint64_t>& v) {
    out.push_back({std::string(name), v.load(std::memory_order_relaxed)});
  };
  add("ratelimit.service.config_load_success", config_load_success_);
  add("ratelimit.service.config_load_error", config_load_error_);
  add("ratelimit.service.call.should_rate_limit.redis_error", store_errors_);
  add("ratelimit.service.call.should_rate_limit.service_error", service_errors_);
  add("ratelimit.service.global_shadow_mode", global_shadow_mode_);
  add("ratelimit_server.ShouldRateLimit.total_requests", latency_count_);
  return out;
}

}  // namespace sluice::server
