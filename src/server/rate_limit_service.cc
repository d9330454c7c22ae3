#include "src/server/rate_limit_service.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "src/server/descriptor_key.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

using Descriptor = envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
using ProtoUnit = RateLimitResponse::RateLimit::Unit;

constexpr uint32_t kUnlimitedRemaining = 4294967295u;

ProtoUnit ToProtoUnit(RateLimitUnit unit) {
  switch (unit) {
    case RateLimitUnit::kSecond:
      return RateLimitResponse::RateLimit::SECOND;
    case RateLimitUnit::kMinute:
      return RateLimitResponse::RateLimit::MINUTE;
    case RateLimitUnit::kHour:
      return RateLimitResponse::RateLimit::HOUR;
    case RateLimitUnit::kDay:
      return RateLimitResponse::RateLimit::DAY;
    case RateLimitUnit::kWeek:
      return RateLimitResponse::RateLimit::WEEK;
    case RateLimitUnit::kMonth:
      return RateLimitResponse::RateLimit::MONTH;
    case RateLimitUnit::kYear:
      return RateLimitResponse::RateLimit::YEAR;
  }
  return RateLimitResponse::RateLimit::UNKNOWN;
}

// Maps an override's unit (envoy.type.v3.RateLimitUnit) to ours.
absl::StatusOr<RateLimitUnit> OverrideUnit(int unit) {
  switch (unit) {
    case envoy::type::v3::SECOND:
      return RateLimitUnit::kSecond;
    case envoy::type::v3::MINUTE:
      return RateLimitUnit::kMinute;
    case envoy::type::v3::HOUR:
      return RateLimitUnit::kHour;
    case envoy::type::v3::DAY:
      return RateLimitUnit::kDay;
    case envoy::type::v3::WEEK:
      return RateLimitUnit::kWeek;
    case envoy::type::v3::MONTH:
      return RateLimitUnit::kMonth;
    case envoy::type::v3::YEAR:
      return RateLimitUnit::kYear;
    default:
      return absl::InvalidArgumentError(absl::StrCat("limit.unit: unknown unit ", unit));
  }
}

int64_t CeilSeconds(std::chrono::microseconds d) {
  return d.count() <= 0 ? 0 : (d.count() + 999'999) / 1'000'000;
}

// One limit of one descriptor.
struct Slot {
  size_t descriptor = 0;
  std::string key{};
  std::string stats_key{};
  std::string name{};
  uint32_t requests_per_unit = 0;
  ProtoUnit unit = RateLimitResponse::RateLimit::UNKNOWN;
  std::optional<Limit> limit{};  // empty: requests_per_unit 0, deny without a store call
  int64_t cost = 1;
  bool shadow = false;
  // From a `quota_mode` rule: over alone, it makes its descriptor over but not the request.
  bool quota = false;
  bool cached_over = false;
  std::optional<Decision> decision{};
};

}  // namespace

struct RateLimitService::Call {
  std::string domain;
  std::shared_ptr<const RateLimitConfig> config;
  std::vector<bool> unlimited;  // per descriptor
  std::vector<Slot> slots;
  std::vector<LimitCheck> enforced_checks;
  std::vector<size_t> enforced_slots;
  std::vector<LimitCheck> shadow_checks;
  std::vector<size_t> shadow_slots;
  // Quota-mode limits, each decided on its own before the enforced ones (see ShouldRateLimit).
  std::vector<size_t> quota_slots;
  std::atomic<int> quota_pending{0};
  Callback done;
  std::chrono::steady_clock::time_point started;
  std::atomic<int> pending{0};
  internal::Mutex mu;
  absl::Status error ABSL_GUARDED_BY(mu);
};

RateLimitService::RateLimitService(Store& store, Metrics& metrics, RateLimitServiceOptions options)
    : store_(store),
      metrics_(metrics),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : Clock::Real()),
      over_limit_cache_(options.over_limit_cache_entries > 0
                            ? std::make_unique<OverLimitCache>(options.over_limit_cache_entries)
                            : nullptr) {}

void RateLimitService::SetConfig(std::shared_ptr<const RateLimitConfig> config) {
  internal::MutexLock lock(&mu_);
  config_ = std::move(config);
}

