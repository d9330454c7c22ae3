// Dashboard::FeedJson(): the shards merged into the feed that the page polls (docs/sluiced.md,
// "Dashboard", for the format). Off the hot path: it runs once per open page per second.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"

#include "src/server/dashboard/dashboard.h"
#include "src/server/dashboard/dashboard_internal.h"

namespace sluice::server {
namespace {

using dashboard_internal::kLatencyBuckets;
using dashboard_internal::Second;
using dashboard_internal::TagComponents;

// The longest value the feed sends; longer ones are cut (at a UTF-8 boundary) and flagged.
constexpr size_t kMaxValueBytes = 64;

struct Merged {
  uint64_t count = 0;
  uint64_t error = 0;
  int64_t since_ms = 0;
  bool truncated = false;
  SpaceSaving::Tag tag{};
};

using MergedMap = absl::flat_hash_map<std::string, Merged>;

void MergeInto(MergedMap& into, const SpaceSaving& table) {
  for (SpaceSaving::Entry& e : table.Top(table.size())) {
    Merged& m = into[e.key];
    m.count += e.count;
    m.error += e.error;
    m.since_ms = m.since_ms == 0 ? e.since_ms : std::min(m.since_ms, e.since_ms);
    m.truncated = m.truncated || e.truncated;
    m.tag = e.tag;
  }
}

// `text` cut to kMaxValueBytes without splitting a UTF-8 sequence; sets `cut` when it was cut.
std::string Cut(std::string_view text, bool& cut) {
  if (text.size() <= kMaxValueBytes) return std::string(text);
  size_t n = kMaxValueBytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  cut = true;
  return std::string(text.substr(0, n));
}

// One row of a top list: the store key's domain and descriptor entries.
boost::json::object Row(const std::string& key, const Merged& m, std::string_view domain_of) {
  boost::json::object row;
  std::vector<std::string> parts = TagComponents(key);
  bool cut = m.truncated;
  row["domain"] = Cut(domain_of, cut);
  boost::json::array entries;
  for (size_t i = 1; i < parts.size(); i += 2) {
    boost::json::object entry;
    entry["key"] = Cut(parts[i], cut);
    entry["value"] = i + 1 < parts.size() ? Cut(parts[i + 1], cut) : std::string();
    entries.push_back(std::move(entry));
  }
  row["descriptor"] = std::move(entries);
  row["truncated"] = cut;
  row["count"] = m.count;
  row["error"] = m.error;
  row["since_ms"] = m.since_ms;
  return row;
}

boost::json::array TopRows(const MergedMap& merged, std::string_view domain, size_t rows,
                           bool with_limit) {
  std::vector<std::pair<const std::string*, const Merged*>> order;
  std::vector<std::string> domains;
  for (const auto& [key, m] : merged) order.emplace_back(&key, &m);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.second->count != b.second->count) return a.second->count > b.second->count;
    return *a.first < *b.first;
  });
  boost::json::array out;
  for (const auto& [key, m] : order) {
    if (out.size() >= rows) break;
    const std::string row_domain = TagComponents(*key).front();
    if (!domain.empty() && row_domain != domain) continue;
    boost::json::object row = Row(*key, *m, row_domain);
    if (with_limit) {
      boost::json::object limit;
      limit["requests_per_unit"] = m->tag.requests_per_unit;
      limit["unit"] = RateLimitUnitName(static_cast<RateLimitUnit>(m->tag.unit));
      row["limit"] = std::move(limit);
    }
    out.push_back(std::move(row));
  }
  return out;
}

// The latency below which `q` of the decisions fell, as the upper bound of its power-of-two
// bucket, in microseconds; 0 with no decisions.
uint64_t Percentile(const std::array<uint64_t, kLatencyBuckets>& buckets, double q) {
  uint64_t total = 0;
  for (uint64_t b : buckets) total += b;
  if (total == 0) return 0;
  const auto rank = static_cast<uint64_t>(q * static_cast<double>(total));
  uint64_t seen = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    seen += buckets[b];
    if (seen > rank) return uint64_t{1} << b;
  }
  return uint64_t{1} << (buckets.size() - 1);
}

