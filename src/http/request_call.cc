#include "src/http/request_call.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "src/http/problem_json.h"
#include "src/http/rate_limit_headers.h"
#include "src/util/strings.h"

namespace sluice::http::internal {
namespace {

using ::sluice::internal::AbslView;

std::string QuotedList(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view name : names) {
    absl::StrAppend(&out, out.empty() ? "'" : ", '", AbslView(name), "'");
  }
  return out;
}

}  // namespace

RequestCall::RequestCall(std::shared_ptr<const MiddlewareConfig> config, Middleware* owner)
    : owner(owner), config_(std::move(config)) {}

RequestCall::State RequestCall::Prepare(const RequestView& request,
                                        const MiddlewareOptions& options) {
  const CompiledRules& rules = config_->compiled();
  route_ = rules.Match(request);
  const TierTable& table = route_ != nullptr ? route_->tiers : rules.global_only;
  // The common case of no rule at all costs no identity resolution.
  if (table.named.empty() && !table.other) {
    state_ = State::kUnlimited;
    return state_;
  }
  identity_ = ResolveIdentity(config_->spec().identity, rules.client_ip, options, request);
  tier_ = table.Find(identity_.tier);
  if (tier_ == nullptr || tier_->policies.empty()) {
    state_ = State::kUnlimited;
    return state_;
  }
  checks_.reserve(tier_->policies.size());
  // The identity is the tag of every key of this request: one shard, one atomic CheckAll.
  const std::string key_tag = IdentityKeyTag(identity_.key);
  // Except for a claimed identity: its global (flood guard) limits count the client address, so
  // that sending a fresh claim does not give a fresh guard. Its keys then have two tags (on Redis
  // Cluster: see RedisStoreOptions::cross_slot).
  const std::string address_tag =
      identity_.address_key.empty() ? std::string() : IdentityKeyTag(identity_.address_key);
  for (const CompiledPolicy& policy : tier_->policies) {
    const std::string& tag = policy.global && !address_tag.empty() ? address_tag : key_tag;
    checks_.push_back(LimitCheck{
        .key = BuildCounterKeyFromTag(policy, tag), .limit = policy.limit, .cost = policy.cost});
  }
  state_ = State::kWaitingForStore;
  return state_;
}

Verdict RequestCall::Reject(RejectReason reason, int status, int64_t retry_after_seconds,
                            std::vector<ResponseHeader> headers,
                            std::vector<std::string_view> violated, absl::Status store_status,
                            const MiddlewareOptions& options) {
  Verdict verdict{.outcome = Verdict::Outcome::kReject,
                  .status = status,
                  .headers = {},
                  .content_type = std::string(kProblemContentType),
                  .body = {}};
  verdict.headers.push_back({"Retry-After", absl::StrCat(retry_after_seconds)});
  for (ResponseHeader& h : headers) verdict.headers.push_back(std::move(h));
  if (reason == RejectReason::kOverLimit) {
    verdict.body = ProblemJson(kQuotaExceededType, "Quota exceeded", status,
                               absl::StrCat("Quota exceeded for ", QuotedList(violated),
                                            "; retry in ", retry_after_seconds, " s."),
                               violated);
  } else {
    // An outage violates no policy, so the body names none (the hook still sees which limit of
    // the local fallback denied).
    verdict.body =
        ProblemJson(kReducedCapacityType, "Rate limiting temporarily unavailable", status,
                    "The rate limiter could not check this request's quota; retry later.", {});
  }
  if (options.on_reject) {
    RejectInfo info{.reason = reason,
                    .rule = route_ != nullptr ? std::string_view(route_->name) : std::string_view(),
                    .tier = identity_.tier,
                    .identity = identity_.key,
                    .violated_policies = std::move(violated),
                    .retry_after_seconds = retry_after_seconds,
                    .store_status = std::move(store_status)};
    options.on_reject(info, verdict);
  }
  return verdict;
}

Verdict RequestCall::Finish(absl::StatusOr<MultiDecision> result, const MiddlewareOptions& options,
                            Tally& tally) {
  if (!result.ok()) return FinishDecisions(result.status(), {}, false, options, tally);
  return FinishDecisions(absl::OkStatus(), result->decisions, result->allowed, options, tally);
}

