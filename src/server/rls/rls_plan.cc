#include "src/server/rls/rls_plan.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "src/server/rls/descriptor_key.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

absl::Status ValidateRequest(const RlsRequest& request, const PlanOptions& options) {
  if (request.domain.empty()) return absl::InvalidArgumentError("domain: must not be empty");
  if (request.descriptors.empty()) {
    return absl::InvalidArgumentError("descriptors: at least one descriptor is required");
  }
  if (request.descriptors.size() > options.max_descriptors) {
    return absl::InvalidArgumentError(
        absl::StrCat("descriptors: at most ", options.max_descriptors, " are allowed"));
  }
  for (size_t i = 0; i < request.descriptors.size(); ++i) {
    const RlsDescriptor& d = request.descriptors[i];
    if (d.entries.size() > options.max_entries_per_descriptor) {
      return absl::InvalidArgumentError(absl::StrCat("descriptors[", i, "].entries: at most ",
                                                     options.max_entries_per_descriptor,
                                                     " are allowed"));
    }
    for (size_t j = 0; j < d.entries.size(); ++j) {
      const DescriptorEntry& e = d.entries[j];
      if (e.key.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("descriptors[", i, "].entries[", j, "].key: must not be empty"));
      }
      if (e.key.size() > options.max_value_bytes || e.value.size() > options.max_value_bytes) {
        return absl::InvalidArgumentError(absl::StrCat("descriptors[", i, "].entries[", j,
                                                       "]: key and value are limited to ",
                                                       options.max_value_bytes, " bytes"));
      }
    }
  }
  return absl::OkStatus();
}

// The hits a descriptor adds: its own hits_addend wins even when 0, else max(1, the request's).
int64_t HitsFor(const RlsRequest& request, const RlsDescriptor& d) {
  if (d.hits_addend.has_value()) {
    return static_cast<int64_t>(std::min<uint64_t>(*d.hits_addend, kMaxCost));
  }
  return std::max<int64_t>(1, request.hits_addend);
}

// The reference's stats key of an override: "domain.key_value.key2" (a key alone when its value
// is empty).
std::string OverrideStatsKey(std::string_view domain, const std::vector<DescriptorEntry>& entries) {
  std::string key(domain);
  for (const DescriptorEntry& e : entries) {
    absl::StrAppend(&key, ".", internal::AbslView(e.key));
    if (!e.value.empty()) absl::StrAppend(&key, "_", internal::AbslView(e.value));
  }
  return key;
}

PlannedLimit OverrideLimit(const RlsRequest& request, size_t index, int64_t hits) {
  const RlsDescriptor& d = request.descriptors[index];
  PlannedLimit planned{
      .descriptor = index,
      .stats_key = OverrideStatsKey(request.domain, d.entries),
      .reported = {.requests_per_unit = d.limit->requests_per_unit,
                   .unit = d.limit->unit,
                   .unit_multiplier = d.limit->unit_multiplier},
      .hits = hits};
  if (d.limit->requests_per_unit > 0) {
    planned.limit = Limit{.algorithm = Algorithm::kFixedWindow,
                          .limit = d.limit->requests_per_unit,
                          .period = RateLimitUnitDuration(d.limit->unit) * d.limit->unit_multiplier};
    planned.key = StoreKey(request.domain, d.entries, *planned.limit);
  }
  return planned;
}

}  // namespace