std::shared_ptr<const RateLimitConfig> RateLimitService::config() const {
  internal::MutexLock lock(&mu_);
  return config_;
}

namespace {

absl::Status ValidateRequest(const RateLimitRequest& request,
                             const RateLimitServiceOptions& options) {
  if (request.domain().empty()) return absl::InvalidArgumentError("domain: must not be empty");
  if (request.descriptors().empty()) {
    return absl::InvalidArgumentError("descriptors: at least one descriptor is required");
  }
  if (static_cast<size_t>(request.descriptors_size()) > options.max_descriptors) {
    return absl::InvalidArgumentError(
        absl::StrCat("descriptors: at most ", options.max_descriptors, " are allowed"));
  }
  for (int i = 0; i < request.descriptors_size(); ++i) {
    const Descriptor& d = request.descriptors(i);
    if (d.entries().empty() ||
        static_cast<size_t>(d.entries_size()) > options.max_entries_per_descriptor) {
      return absl::InvalidArgumentError(absl::StrCat("descriptors[", i, "].entries: 1 to ",
                                                     options.max_entries_per_descriptor,
                                                     " entries are required"));
    }
    for (int j = 0; j < d.entries_size(); ++j) {
      const auto& e = d.entries(j);
      if (e.key().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("descriptors[", i, "].entries[", j, "].key: must not be empty"));
      }
      if (e.key().size() > options.max_value_bytes || e.value().size() > options.max_value_bytes) {
        return absl::InvalidArgumentError(absl::StrCat("descriptors[", i, "].entries[", j,
                                                       "]: key and value are limited to ",
                                                       options.max_value_bytes, " bytes"));
      }
    }
  }
  return absl::OkStatus();
}

// The hits a descriptor adds: its own hits_addend wins even when 0, else max(1, the request's).
int64_t HitsFor(const RateLimitRequest& request, const Descriptor& d) {
  if (d.has_hits_addend()) {
    return static_cast<int64_t>(std::min<uint64_t>(d.hits_addend().value(), kMaxCost));
  }
  return std::max<int64_t>(1, request.hits_addend());
}

}  // namespace

