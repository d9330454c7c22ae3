// The plan of one rate limit request: which limits to check, with what, and how each counts.
//
// MakePlan() turns a request and the config into the limits to decide, following
// envoyproxy/ratelimit's ShouldRateLimit (src/service/ratelimit.go) and GetLimit()
// (src/config/config_impl.go):
//  - a domain the config does not know matches nothing, not even a descriptor's `limit` override;
//  - a descriptor's `limit` override bypasses the config (a fixed window of that quota);
//  - a descriptor without entries matches nothing (OK, no limit);
//  - otherwise the config's most specific rule applies (RateLimitConfig::Match); `unlimited` rules
//    answer OK without a store call; `requests_per_unit: 0` denies without one;
//  - hits: the descriptor's hits_addend wins even when 0 (a check that records nothing), else
//    max(1, the request's);
//  - `replaces`: a matched limit named by another matched rule is dropped, its counter untouched;
//  - is_negative_hits: the descriptor's hits are given back to its limits (PlannedLimit::refund),
//    as envoyproxy/ratelimit does: never below empty, and the descriptor is OK.
// The plan holds no protobuf and no reference to the request: it owns its keys and names.
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(Plan plan, MakePlan(request, config.get(), PlanOptions{}));
//   for (const PlannedLimit& l : plan.limits) { ... }
//
// Thread safety: MakePlan() is thread-safe; a Plan is a value.
#ifndef SLUICE_SERVER_RLS_RLS_PLAN_H_
#define SLUICE_SERVER_RLS_RLS_PLAN_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/config.h"
#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/server/rls/rls_types.h"

namespace sluice::server {

// One limit of one descriptor.
struct PlannedLimit {
  // Index of the request descriptor it belongs to.
  size_t descriptor = 0;
  // The store key; empty when `limit` is (no store call).
  std::string key{};
  // The reference's stats key, "domain.key_value...".
  std::string stats_key{};
  // What the descriptor status reports.
  RlsLimit reported{};
  // What the store enforces; empty for `requests_per_unit: 0`, which denies without a store call.
  std::optional<Limit> limit{};
  // Units this request adds; 0 is a check that records nothing.
  int64_t hits = 1;
  // The rule's shadow_mode: decided and counted, but never denies.
  bool shadow = false;
  // From a `quota_mode` rule: over on its own, it makes its descriptor over but not the request.
  bool quota = false;
  // Exact-reference mode, or a rule's `debt: true`, a fixed window: decided on its own, counting
  // rejected hits (LimitCheck::count_rejected), over when its counter passes the limit.
  bool count_rejected = false;
  // Its descriptor's is_negative_hits: `hits` are given back (LimitCheck::refund). A refund is
  // never over, in any mode.
  bool refund = false;

  // True for a limit that is neither shadow nor quota mode nor a refund: it alone can deny the
  // request.
  bool Enforced() const { return !shadow && !quota && !refund; }
};

struct Plan {
  std::string domain{};
  // Per request descriptor: true when an `unlimited` rule matched it.
  std::vector<bool> unlimited{};
  // Every limit to decide, grouped by descriptor, in request then configuration order.
  std::vector<PlannedLimit> limits{};
  // False when the config does not know the domain (the reference's domain_not_found stat).
  bool domain_known = false;
  // Global quota mode (PlanOptions): every descriptor is a quota-mode descriptor, including those
  // no limit matched, which count as admitted.
  bool global_quota = false;
  // With PlanOptions::descriptor_metadata, per request descriptor: the `metadata` (JSON) of the
  // rule it matched, empty when none or when `replaces` dropped every limit of that rule, as the
  // reference drops the replaced limit and its metadata with it. Else empty.
  std::vector<std::string> metadata_json{};
  // The request part of the dynamic metadata (RequestMetadataJson(), rls_metadata.h), which the
  // service sets when it returns dynamic metadata; else empty.
  std::string request_metadata_json{};
  // Exact-reference mode (PlanOptions): PlanExecutor decides as envoyproxy/ratelimit's DoLimit.
  bool reference_semantics = false;
  // With reference_semantics, the reference's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true.
  bool stop_increment_when_over_limit = false;

  size_t descriptor_count() const { return unlimited.size(); }
};

struct PlanOptions {
  // Every descriptor is in quota mode (the reference's QUOTA_MODE): each limit is planned as a
  // quota-mode one, and Plan::global_quota is set. Default: off.
  bool global_quota_mode = false;
  // Fill Plan::metadata_json (RESPONSE_DYNAMIC_METADATA). Default: off.
  bool descriptor_metadata = false;
  // Exact-reference mode (docs/compatibility.md, "Exact-reference mode"): fixed windows count
  // rejected hits, each limit decided on its own. Default: off.
  bool reference_semantics = false;
  // With reference_semantics: the reference's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true, only
  // the limits a request takes past their limit are incremented when one does. Default: off.
  bool stop_increment_when_over_limit = false;
  // Request bounds; larger requests are InvalidArgument.
  size_t max_descriptors = 64;
  size_t max_entries_per_descriptor = 32;
  size_t max_value_bytes = 4096;
};

// MakePlan()
//
// Returns the plan of `request` under `config` (null: no config loaded, every descriptor
// unmatched), or InvalidArgument naming the offending field for a malformed request.
absl::StatusOr<Plan> MakePlan(const RlsRequest& request, const RateLimitConfig* config,
                              const PlanOptions& options);

// The outcome of one planned limit, filled in by PlanExecutor.
struct LimitResult {
  // The decision; empty when the limit was not decided (the request failed).
  std::optional<Decision> decision{};
  // True when the over-limit cache answered instead of the store.
  bool from_cache = false;
  // True when the store recorded the hits (an admitted check that was not a peek; for a refund,
  // gave them back).
  bool counted = false;
  // True when the limit was only peeked at, because the request was already rejected; its decision
  // then says whether its own hits would have fit (see PlanExecutor).
  bool peeked = false;
  // Exact-reference mode with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: a limit the reference did
  // not increment because another went over. Its stats read the counter as the counter after the
  // hits, as the reference's do.
  bool stats_as_counted = false;
};

// IsOver()
//
// Returns whether `decision` puts `limit` over: denied, or a 0-hit check (which the store always
// passes, recording nothing) that finds nothing remaining. A limit counting rejected hits is over
// only when denied: a 0-hit check passes while the counter is at most the limit (the reference's).
bool IsOver(const PlannedLimit& limit, const Decision& decision);

// AllQuotaDescriptorsOver()
//
// Returns true when the plan has quota-mode descriptors and every one of them is over (one of its
// quota-mode limits is), per `results` (one per plan.limits). The reference's rule: the request is
// over when a normal limit is, or when this holds. With plan.global_quota every descriptor that is
// not `unlimited` is a quota-mode descriptor, admitted unless one of its limits is over (the
// reference counts a descriptor without a limit as a quota descriptor that passed).
bool AllQuotaDescriptorsOver(const Plan& plan, const std::vector<LimitResult>& results);

// DeniedWithoutStore()
//
// Returns the decision of a `requests_per_unit: 0` limit `planned`, at `epoch_now`: denied (a
// refund allowed), nothing remaining, never passing, and resetting at the end of the current
// window of its unit (aligned to the Unix epoch, as the reference reports it).
Decision DeniedWithoutStore(const PlannedLimit& planned, std::chrono::microseconds epoch_now);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RLS_PLAN_H_
