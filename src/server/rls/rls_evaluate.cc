#include "src/server/rls/rls_evaluate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::server {
namespace {

constexpr uint32_t kUnlimitedRemaining = std::numeric_limits<uint32_t>::max();

// The reference's stats arithmetic (base_limiter.go), from the counter before and after the hits.
RuleStats StatsFor(const PlannedLimit& l, const LimitResult& r, bool over, float ratio) {
  RuleStats s;
  const auto hits = static_cast<uint64_t>(l.hits);
  if (l.refund) {
    // The reference counts a refund's hits in total_negative_hits and nowhere else.
    s.total_negative_hits = hits;
    return s;
  }
  s.total_hits = hits;
  if (r.from_cache) {
    s.over_limit = hits;
    s.over_limit_with_local_cache = hits;
    if (l.shadow) s.shadow_mode = hits;
    return s;
  }
  const Decision& d = *r.decision;
  const auto threshold = static_cast<uint64_t>(std::max<int64_t>(0, d.limit));
  // As the reference computes it: the product in single precision, then the floor.
  const auto near = static_cast<uint64_t>(std::floor(static_cast<float>(threshold) * ratio));
  const auto remaining =
      static_cast<uint64_t>(std::clamp<int64_t>(d.remaining, 0, static_cast<int64_t>(threshold)));
  uint64_t before = 0;
  uint64_t after = 0;
  // A denial reports the counter it found, also when it counted the hits (a fixed window counting
  // rejected hits); an admission the counter after its hits.
  if ((r.counted || r.stats_as_counted) && d.allowed) {
    after = threshold - remaining;
    before = after >= hits ? after - hits : 0;
  } else {
    // Nothing was recorded (a denial, a peek, or a request another limit rejected): the store
    // reported the counter as it stands, before these hits.
    before = threshold - remaining;
    after = before + hits;
  }
  if (over) {
    // The hits that took the counter past the limit, or all of them when it already was (or when
    // an algorithm other than the window reports a remaining the cost did not exceed).
    const uint64_t over_hits = before < threshold && after > threshold ? after - threshold : hits;
    s.over_limit = over_hits;
    if (before < threshold && after > threshold) s.near_limit = threshold - std::max(near, before);
    if (l.shadow) s.shadow_mode = over_hits;
  } else {
    s.within_limit = hits;
    if (after > near) s.near_limit = before >= near ? hits : after - near;
  }
  return s;
}

// The Retry-After of an over limit.
int64_t RetryAfterFor(const PlannedLimit& l, const Decision& d) {
  if (!l.limit.has_value()) return std::max<int64_t>(1, StatusResetSeconds(d.reset_after));
  return RetryAfterSeconds(d.retry_after, *l.limit);
}

}  // namespace

Evaluation Evaluate(const Plan& plan, const std::vector<LimitResult>& results,
                    const EvaluateOptions& options) {
  Evaluation e;
  const size_t n = plan.descriptor_count();
  std::vector<bool> limit_over(plan.limits.size(), false);
  std::vector<bool> descriptor_over(n, false);
  bool enforced_over = false;
  for (size_t i = 0; i < plan.limits.size(); ++i) {
    const PlannedLimit& l = plan.limits[i];
    const LimitResult& r = results[i];
    if (!r.decision.has_value()) continue;
    const bool over = IsOver(l, *r.decision);
    limit_over[i] = over;
    e.stats.push_back({.stats_key = l.stats_key,
                       .stats = StatsFor(l, r, over, options.near_limit_ratio),
                       .store_key = l.key,
                       .limit = &l.reported});
    e.local_cache_hits += r.from_cache ? 1 : 0;
    e.fallback_decisions += r.decision->from_fallback ? 1 : 0;
    // A shadow-mode limit over its quota leaves its descriptor OK.
    if (!over || l.shadow) continue;
    descriptor_over[l.descriptor] = true;
    enforced_over = enforced_over || l.Enforced();
  }
  const bool quota_over = AllQuotaDescriptorsOver(plan, results);
  const bool any_over = enforced_over || quota_over;

  // Per descriptor, the limit that speaks for it: one that put it over, else the one with the
  // least remaining.
  std::vector<const PlannedLimit*> chosen(n, nullptr);
  std::vector<const Decision*> chosen_decision(n, nullptr);
  // Whether the chosen limit is over (only a shadow-mode one can be over in an OK descriptor).
  std::vector<bool> chosen_over(n, false);
  int64_t retry_after = 0;
  for (size_t i = 0; i < plan.limits.size(); ++i) {
    const PlannedLimit& l = plan.limits[i];
    if (!results[i].decision.has_value()) continue;
    const Decision& d = *results[i].decision;
    const bool speaks_over = limit_over[i] && !l.shadow;
    if (descriptor_over[l.descriptor] && !speaks_over) continue;
    if (speaks_over && (l.Enforced() || quota_over)) {
      retry_after = std::max(retry_after, RetryAfterFor(l, d));
    }
    const Decision*& c = chosen_decision[l.descriptor];
    if (c == nullptr || d.remaining < c->remaining) {
      c = &d;
      chosen[l.descriptor] = &l;
      chosen_over[l.descriptor] = limit_over[i];
    }
  }

  RlsResponse& response = e.response;
  response.statuses.resize(n);
  // The status the headers describe, chosen as the reference does: an over descriptor that is not
  // in quota mode, else the least remaining.
  const RlsStatus* closest = nullptr;
  bool closest_is_over = false;
  for (size_t i = 0; i < n; ++i) {
    RlsStatus& status = response.statuses[i];
    status.code = descriptor_over[i] ? RlsCode::kOverLimit : RlsCode::kOk;
    if (plan.unlimited[i]) {
      status.limit_remaining = kUnlimitedRemaining;
      continue;
    }
    const PlannedLimit* l = chosen[i];
    if (l == nullptr) continue;
    const Decision& d = *chosen_decision[i];
    status.current_limit = l->reported;
    // Over its limit, a descriptor has nothing remaining, also when shadow mode leaves it OK (as
    // the reference answers).
    status.limit_remaining =
        descriptor_over[i] || chosen_over[i]
            ? 0
            : static_cast<uint32_t>(std::clamp<int64_t>(d.remaining, 0, kUnlimitedRemaining));
    status.reset_seconds = StatusResetSeconds(d.reset_after);
    if (descriptor_over[i] && !l->quota) {
      closest = &status;
      closest_is_over = true;
    } else if (!closest_is_over &&
               (closest == nullptr || status.limit_remaining < closest->limit_remaining)) {
      closest = &status;
    }
  }
  response.overall_code = any_over ? RlsCode::kOverLimit : RlsCode::kOk;
  if (any_over && options.global_shadow_mode) {
    response.overall_code = RlsCode::kOk;
    e.global_shadow_applied = true;
  }
  if (options.response_headers && closest != nullptr) {
    const bool add_retry_after =
        options.retry_after_header && response.overall_code == RlsCode::kOverLimit;
    response.headers =
        ResponseHeaders(options.header_names, *closest, add_retry_after ? retry_after : 0);
  }
  return e;
}

}  // namespace sluice::server