absl::StatusOr<Plan> MakePlan(const RlsRequest& request, const RateLimitConfig* config,
                              const PlanOptions& options) {
  if (absl::Status s = ValidateRequest(request, options); !s.ok()) return s;
  Plan plan{.domain = std::string(request.domain)};
  plan.unlimited.assign(request.descriptors.size(), false);
  plan.domain_known = config != nullptr && config->HasDomain(request.domain);
  plan.global_quota = options.global_quota_mode;
  plan.reference_semantics = options.reference_semantics;
  plan.stop_increment_when_over_limit = options.stop_increment_when_over_limit;
  // The reference looks the domain up before anything else: an unknown one matches nothing.
  if (!plan.domain_known) return plan;
  if (options.descriptor_metadata) plan.metadata_json.resize(request.descriptors.size());
  absl::flat_hash_set<std::string_view> replaced;
  for (size_t i = 0; i < request.descriptors.size(); ++i) {
    const RlsDescriptor& d = request.descriptors[i];
    const int64_t hits = HitsFor(request, d);
    if (d.limit.has_value()) {
      plan.limits.push_back(OverrideLimit(request, i, hits));
      plan.limits.back().quota = options.global_quota_mode;
      plan.limits.back().refund = d.is_negative_hits;
      continue;
    }
    std::optional<RuleMatch> match = config->Match(request.domain, d.entries);
    if (!match.has_value()) continue;
    const Rule& rule = *match->rule;
    if (rule.unlimited) {
      plan.unlimited[i] = true;
      continue;
    }
    for (const std::string& name : rule.replaces) replaced.insert(name);
    if (options.descriptor_metadata) plan.metadata_json[i] = rule.metadata_json;
    for (const RuleLimit& rl : rule.limits) {
      PlannedLimit planned{.descriptor = i,
                           .stats_key = match->stats_key,
                           .reported = {.name = rl.name.empty() ? rule.name : rl.name,
                                        .requests_per_unit = rl.requests_per_unit,
                                        .unit = rl.unit,
                                        .unit_multiplier = rl.unit_multiplier},
                           .limit = rl.limit,
                           .hits = hits,
                           .shadow = rule.shadow_mode,
                           .quota = rule.quota_mode || options.global_quota_mode,
                           .count_rejected = rl.debt && !d.is_negative_hits,
                           .refund = d.is_negative_hits};
      if (planned.limit.has_value()) {
        planned.key = StoreKey(request.domain, match->counter_entries, *planned.limit);
      }
      plan.limits.push_back(std::move(planned));
    }
  }
  if (options.reference_semantics) {
    // The reference's limits are all fixed windows; sluice's other algorithms keep their counting.
    for (PlannedLimit& l : plan.limits) {
      l.count_rejected =
          !l.refund && l.limit.has_value() && l.limit->algorithm == Algorithm::kFixedWindow;
    }
  }
  if (!replaced.empty()) {
    // `replaced` views the config's names; erase before the config can go.
    std::erase_if(plan.limits, [&](const PlannedLimit& l) {
      return !l.reported.name.empty() && replaced.contains(l.reported.name);
    });
    if (options.descriptor_metadata) {
      std::vector<bool> kept(plan.metadata_json.size(), false);
      for (const PlannedLimit& l : plan.limits) kept[l.descriptor] = true;
      for (size_t i = 0; i < kept.size(); ++i) {
        if (!kept[i]) plan.metadata_json[i].clear();
      }
    }
  }
  return plan;
}

bool IsOver(const PlannedLimit& limit, const Decision& decision) {
  if (limit.refund) return false;
  if (limit.count_rejected) return !decision.allowed;
  return !decision.allowed || (limit.hits == 0 && decision.remaining <= 0);
}

bool AllQuotaDescriptorsOver(const Plan& plan, const std::vector<LimitResult>& results) {
  // Per descriptor: 0 = no quota-mode limit, 1 = all admitted so far, 2 = one over.
  std::vector<uint8_t> state(plan.descriptor_count(), 0);
  if (plan.global_quota) {
    for (size_t d = 0; d < state.size(); ++d) state[d] = plan.unlimited[d] ? 0 : 1;
  }
  for (size_t i = 0; i < plan.limits.size(); ++i) {
    const PlannedLimit& l = plan.limits[i];
    if (!l.quota) continue;
    uint8_t& st = state[l.descriptor];
    // A shadow-mode limit never puts its descriptor over: the reference reports it OK, and so
    // counts its descriptor among the quota-mode ones that passed.
    if (l.shadow) {
      st = std::max<uint8_t>(st, 1);
      continue;
    }
    // A limit with no decision failed in the store; the request fails as a whole.
    const bool over = results[i].decision.has_value() && IsOver(l, *results[i].decision);
    st = over ? 2 : std::max<uint8_t>(st, 1);
  }
  bool any = false;
  for (uint8_t st : state) {
    if (st == 1) return false;
    any = any || st == 2;
  }
  return any;
}

Decision DeniedWithoutStore(const PlannedLimit& planned, std::chrono::microseconds epoch_now) {
  const RlsLimit& reported = planned.reported;
  const std::chrono::microseconds period =
      RateLimitUnitDuration(reported.unit) * std::max<uint32_t>(1, reported.unit_multiplier);
  // A refund to it has nothing to give back, and is OK as every refund.
  return Decision{.allowed = planned.refund,
                  .limit = 0,
                  .remaining = 0,
                  .reset_after = period - epoch_now % period,
                  .retry_after = Decision::kNever};
}

}  // namespace sluice::server
