// Evaluate(): turns a plan's decided limits into the response and the stats, as
// envoyproxy/ratelimit's ShouldRateLimit (src/service/ratelimit.go) and GetResponseDescriptorStatus
// (src/limiter/base_limiter.go) do.
//
// Per descriptor, the status speaks for the limit that put it over (a quota-mode or enforced one),
// else for the one with the least remaining. OVER_LIMIT reports nothing remaining; reset times are
// whole seconds. A shadow-mode limit over its quota leaves its descriptor OK. The request is
// OVER_LIMIT when an enforced limit is over or every quota-mode descriptor is; global shadow mode
// then answers OK overall but keeps each descriptor's OVER_LIMIT.
//
// Stats per limit, exactly as the reference counts them from the counter before and after the
// request's hits: total_hits always; within_limit for every admitted hit and near_limit for those
// of them above the near-limit threshold (floor(limit * ratio)), so a near-limit hit is also within
// limit; over_limit for the hits above the limit (the hits that crossed the near-limit threshold
// on the way count as near_limit); over_limit_with_local_cache for hits the over-limit cache
// denied; shadow_mode for a shadow-mode limit's over-limit hits, which also count as over_limit.
// A refund (is_negative_hits) is never over: its descriptor is OK with what remains after it, and
// its hits count in total_negative_hits only.
//
// Example:
//   Evaluation e = Evaluate(plan, results, EvaluateOptions{.near_limit_ratio = 0.8f});
//   observer.OnDecision({.domain = plan.domain, .limits = e.stats, ...});
//
// Thread safety: a pure function.
#ifndef SLUICE_SERVER_RLS_RLS_EVALUATE_H_
#define SLUICE_SERVER_RLS_RLS_EVALUATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "src/server/rls/rls_headers.h"
#include "src/server/rls/rls_plan.h"
#include "src/server/rls/rls_types.h"
#include "src/server/rls/rule_stats.h"

namespace sluice::server {

struct EvaluateOptions {
  // Hits above this share of a limit count as near_limit. Default: 0.8, as the reference.
  float near_limit_ratio = 0.8f;
  // Answer OK overall even when over (the reference's SHADOW_MODE). Default: off.
  bool global_shadow_mode = false;
  // Add the RateLimit-* headers (and Retry-After when over). Default: off.
  bool response_headers = false;
  // With response_headers: also Retry-After when over, sluice's addition (off in exact-reference
  // mode, as the reference sends none). Default: on.
  bool retry_after_header = true;
  RlsHeaderNames header_names{};
};

struct Evaluation {
  RlsResponse response{};
  // One per decided limit; views `plan`.
  std::vector<RuleStatsDelta> stats{};
  // True when global shadow mode turned an OVER_LIMIT answer OK (the reference's
  // global_shadow_mode stat).
  bool global_shadow_applied = false;
  // Limits the over-limit cache answered.
  uint64_t local_cache_hits = 0;
  // Decisions a store failure policy made instead of the store.
  uint64_t fallback_decisions = 0;
};

// Evaluate()
//
// Returns the response and stats of `plan` given its `results` (one per plan.limits, each
// decided, as PlanExecutor completes them).
Evaluation Evaluate(const Plan& plan, const std::vector<LimitResult>& results,
                    const EvaluateOptions& options);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RLS_EVALUATE_H_
