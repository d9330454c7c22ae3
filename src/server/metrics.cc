#include "src/server/metrics.h"

#include <array>
#include <atomic>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sluice::server {
namespace {

constexpr absl::string_view kOverflowRule = "_overflow";
// Separates domain and rule in the map key; never appears in a label value we emit unescaped.
constexpr char kSeparator = '\x1f';

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

}  // namespace

Metrics::Metrics(MetricsOptions options) : options_(options) {}

Metrics::RuleCounters& Metrics::CountersFor(absl::string_view domain, absl::string_view rule) {
  std::string key = absl::StrCat(domain, std::string(1, kSeparator), rule);
  internal::MutexLock lock(&mu_);
  auto it = rules_.find(key);
  if (it != rules_.end()) return *it->second;
  if (rules_.size() >= options_.max_series) {
    key = absl::StrCat(domain, std::string(1, kSeparator), kOverflowRule);
    it = rules_.find(key);
    if (it != rules_.end()) return *it->second;
  }
  auto [inserted, ok] = rules_.emplace(key, std::make_unique<RuleCounters>());
  (void)ok;
  return *inserted->second;
}

void Metrics::CountRule(absl::string_view domain, absl::string_view rule, RuleOutcome outcome,
                        uint64_t hits) {
  RuleCounters& c = CountersFor(domain, rule);
  c.total_hits.fetch_add(hits, std::memory_order_relaxed);
  switch (outcome) {
    case RuleOutcome::kWithinLimit:
      c.within_limit.fetch_add(hits, std::memory_order_relaxed);
      break;
    case RuleOutcome::kNearLimit:
      c.near_limit.fetch_add(hits, std::memory_order_relaxed);
      break;
    case RuleOutcome::kOverLimit:
      c.over_limit.fetch_add(hits, std::memory_order_relaxed);
      break;
    case RuleOutcome::kShadowMode:
      c.shadow_mode.fetch_add(hits, std::memory_order_relaxed);
      break;
  }
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

std::string Metrics::Render() const {
  std::string out;
  auto counter = [&out](absl::string_view name, absl::string_view help, uint64_t value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n", name, " ",
                    value, "\n");
  };
  {
    static constexpr std::array<std::pair<absl::string_view, absl::string_view>, 5> kRuleMetrics = {
        {
            {"sluice_rule_total_hits", "Hits seen per rule."},
            {"sluice_rule_within_limit", "Hits within the limit per rule."},
            {"sluice_rule_near_limit", "Hits within the limit but above 80% of it per rule."},
            {"sluice_rule_over_limit", "Hits over the limit per rule."},
            {"sluice_rule_shadow_mode", "Hits over the limit of shadow-mode rules (not denied)."},
        }};
    internal::MutexLock lock(&mu_);
    for (size_t m = 0; m < kRuleMetrics.size(); ++m) {
      absl::StrAppend(&out, "# HELP ", kRuleMetrics[m].first, " ", kRuleMetrics[m].second,
                      "\n# TYPE ", kRuleMetrics[m].first, " counter\n");
      for (const auto& [key, c] : rules_) {
        std::pair<absl::string_view, absl::string_view> parts =
            absl::StrSplit(key, absl::MaxSplits(kSeparator, 1));
        const std::array<const std::atomic<uint64_t>*, kRuleMetrics.size()> values = {
            &c->total_hits, &c->within_limit, &c->near_limit, &c->over_limit, &c->shadow_mode};
        absl::StrAppend(&out, kRuleMetrics[m].first, "{domain=\"", EscapeLabel(parts.first),
                        "\",rule=\"", EscapeLabel(parts.second), "\"} ",
                        values[m]->load(std::memory_order_relaxed), "\n");
      }
    }
  }
  counter("sluice_store_errors_total", "Store calls that failed (timeouts, outages, errors).",
          store_errors_.load(std::memory_order_relaxed));
  counter("sluice_fallback_decisions_total", "Decisions made by the failure policy.",
          fallback_decisions_.load(std::memory_order_relaxed));
  counter("sluice_over_limit_local_cache_hits_total",
          "Over-limit answers served from the local cache without a store call.",
          local_cache_hits_.load(std::memory_order_relaxed));
  counter("sluice_config_load_success_total", "Successful config loads.",
          config_load_success_.load(std::memory_order_relaxed));
  counter("sluice_config_load_error_total", "Rejected config loads (the old config stays).",
          config_load_error_.load(std::memory_order_relaxed));

  absl::StrAppend(&out,
                  "# HELP sluice_decision_latency_seconds Time to decide one request.\n"
                  "# TYPE sluice_decision_latency_seconds histogram\n");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kLatencyBucketsUs.size(); ++i) {
    cumulative += latency_buckets_[i].load(std::memory_order_relaxed);
    absl::StrAppend(&out, "sluice_decision_latency_seconds_bucket{le=\"",
                    static_cast<double>(kLatencyBucketsUs[i]) / 1e6, "\"} ", cumulative, "\n");
  }
  cumulative += latency_buckets_[kLatencyBucketsUs.size()].load(std::memory_order_relaxed);
  absl::StrAppend(&out, "sluice_decision_latency_seconds_bucket{le=\"+Inf\"} ", cumulative, "\n",
                  "sluice_decision_latency_seconds_sum ",
                  static_cast<double>(latency_sum_us_.load(std::memory_order_relaxed)) / 1e6, "\n",
                  "sluice_decision_latency_seconds_count ",
                  latency_count_.load(std::memory_order_relaxed), "\n");
  return out;
}

}  // namespace sluice::server