boost::json::object StoreJson(const StoreState& s) {
  boost::json::object store;
  store["kind"] = s.memory.has_value() ? "memory" : (s.redis.has_value() ? "redis" : "other");
  if (s.redis_connected.has_value()) store["connected"] = *s.redis_connected;
  store["breaker_open"] = s.breaker_open;
  store["breaker_opens"] = s.breaker_opens;
  if (s.redis.has_value() && s.redis->leases) {
    boost::json::object leases;
    leases["local_admits"] = s.redis->lease.local_admits;
    leases["local_denials"] = s.redis->lease.local_denials;
    leases["grants"] = s.redis->lease.grants;
    leases["units_granted"] = s.redis->lease.units_granted;
    store["leases"] = std::move(leases);
  }
  return store;
}

}  // namespace

std::string Dashboard::FeedJson(std::string_view domain) const {
  const int64_t now_ms = NowMs();
  const int64_t now_s = now_ms / 1000;
  const int64_t window_id = now_s / options_.window.count();
  const auto history = static_cast<int64_t>(options_.history_seconds);
  // Per domain, the complete seconds of the history, oldest first.
  absl::flat_hash_map<std::string, std::vector<Second>> series;
  MergedMap denied;
  MergedMap callers;
  std::array<uint64_t, kLatencyBuckets> latency{};
  uint64_t invalid = 0;
  for (const auto& shard : shards_) {
    internal::MutexLock lock(&shard->mu);
    invalid += shard->invalid;
    for (const auto& d : shard->domains) {
      std::vector<Second>& out = series[d.name];
      out.resize(static_cast<size_t>(history));
      for (const Second& s : d.ring) {
        const int64_t age = now_s - s.second;  // 1: the last complete second
        if (s.second < 0 || age < 1 || age > history) continue;
        Second& o = out[static_cast<size_t>(history - age)];
        o.decisions += s.decisions;
        o.over_limit += s.over_limit;
        o.errors += s.errors;
      }
    }
    for (const auto& w : shard->windows) {
      if (w.id != window_id && w.id != window_id - 1) continue;
      MergeInto(denied, *w.denied);
      MergeInto(callers, *w.callers);
      for (size_t b = 0; b < kLatencyBuckets; ++b) latency[b] += w.latency[b];
    }
  }

  boost::json::object feed;
  feed["version"] = kFeedVersion;
  feed["now_ms"] = now_ms;
  feed["domain"] = std::string(domain);
  feed["history_seconds"] = history;
  feed["window_seconds"] = options_.window.count();
  feed["invalid_requests"] = invalid;
  boost::json::array domains;
  std::vector<std::string> names;
  for (const auto& [name, s] : series) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::vector<Second>& s = series[name];
    boost::json::object d;
    bool cut = false;
    d["name"] = Cut(name, cut);
    d["truncated"] = cut;
    uint64_t minute_decisions = 0;
    uint64_t minute_over = 0;
    boost::json::array decisions;
    boost::json::array over;
    boost::json::array errors;
    for (size_t i = 0; i < s.size(); ++i) {
      decisions.push_back(s[i].decisions);
      over.push_back(s[i].over_limit);
      errors.push_back(s[i].errors);
      if (i + 60 >= s.size()) {
        minute_decisions += s[i].decisions;
        minute_over += s[i].over_limit;
      }
    }
    d["decisions_per_second"] = std::move(decisions);
    d["over_limit_per_second"] = std::move(over);
    d["store_errors_per_second"] = std::move(errors);
    d["last_minute_decisions"] = minute_decisions;
    d["last_minute_over_limit"] = minute_over;
    domains.push_back(std::move(d));
  }
  feed["domains"] = std::move(domains);
  feed["top_over_limit"] = TopRows(denied, domain, options_.top_rows, true);
  feed["top_callers"] = TopRows(callers, domain, options_.top_caller_rows, false);
  boost::json::object lat;
  lat["p50_us"] = Percentile(latency, 0.50);
  lat["p90_us"] = Percentile(latency, 0.90);
  lat["p99_us"] = Percentile(latency, 0.99);
  feed["latency"] = std::move(lat);

  internal::MutexLock lock(&mu_);
  if (store_source_ != nullptr) feed["store"] = StoreJson(store_source_->ReadStoreState());
  boost::json::object config;
  config["version"] = config_.loads;
  config["origin"] = config_.origin;
  config["load_errors"] = config_.load_errors;
  config["last_error"] = config_.last_error;
  config["last_error_ms"] = config_.last_error_ms;
  feed["config"] = std::move(config);
  return boost::json::serialize(feed);
}

}  // namespace sluice::server