void RateLimitService::ShouldRateLimit(const RateLimitRequest& request, Callback done) {
  if (absl::Status s = ValidateRequest(request, options_); !s.ok()) {
    std::move(done)(std::move(s));
    return;
  }
  auto call = std::make_shared<Call>();
  call->started = clock_.Now();
  call->domain = request.domain();
  call->config = config();
  call->done = std::move(done);
  call->unlimited.assign(request.descriptors_size(), false);

  absl::flat_hash_set<std::string_view> replaced;
  std::vector<DescriptorEntry> entries;
  for (int i = 0; i < request.descriptors_size(); ++i) {
    const Descriptor& d = request.descriptors(i);
    entries.clear();
    for (const auto& e : d.entries()) entries.push_back({e.key(), e.value()});
    const int64_t hits = HitsFor(request, d);

    if (d.has_limit()) {
      // An override bypasses the config, as in the reference: a fixed window of the given quota.
      absl::StatusOr<RateLimitUnit> unit = OverrideUnit(d.limit().unit());
      if (!unit.ok()) {
        std::move(call->done)(absl::InvalidArgumentError(
            absl::StrCat("descriptors[", i, "].", unit.status().message())));
        return;
      }
      Slot slot{.descriptor = static_cast<size_t>(i),
                .requests_per_unit = d.limit().requests_per_unit(),
                .unit = ToProtoUnit(*unit),
                .cost = hits,
                .shadow = options_.global_shadow_mode};
      std::string stats = call->domain;
      for (const DescriptorEntry& e : entries) {
        absl::StrAppend(&stats, ".", internal::AbslView(e.key), "_", internal::AbslView(e.value));
      }
      slot.stats_key = std::move(stats);
      if (slot.requests_per_unit > 0) {
        slot.limit = Limit{.algorithm = Algorithm::kFixedWindow,
                           .limit = slot.requests_per_unit,
                           .period = RateLimitUnitDuration(*unit)};
        slot.key = StoreKey(call->domain, entries, *slot.limit);
      }
      call->slots.push_back(std::move(slot));
      continue;
    }

    std::optional<RuleMatch> match =
        call->config != nullptr ? call->config->Match(call->domain, entries) : std::nullopt;
    if (!match.has_value()) continue;
    const Rule& rule = *match->rule;
    if (rule.unlimited) {
      call->unlimited[i] = true;
      continue;
    }
    for (const std::string& name : rule.replaces) replaced.insert(name);
    for (const RuleLimit& rl : rule.limits) {
      Slot slot{.descriptor = static_cast<size_t>(i),
                .stats_key = match->stats_key,
                .name = rl.name.empty() ? rule.name : rl.name,
                .requests_per_unit = rl.requests_per_unit,
                .unit = ToProtoUnit(rl.unit),
                .limit = rl.limit,
                .cost = hits,
                .shadow = rule.shadow_mode || options_.global_shadow_mode,
                .quota = rule.quota_mode};
      if (slot.limit.has_value()) {
        slot.key = StoreKey(call->domain, match->counter_entries, *slot.limit);
      }
      call->slots.push_back(std::move(slot));
    }
  }
  // `replaces`: a matched limit named by another matched rule is dropped, its counter untouched.
  if (!replaced.empty()) {
    std::erase_if(call->slots,
                  [&](const Slot& s) { return !s.name.empty() && replaced.contains(s.name); });
  }

  // Enforced limits are decided all-or-nothing. A limit already known to be over (requests_per_unit
  // 0, or the over-limit cache) makes the request over, so the others are only peeked at.
  const auto now = clock_.Now();
  bool known_over = false;
  for (Slot& s : call->slots) {
    if (s.shadow) continue;
    // A quota-mode limit over its quota does not make the request over by itself.
    if (s.quota) continue;
    if (!s.limit.has_value()) {
      known_over = true;
    } else if (over_limit_cache_ != nullptr &&
               over_limit_cache_->IsOver(s.key, s.limit->limit, s.cost, now)) {
      s.cached_over = true;
      known_over = true;
      metrics_.CountLocalCacheHit();
    }
  }
  for (size_t i = 0; i < call->slots.size(); ++i) {
    Slot& s = call->slots[i];
    if (s.quota && !s.shadow) {
      call->quota_slots.push_back(i);
      continue;
    }
    if (!s.limit.has_value() || s.cached_over) continue;
    if (s.shadow) {
      call->shadow_checks.push_back({.key = s.key, .limit = *s.limit, .cost = s.cost});
      call->shadow_slots.push_back(i);
    } else {
      call->enforced_checks.push_back(
          {.key = s.key, .limit = *s.limit, .cost = known_over ? 0 : s.cost});
      call->enforced_slots.push_back(i);
    }
  }

  // Quota mode (envoyproxy/ratelimit): the request is over when a normal limit is over, or when
  // every quota-mode descriptor is. Each quota-mode limit is decided on its own first (it counts
  // the request whenever it admits it, as in the reference); then the enforced limits are decided
  // all or nothing, and only peeked at when every quota-mode descriptor turned out over, so that a
  // rejected request still consumes none of them.
  const bool quota_first = !call->quota_slots.empty();
  // Two completions at most: the enforced path (DecideEnforced() completes exactly once, even with
  // no enforced check) and the shadow call. Finish() runs after the last of them.
  call->pending.store(1 + (call->shadow_checks.empty() ? 0 : 1));
  if (!call->shadow_checks.empty()) {
    store_.CheckAllAsync(call->shadow_checks, [this, call](absl::StatusOr<MultiDecision> r) {
      Record(*call, call->shadow_slots, std::move(r));
      if (call->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish(call);
    });
  }
  if (!quota_first) {
    DecideEnforced(call);
    return;
  }
  call->quota_pending.store(static_cast<int>(call->quota_slots.size()));
  for (size_t index : call->quota_slots) {
    const Slot& s = call->slots[index];
    auto done = [this, call, index](absl::StatusOr<Decision> r) {
      Record(*call, index, std::move(r));
      if (call->quota_pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (AllQuotaDescriptorsOver(*call)) {
          for (LimitCheck& c : call->enforced_checks) c.cost = 0;
        }
        DecideEnforced(call);
      }
    };
    if (s.limit.has_value()) {
      store_.CheckAsync(s.key, *s.limit, s.cost, std::move(done));
    } else {
      // requests_per_unit 0: over without a store call.
      done(Decision{.allowed = false, .limit = 0, .remaining = 0});
    }
  }
}

void RateLimitService::DecideEnforced(const std::shared_ptr<Call>& call) {
  auto complete = [this, call](absl::StatusOr<MultiDecision> r) {
    Record(*call, call->enforced_slots, std::move(r));
    if (call->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish(call);
  };
  if (call->enforced_checks.empty()) {
    complete(MultiDecision{.allowed = true, .decisions = {}});
  } else if (call->enforced_checks.size() == 1) {
    // The common case, one limit: the single-check script is cheaper than the multi-check one.
    const LimitCheck& c = call->enforced_checks.front();
    store_.CheckAsync(c.key, c.limit, c.cost,
                      [complete = std::move(complete)](absl::StatusOr<Decision> r) mutable {
                        if (!r.ok()) {
                          complete(r.status());
                          return;
                        }
                        complete(MultiDecision{.allowed = r->allowed, .decisions = {*r}});
                      });
  } else {
    store_.CheckAllAsync(call->enforced_checks, std::move(complete));
  }
}

void RateLimitService::Record(Call& call, const std::vector<size_t>& slot_indexes,
                              absl::StatusOr<MultiDecision> result) {
  if (!result.ok()) {
    metrics_.CountStoreError();
    internal::MutexLock lock(&call.mu);
    call.error = result.status();
    return;
  }
  for (size_t j = 0; j < slot_indexes.size() && j < result->decisions.size(); ++j) {
    call.slots[slot_indexes[j]].decision = result->decisions[j];
  }
}

void RateLimitService::Record(Call& call, size_t slot_index, absl::StatusOr<Decision> result) {
  if (!result.ok()) {
    metrics_.CountStoreError();
    internal::MutexLock lock(&call.mu);
    call.error = result.status();
    return;
  }
  call.slots[slot_index].decision = *result;
}

bool RateLimitService::AllQuotaDescriptorsOver(const Call& call) {
  // Per descriptor: 0 = no quota-mode limit, 1 = all admitted so far, 2 = one denied.
  std::vector<uint8_t> state(call.unlimited.size(), 0);
  for (size_t index : call.quota_slots) {
    const Slot& s = call.slots[index];
    uint8_t& st = state[s.descriptor];
    // A limit with no decision failed in the store; the request fails as a whole in Finish().
    const bool over = s.decision.has_value() && !s.decision->allowed;
    st = over ? 2 : std::max<uint8_t>(st, 1);
  }
  bool any = false;
  for (uint8_t st : state) {
    if (st == 1) return false;
    any = any || st == 2;
  }
  return any;
}

void RateLimitService::Finish(const std::shared_ptr<Call>& call) {
  {
    internal::MutexLock lock(&call->mu);
    if (!call->error.ok()) {
      absl::Status error = call->error;
      metrics_.ObserveDecisionLatency(
          std::chrono::duration_cast<std::chrono::microseconds>(clock_.Now() - call->started));
      std::move(call->done)(
          absl::UnavailableError(absl::StrCat("rate limit store failed: ", error.message())));
      return;
    }
  }
  const auto now = clock_.Now();
  RateLimitResponse response;
  const size_t n = call->unlimited.size();
  std::vector<bool> over(n, false);
  bool normal_over = false;
  const bool quota_over = AllQuotaDescriptorsOver(*call);
  std::chrono::microseconds retry_after{0};
  for (Slot& s : call->slots) {
    Decision d;
    if (!s.limit.has_value()) {
      d = Decision{.allowed = false, .limit = 0, .remaining = 0};
    } else if (s.cached_over) {
      d = Decision{.allowed = false, .limit = s.limit->Capacity(), .remaining = 0};
    } else if (s.decision.has_value()) {
      d = *s.decision;
      // A check with 0 hits (Envoy's "check now, debit later") passes in the store, which records
      // nothing; it is over once nothing remains, or it could never deny.
      if (s.cost == 0 && d.allowed && d.remaining <= 0) {
        d.allowed = false;
        d.retry_after = d.reset_after;
      }
    } else {
      continue;
    }
    s.decision = d;
    if (d.from_fallback) metrics_.CountFallbackDecision();
    const int64_t capacity = d.limit;
    RuleOutcome outcome = RuleOutcome::kWithinLimit;
    if (!d.allowed) {
      outcome = s.shadow ? RuleOutcome::kShadowMode : RuleOutcome::kOverLimit;
    } else if (static_cast<double>(capacity - d.remaining) >
               options_.near_limit_ratio * static_cast<double>(capacity)) {
      outcome = RuleOutcome::kNearLimit;
    }
    metrics_.CountRule(call->domain, s.stats_key, outcome, static_cast<uint64_t>(s.cost));
    if (d.allowed || s.shadow) continue;
    over[s.descriptor] = true;
    if (s.quota) {
      // Over alone it speaks only for its descriptor; the request waits for it only when every
      // quota-mode descriptor is over.
      if (!quota_over) continue;
    } else {
      normal_over = true;
      // Not for a 0-hit check: the cache answers requests of at least the denied cost.
      if (over_limit_cache_ != nullptr && s.limit.has_value() && !s.cached_over && s.cost > 0) {
        over_limit_cache_->Add(s.key, s.limit->limit, s.cost, now, d.retry_after);
      }
    }
    retry_after =
        std::max(retry_after, d.retry_after == Decision::kNever ? d.reset_after : d.retry_after);
  }
  // Per descriptor, the limit that speaks for it: an enforced denied one when it is over, else the
  // one with the least remaining (as the reference reports the limit closest to its end).
  std::vector<const Slot*> chosen(n, nullptr);
  for (const Slot& s : call->slots) {
    if (!s.decision.has_value()) continue;
    if (over[s.descriptor] && (s.decision->allowed || s.shadow)) continue;
    const Slot*& c = chosen[s.descriptor];
    if (c == nullptr || s.decision->remaining < c->decision->remaining) c = &s;
  }

  const bool any_over = normal_over || quota_over;
  const Slot* closest = nullptr;
  for (size_t i = 0; i < n; ++i) {
    auto* status = response.add_statuses();
    status->set_code(over[i] ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
    if (call->unlimited[i]) {
      status->set_limit_remaining(kUnlimitedRemaining);
      continue;
    }
    const Slot* s = chosen[i];
    if (s == nullptr) continue;
    auto* limit = status->mutable_current_limit();
    limit->set_requests_per_unit(s->requests_per_unit);
    limit->set_unit(s->unit);
    if (!s->name.empty()) limit->set_name(s->name);
    status->set_limit_remaining(
        static_cast<uint32_t>(std::clamp<int64_t>(s->decision->remaining, 0, kUnlimitedRemaining)));
    const int64_t reset_us = s->decision->reset_after.count();
    status->mutable_duration_until_reset()->set_seconds(reset_us / 1'000'000);
    status->mutable_duration_until_reset()->set_nanos(static_cast<int32_t>(reset_us % 1'000'000) *
                                                      1000);
    if (closest == nullptr || s->decision->remaining < closest->decision->remaining) closest = s;
  }
  response.set_overall_code(any_over ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
  if (options_.response_headers && closest != nullptr) {
    auto add = [&response](std::string_view name, int64_t value) {
      auto* h = response.add_response_headers_to_add();
      h->set_key(std::string(name));
      h->set_value(absl::StrCat(value));
    };
    add("RateLimit-Limit", closest->requests_per_unit);
    add("RateLimit-Remaining", std::max<int64_t>(0, closest->decision->remaining));
    add("RateLimit-Reset", CeilSeconds(closest->decision->reset_after));
    if (any_over) add("Retry-After", std::max<int64_t>(1, CeilSeconds(retry_after)));
  }
  metrics_.ObserveDecisionLatency(
      std::chrono::duration_cast<std::chrono::microseconds>(clock_.Now() - call->started));
  std::move(call->done)(std::move(response));
}

}  // namespace sluice::server
