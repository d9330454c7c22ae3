// The Dashboard's shards (dashboard.h), shared by its recording side (dashboard.cc) and its feed
// (dashboard_feed.cc). Not for other users.
//
// Thread safety: a Shard's fields are guarded by its `mu`.
#ifndef SLUICE_SERVER_DASHBOARD_DASHBOARD_INTERNAL_H_
#define SLUICE_SERVER_DASHBOARD_DASHBOARD_INTERNAL_H_

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/config.h"
#include "sluice/key.h"

#include "src/server/dashboard/dashboard.h"
#include "src/server/dashboard/space_saving.h"
#include "src/util/mutex.h"

namespace sluice::server {
namespace dashboard_internal {

constexpr std::string_view kOtherDomain = "(other)";
// Latency buckets: bucket b holds latencies below 2^b microseconds (the last one, the rest).
constexpr size_t kLatencyBuckets = 28;

struct Second {
  int64_t second = -1;
  uint64_t decisions = 0;
  uint64_t over_limit = 0;
  uint64_t errors = 0;
};

struct DomainSeries {
  std::string name;
  std::vector<Second> ring;
};

// One window's tables.
struct Window {
  int64_t id = -1;
  std::unique_ptr<SpaceSaving> denied;
  std::unique_ptr<SpaceSaving> callers;
  std::array<uint64_t, kLatencyBuckets> latency{};
};

inline size_t LatencyBucket(std::chrono::microseconds latency) {
  const uint64_t us = static_cast<uint64_t>(std::max<int64_t>(latency.count(), 0));
  return std::min<size_t>(std::bit_width(us), kLatencyBuckets - 1);
}

// The escaped components of a store key's tag: domain, key1, value1, key2, value2, ...
inline std::vector<std::string> TagComponents(std::string_view store_key) {
  const KeyParts parts = SplitKey(store_key);
  // A key cut short (SpaceSaving's max_key_bytes) has lost its closing brace: still a tag.
  const std::string tag =
      UnescapeKeyTag(parts.tagged || !store_key.starts_with('{') ? parts.tag : store_key.substr(1));
  std::vector<std::string> out(1);
  for (size_t i = 0; i < tag.size(); ++i) {
    if (tag[i] == '\\' && i + 1 < tag.size()) {
      out.back() += tag[++i];
    } else if (tag[i] == ':') {
      out.emplace_back();
    } else {
      out.back() += tag[i];
    }
  }
  return out;
}

}  // namespace dashboard_internal

struct Dashboard::Shard {
  using Second = dashboard_internal::Second;
  using DomainSeries = dashboard_internal::DomainSeries;
  using Window = dashboard_internal::Window;

  explicit Shard(const DashboardOptions& o) {
    for (Window& w : windows) {
      w.denied = std::make_unique<SpaceSaving>(
          SpaceSavingOptions{.capacity = o.top_capacity, .max_key_bytes = o.max_key_bytes});
      w.callers = std::make_unique<SpaceSaving>(
          SpaceSavingOptions{.capacity = o.top_capacity, .max_key_bytes = o.max_key_bytes});
    }
    domains.reserve(o.max_domains + 1);
  }

  // The series of `domain`, made on first sight; "(other)" past max_domains.
  DomainSeries& Series(std::string_view domain, const DashboardOptions& o)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    domain = domain.substr(0, o.max_key_bytes);  // Unknown domains are the caller's choice.
    for (DomainSeries& d : domains) {
      if (d.name == domain) return d;
    }
    if (domains.size() >= o.max_domains) {
      domain = dashboard_internal::kOtherDomain;
      for (DomainSeries& d : domains) {
        if (d.name == domain) return d;
      }
    }
    domains.push_back(
        DomainSeries{.name = std::string(domain), .ring = std::vector<Second>(o.history_seconds)});
    return domains.back();
  }

  Second& At(DomainSeries& d, int64_t second) {
    Second& s = d.ring[static_cast<size_t>(second) % d.ring.size()];
    if (s.second != second) s = Second{.second = second};
    return s;
  }

  // The current window's tables, rotated to `id` first.
  Window& Current(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Window& cur = windows[current];
    if (cur.id == id) return cur;
    Window& other = windows[1 - current];
    if (cur.id == id - 1) {
      current = 1 - current;
    } else {
      cur.denied->Clear();
      cur.callers->Clear();
      cur.latency = {};
      cur.id = id - 1;
      current = 1 - current;
    }
    other.denied->Clear();
    other.callers->Clear();
    other.latency = {};
    other.id = id;
    return other;
  }
  const Window& Previous() const { return windows[1 - current]; }

  internal::Mutex mu;
  // A linear scan: few domains, and no hashing of the name on the hot path.
  std::vector<DomainSeries> domains ABSL_GUARDED_BY(mu);
  std::array<Window, 2> windows ABSL_GUARDED_BY(mu);
  size_t current ABSL_GUARDED_BY(mu) = 0;
  uint64_t invalid ABSL_GUARDED_BY(mu) = 0;
  // xorshift64 state for the callers' sample (DashboardOptions::caller_sample_every).
  uint64_t random ABSL_GUARDED_BY(mu) = 0x9E3779B97F4A7C15u;

  // True for one call in `every`, at random.
  bool Sample(uint32_t every) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (every <= 1) return true;
    random ^= random << 13;
    random ^= random >> 7;
    random ^= random << 17;
    return random % every == 0;
  }
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_DASHBOARD_DASHBOARD_INTERNAL_H_
