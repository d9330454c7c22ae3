#include "src/server/metrics.h"

#include <array>
#include <atomic>
#include <cctype>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

#include "sluice/version.h"

#include "src/util/strings.h"

namespace sluice::server {
namespace {

constexpr absl::string_view kOverflowKey = "_overflow";
constexpr absl::string_view kRulePrefix = "ratelimit.service.rate_limit.";

// Escapes a Prometheus label value: backslash, double quote and newline.
std::string EscapeLabel(absl::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

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

Metrics::Metrics(MetricsOptions options) : options_(options) {}

Metrics::RuleCounters& Metrics::CountersFor(absl::string_view domain, absl::string_view stats_key) {
  internal::MutexLock lock(&mu_);
  auto it = rules_.find(stats_key);
  if (it != rules_.end()) return *it->second;
  std::string full(stats_key);
  if (rules_.size() >= options_.max_series) {
    full = absl::StrCat(domain, ".", kOverflowKey);
    it = rules_.find(full);
    if (it != rules_.end()) return *it->second;
  }
  auto counters = std::make_unique<RuleCounters>();
  counters->domain = std::string(domain);
  const absl::string_view rest = absl::string_view(full);
  counters->key =
      std::string(rest.size() > domain.size() && rest.substr(0, domain.size()) == domain &&
                          rest[domain.size()] == '.'
                      ? rest.substr(domain.size() + 1)
                      : rest);
  counters->statsd_prefix = absl::StrCat(kRulePrefix, SanitizeStatName(full), ".");
  auto [inserted, ok] = rules_.emplace(std::move(full), std::move(counters));
  (void)ok;
  return *inserted->second;
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
}

void Metrics::CountDomainNotFound(absl::string_view domain, uint64_t descriptors) {
  internal::MutexLock lock(&mu_);
  auto it = domains_not_found_.find(domain);
  if (it == domains_not_found_.end()) {
    const absl::string_view name =
        domains_not_found_.size() >= options_.max_series ? kOverflowKey : domain;
    it = domains_not_found_.try_emplace(std::string(name), 0).first;
  }
  it->second += descriptors;
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

void Metrics::SetStoreStateSource(absl::AnyInvocable<StoreState() const> source) {
  internal::MutexLock lock(&mu_);
  store_state_ = std::move(source);
}

namespace {

struct RuleMetric {
  absl::string_view stat;
  absl::string_view help;
};
constexpr std::array<RuleMetric, 6> kRuleMetrics = {{
    {"total_hits", "Hits seen per rate limit."},
    {"within_limit", "Hits within the limit (near-limit hits included)."},
    {"near_limit", "Hits within the limit but above the near-limit ratio of it."},
    {"over_limit", "Hits over the limit (shadow-mode ones included)."},
    {"over_limit_with_local_cache", "Hits the over-limit cache denied without a store call."},
    {"shadow_mode", "Hits over the limit of shadow-mode rules (not denied)."},
}};

}  // namespace

std::string Metrics::Render() const {
  std::string out;
  auto header = [&out](absl::string_view name, absl::string_view type, absl::string_view help) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  };
  auto counter = [&](absl::string_view name, absl::string_view help, uint64_t value) {
    header(name, "counter", help);
    absl::StrAppend(&out, name, " ", value, "\n");
  };
  StoreState state;
  {
    internal::MutexLock lock(&mu_);
    for (size_t m = 0; m < kRuleMetrics.size(); ++m) {
      const std::string name =
          absl::StrCat("ratelimit_service_rate_limit_", kRuleMetrics[m].stat, "_total");
      header(name, "counter", kRuleMetrics[m].help);
      for (const auto& [full, c] : rules_) {
        const std::array<const std::atomic<uint64_t>*, kRuleMetrics.size()> values = {
            &c->total_hits,
            &c->within_limit,
            &c->near_limit,
            &c->over_limit,
            &c->over_limit_with_local_cache,
            &c->shadow_mode};
        absl::StrAppend(&out, name, "{domain=\"", EscapeLabel(c->domain), "\",key=\"",
                        EscapeLabel(c->key), "\"} ", values[m]->load(std::memory_order_relaxed),
                        "\n");
      }
    }
    header("ratelimit_service_rate_limit_domain_not_found_total", "counter",
           "Descriptors of requests naming a domain no config defines.");
    for (const auto& [domain, n] : domains_not_found_) {
      absl::StrAppend(&out, "ratelimit_service_rate_limit_domain_not_found_total{domain=\"",
                      EscapeLabel(domain), "\"} ", n, "\n");
    }
    if (store_state_) state = store_state_();
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
  absl::StrAppend(&out, "sluice_build_info{version=\"",
                  EscapeLabel(internal::AbslView(kBuildInfo.version)), "\",compiler=\"",
                  EscapeLabel(internal::AbslView(kBuildInfo.compiler)), "\",build_type=\"",
                  EscapeLabel(internal::AbslView(kBuildInfo.build_type)), "\"} 1\n");
  if (state.redis_connected.has_value()) {
    header("sluice_redis_connected", "gauge", "1 when a Redis connection is ready, else 0.");
    absl::StrAppend(&out, "sluice_redis_connected ", *state.redis_connected ? 1 : 0, "\n");
  }
  header("sluice_store_breaker_open", "gauge",
         "1 while the failure policy's circuit breaker skips the store, else 0.");
  absl::StrAppend(&out, "sluice_store_breaker_open ", state.breaker_open ? 1 : 0, "\n");
  counter("sluice_store_breaker_opens_total", "Times the circuit breaker opened.",
          state.breaker_opens);
  return out;
}

std::vector<Metrics::Counter> Metrics::Counters() const {
  std::vector<Counter> out;
  {
    internal::MutexLock lock(&mu_);
    out.reserve(rules_.size() * kRuleMetrics.size() + domains_not_found_.size() + 8);
    for (const auto& [full, c] : rules_) {
      const std::array<const std::atomic<uint64_t>*, kRuleMetrics.size()> values = {
          &c->total_hits,
          &c->within_limit,
          &c->near_limit,
          &c->over_limit,
          &c->over_limit_with_local_cache,
          &c->shadow_mode};
      for (size_t m = 0; m < kRuleMetrics.size(); ++m) {
        out.push_back({absl::StrCat(c->statsd_prefix, kRuleMetrics[m].stat),
                       values[m]->load(std::memory_order_relaxed)});
      }
    }
    for (const auto& [domain, n] : domains_not_found_) {
      out.push_back({absl::StrCat(kRulePrefix, SanitizeStatName(domain), ".domain_not_found"), n});
    }
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