Verdict RequestCall::FinishDecisions(absl::Status status, std::span<const Decision> decisions,
                                     bool allowed, const MiddlewareOptions& options, Tally& tally) {
  state_ = State::kDone;
  const MiddlewareSpec& spec = config_->spec();
  const ResponseSpec& response = spec.response;
  if (status.ok() && decisions.size() != tier_->policies.size()) {
    status = absl::InternalError(absl::StrCat(
        "store answered ", decisions.size(), " decisions for ", tier_->policies.size(), " checks"));
  }
  if (!status.ok()) {
    // The failure policies handed the store's error on: store_error is reject or allow (or local,
    // and the local limiter could not decide either).
    tally.error = true;
    if (spec.dry_run || response.store_error == StoreErrorAction::kAllow) return Verdict{};
    tally.enforced = true;
    // Nothing is known about when the store will be back; one second keeps clients from
    // hammering without making them wait long.
    return Reject(RejectReason::kStoreError, response.unavailable_status, 1, {}, {},
                  std::move(status), options);
  }
  const std::vector<CompiledPolicy>& policies = tier_->policies;
  absl::InlinedVector<PolicyState, 4> states(policies.size());
  bool from_fallback = false;
  for (size_t i = 0; i < policies.size(); ++i) {
    const Decision& d = decisions[i];
    states[i] = PolicyState{.name = policies[i].name,
                            .quoted_name = policies[i].quoted_name,
                            .quota = policies[i].quota,
                            .window_seconds = policies[i].window.window_seconds,
                            .remaining = std::clamp<int64_t>(d.remaining, 0, policies[i].quota),
                            .reset_seconds = ResetSeconds(d, policies[i].window)};
    from_fallback = from_fallback || d.from_fallback;
  }
  tally.error = from_fallback;

  // On a rejection, the refusing policy with the longest wait is the one that sets Retry-After
  // and the one the legacy X-RateLimit-* headers describe, so the two agree.
  std::vector<std::string_view> violated;
  int64_t retry_after = 1;
  size_t binding = MostConstrained(states);
  bool denied_by_fallback = false;
  if (!allowed) {
    int64_t longest = 0;
    for (size_t i = 0; i < policies.size(); ++i) {
      const Decision& d = decisions[i];
      if (d.allowed) continue;
      violated.push_back(policies[i].name);
      // All limits must admit the request, and each only recovers with time, so the longest wait
      // of the refusing ones is when all admit it.
      const int64_t wait = RetryAfterSeconds(d.retry_after, policies[i].window);
      if (wait > longest) {
        longest = wait;
        binding = i;
      }
      denied_by_fallback = denied_by_fallback || d.from_fallback;
    }
    retry_after = std::max<int64_t>(1, longest);
  }

  // Headers describe the real quota; a failure policy's answer says nothing about it.
  std::vector<ResponseHeader> headers;
  headers.reserve(6);
  if (!from_fallback && response.ratelimit_headers) {
    headers.push_back({"RateLimit-Policy", tier_->policy_header});
    headers.push_back({"RateLimit", FormatRateLimit(states)});
  }
  if (!from_fallback && response.legacy_headers) {
    const PolicyState& s = states[binding];
    // The clock is read only for this form.
    const int64_t reset =
        response.legacy_reset == LegacyReset::kEpochSeconds
            ? std::chrono::duration_cast<std::chrono::seconds>(options.clock->EpochNow()).count() +
                  s.reset_seconds
            : s.reset_seconds;
    headers.push_back({"X-RateLimit-Limit", absl::StrCat(s.quota)});
    headers.push_back({"X-RateLimit-Remaining", absl::StrCat(s.remaining)});
    headers.push_back({"X-RateLimit-Reset", absl::StrCat(reset)});
  }

  if (allowed) {
    tally.ok = true;
    return Verdict{.headers = std::move(headers)};
  }
  tally.over_limit = !denied_by_fallback;
  if (spec.dry_run) return Verdict{.headers = std::move(headers)};
  tally.enforced = true;
  if (denied_by_fallback) {
    return Reject(RejectReason::kStoreUnavailable, response.unavailable_status, retry_after,
                  std::move(headers), std::move(violated), absl::OkStatus(), options);
  }
  return Reject(RejectReason::kOverLimit, response.over_limit_status, retry_after,
                std::move(headers), std::move(violated), absl::OkStatus(), options);
}

}  // namespace sluice::http::internal
