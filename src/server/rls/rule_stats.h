// RuleStats: what one decision adds to the reference's per-rule counters of a stats key
// ("domain.key_value...", RuleMatch::stats_key), as Evaluate() (rls_evaluate.h) counts them and
// RlsObserver (rls_observer.h) reports them.
//
// Apart from the Prometheus metrics (src/server/stats/metrics.h) that count them, so that the
// rate limit service and its observers share these plain values and nothing else.
//
// Example:
//   RuleStatsDelta d{.stats_key = "edge.remote_address", .stats = {.total_hits = 1}};
//
// Thread safety: value types.
#ifndef SLUICE_SERVER_RLS_RULE_STATS_H_
#define SLUICE_SERVER_RLS_RULE_STATS_H_

#include <cstdint>
#include <string_view>

#include "src/server/rls/rls_types.h"

namespace sluice::server {

// What one decision adds to a stats key's counters.
struct RuleStats {
  uint64_t total_hits = 0;
  uint64_t within_limit = 0;
  uint64_t near_limit = 0;
  uint64_t over_limit = 0;
  uint64_t over_limit_with_local_cache = 0;
  uint64_t shadow_mode = 0;
  // Units given back by credits (Envoy's is_negative_hits), which count in no other field.
  uint64_t total_negative_hits = 0;
};

// What one limit adds to its stats key's counters.
struct RuleStatsDelta {
  // The reference's stats key, "domain.key_value...": the descriptor's keys and values as the
  // matched rule names them. Views the plan.
  std::string_view stats_key{};
  RuleStats stats{};
  // The limit's store key (descriptor_key.h), which holds the request's own values where the stats
  // key may hold only the rule's keys, and the limit as reported: for the dashboard's top lists.
  // Views the plan; empty and null when the reporter does not know them.
  std::string_view store_key{};
  const RlsLimit* limit = nullptr;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RULE_STATS_H_
