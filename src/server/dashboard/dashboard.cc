#include "src/server/dashboard/dashboard.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sluice/key.h"

#include "src/server/dashboard/dashboard_internal.h"

namespace sluice::server {

using dashboard_internal::DomainSeries;
using dashboard_internal::LatencyBucket;
using dashboard_internal::Second;
using dashboard_internal::Window;

Dashboard::Dashboard(Clock& clock, DashboardOptions options) : clock_(clock), options_(options) {
  for (size_t i = 0; i < std::max<size_t>(options_.shards, 1); ++i) {
    shards_.push_back(std::make_unique<Shard>(options_));
  }
}

Dashboard::~Dashboard() = default;

Dashboard::Shard& Dashboard::ShardForThisThread() const {
  // Threads take shards in turn as they first report, so that a few I/O threads never share one.
  static std::atomic<size_t> next{0};
  thread_local const size_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return *shards_[mine % shards_.size()];
}

int64_t Dashboard::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.EpochNow()).count();
}

void Dashboard::OnInvalidRequest() {
  Shard& s = ShardForThisThread();
  internal::MutexLock lock(&s.mu);
  ++s.invalid;
}

void Dashboard::OnUnknownDomain(std::string_view /*domain*/, uint64_t /*descriptors*/) {
  // Counted as a decision by OnDecision() or OnStoreError(), which follow.
}

void Dashboard::OnStoreError(std::string_view domain, std::chrono::microseconds latency) {
  const int64_t now_ms = NowMs();
  Shard& s = ShardForThisThread();
  internal::MutexLock lock(&s.mu);
  ++s.At(s.Series(domain, options_), now_ms / 1000).errors;
  ++s.Current(now_ms / 1000 / options_.window.count()).latency[LatencyBucket(latency)];
}

void Dashboard::OnDecision(const RlsDecisionReport& report) {
  const int64_t now_ms = NowMs();
  const bool over =
      report.response != nullptr && report.response->overall_code == RlsCode::kOverLimit;
  Shard& s = ShardForThisThread();
  internal::MutexLock lock(&s.mu);
  Second& second = s.At(s.Series(report.domain, options_), now_ms / 1000);
  ++second.decisions;
  second.over_limit += over ? 1 : 0;
  const int64_t window_id = now_ms / 1000 / options_.window.count();
  Window& w = s.Current(window_id);
  ++w.latency[LatencyBucket(report.latency)];
  bool caller_counted = !s.Sample(options_.caller_sample_every);
  for (const RuleStatsDelta& d : report.limits) {
    if (d.store_key.empty()) continue;
    if (!caller_counted) {
      // The caller is the descriptor (the key's tag), not the limit: one count per request.
      const KeyParts parts = SplitKey(d.store_key);
      const std::string_view descriptor =
          d.store_key.substr(0, parts.tagged ? parts.tag.size() + 2 : d.store_key.size());
      w.callers->Add(descriptor, std::max<uint32_t>(options_.caller_sample_every, 1), now_ms, {});
      caller_counted = true;
    }
    if (d.stats.over_limit == 0) continue;
    const SpaceSaving::Tag tag{
        .requests_per_unit = d.limit != nullptr ? d.limit->requests_per_unit : 0,
        .unit = static_cast<uint8_t>(d.limit != nullptr ? d.limit->unit : RateLimitUnit::kSecond)};
    // A descriptor still over from the previous window keeps its "since".
    int64_t since = 0;
    const Window& prev = s.Previous();
    if (prev.id == window_id - 1) since = prev.denied->SinceOf(d.store_key);
    w.denied->Add(d.store_key, 1, now_ms, tag, since);
  }
}

namespace {

// The limit as a rule would spell it: `limit` per `unit` when the unit is one of the rule units,
// else per second (rounded down, at least 1 where the limit is not 0).
SpaceSaving::Tag QuotaTag(uint64_t limit, std::chrono::seconds unit) {
  const auto clamp = [](uint64_t n) {
    return static_cast<uint32_t>(std::min<uint64_t>(n, std::numeric_limits<uint32_t>::max()));
  };
  constexpr std::array<std::pair<int64_t, RateLimitUnit>, 4> kUnits = {
      {{1, RateLimitUnit::kSecond},
       {60, RateLimitUnit::kMinute},
       {3600, RateLimitUnit::kHour},
       {86400, RateLimitUnit::kDay}}};
  for (const auto& [seconds, u] : kUnits) {
    if (unit.count() == seconds) {
      return {.requests_per_unit = clamp(limit), .unit = static_cast<uint8_t>(u)};
    }
  }
  const uint64_t per_second = limit / static_cast<uint64_t>(std::max<int64_t>(unit.count(), 1));
  return {.requests_per_unit = limit == 0 ? 0 : clamp(std::max<uint64_t>(per_second, 1)),
          .unit = static_cast<uint8_t>(RateLimitUnit::kSecond)};
}

}  // namespace

void Dashboard::OnQuotaUsage(const QuotaUsageReport& usage) {
  const std::string_view domain = usage.domain;
  // A store key's shape, "{domain:key:value...}rlqs", so that the feed names it as it names an
  // RLS descriptor.
  std::vector<std::string_view> components = {domain};
  for (const auto& [k, v] : usage.entries) {
    components.push_back(k);
    components.push_back(v);
  }
  const std::string key = TaggedKey(JoinKeyComponents(components), "rlqs");
  const int64_t now_ms = NowMs();
  const uint64_t denied = usage.denied;
  const uint64_t requests = usage.allowed + denied;
  Shard& s = ShardForThisThread();
  internal::MutexLock lock(&s.mu);
  Second& second = s.At(s.Series(domain, options_), now_ms / 1000);
  second.decisions += requests;
  second.over_limit += denied;
  const int64_t window_id = now_ms / 1000 / options_.window.count();
  Window& w = s.Current(window_id);
  if (requests > 0) w.callers->Add(key, requests, now_ms, {});
  if (denied == 0) return;
  int64_t since = 0;
  const Window& prev = s.Previous();
  if (prev.id == window_id - 1) since = prev.denied->SinceOf(key);
  w.denied->Add(key, denied, now_ms, QuotaTag(usage.limit, usage.unit), since);
}

void Dashboard::OnConfigLoad(const ConfigLoadReport& load) {
  internal::MutexLock lock(&mu_);
  if (load.ok) {
    ++config_.loads;
    config_.origin = std::string(load.origin);
  } else {
    ++config_.load_errors;
    config_.last_error = std::string(load.error);
    config_.last_error_ms = NowMs();
  }
}

void Dashboard::SetStoreStateSource(const StoreStateSource* source) {
  internal::MutexLock lock(&mu_);
  store_source_ = source;
}

size_t Dashboard::MemoryBytes() const {
  size_t bytes = sizeof(*this);
  for (const auto& shard : shards_) {
    internal::MutexLock lock(&shard->mu);
    bytes += sizeof(Shard);
    for (const Window& w : shard->windows) {
      bytes += w.denied->MemoryBytes() + w.callers->MemoryBytes();
    }
    for (const DomainSeries& d : shard->domains) {
      bytes += sizeof(DomainSeries) + d.name.capacity() + d.ring.capacity() * sizeof(Second);
    }
  }
  return bytes;
}

}  // namespace sluice::server
