#include "src/server/rls/rate_limit_service.h"

#include <chrono>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

#include "src/server/rls/rls_metadata.h"

namespace sluice::server {
namespace {

// The over-limit cache `options` ask for: on when either bound is set (the reference turns its
// cache on with LOCAL_CACHE_SIZE_IN_BYTES alone), each bound unset meaning no bound of that kind
// beyond the default byte bound.
std::unique_ptr<internal::OverLimitStore> MakeOverLimitStore(Store& store,
                                                             const RateLimitServiceOptions& options,
                                                             Clock& clock) {
  if (options.over_limit_cache_entries == 0 && options.over_limit_cache_bytes == 0) return nullptr;
  return std::make_unique<internal::OverLimitStore>(
      store,
      internal::OverLimitStoreOptions{.max_entries = options.over_limit_cache_entries > 0
                                                         ? options.over_limit_cache_entries
                                                         : std::numeric_limits<size_t>::max(),
                                      .max_bytes = options.over_limit_cache_bytes > 0
                                                       ? options.over_limit_cache_bytes
                                                       : internal::OverLimitCache::kDefaultMaxBytes,
                                      .clock = &clock});
}

}  // namespace

RateLimitService::RateLimitService(Store& store, RlsObserver& observer,
                                   RateLimitServiceOptions options)
    : observer_(observer),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : Clock::Real()),
      over_limit_store_(MakeOverLimitStore(store, options_, clock_)),
      executor_(over_limit_store_ != nullptr ? *over_limit_store_ : store, clock_) {}

void RateLimitService::SetConfig(std::shared_ptr<const RateLimitConfig> config,
                                 std::string origin) {
  internal::MutexLock lock(&mu_);
  config_ = std::move(config);
  config_origin_ = std::move(origin);
}

std::string RateLimitService::config_origin() const {
  internal::MutexLock lock(&mu_);
  return config_origin_;
}

std::shared_ptr<const RateLimitConfig> RateLimitService::config() const {
  internal::MutexLock lock(&mu_);
  return config_;
}

void RateLimitService::Decide(const RlsRequest& request, DecideCallback done) {
  const auto started = clock_.Now();
  std::shared_ptr<const RateLimitConfig> config = this->config();
  absl::StatusOr<Plan> plan = MakePlan(
      request, config.get(),
      PlanOptions{.global_quota_mode = options_.global_quota_mode,
                  .descriptor_metadata = options_.response_dynamic_metadata,
                  .reference_semantics = options_.reference_semantics,
                  .stop_increment_when_over_limit = options_.stop_increment_when_over_limit,
                  .max_descriptors = options_.max_descriptors,
                  .max_entries_per_descriptor = options_.max_entries_per_descriptor,
                  .max_value_bytes = options_.max_value_bytes});
  if (!plan.ok()) {
    observer_.OnInvalidRequest();
    std::move(done)(plan.status());
    return;
  }
  if (!plan->domain_known) observer_.OnUnknownDomain(plan->domain, plan->descriptor_count());
  // Now: `request` views the caller's strings, which need not outlive this call.
  if (options_.response_dynamic_metadata) {
    plan->request_metadata_json = RequestMetadataJson(request);
  }
  auto shared = std::make_shared<const Plan>(*std::move(plan));
  executor_.Execute(shared, [this, shared, started, done = std::move(done)](
                                absl::StatusOr<std::vector<LimitResult>> results) mutable {
    auto latency = [&] {
      return std::chrono::duration_cast<std::chrono::microseconds>(clock_.Now() - started);
    };
    if (!results.ok()) {
      observer_.OnStoreError(shared->domain, latency());
      std::move(done)(absl::UnavailableError(
          absl::StrCat("rate limit store failed: ", results.status().message())));
      return;
    }
    Evaluation e = Evaluate(*shared, *results,
                            EvaluateOptions{.near_limit_ratio = options_.near_limit_ratio,
                                            .global_shadow_mode = options_.global_shadow_mode,
                                            .response_headers = options_.response_headers,
                                            .retry_after_header = !options_.reference_semantics,
                                            .header_names = options_.header_names});
    if (!shared->request_metadata_json.empty()) {
      e.response.dynamic_metadata_json = DynamicMetadataJson(*shared, e.response);
    }
    observer_.OnDecision(RlsDecisionReport{.domain = shared->domain,
                                           .limits = e.stats,
                                           .response = &e.response,
                                           .global_shadow_applied = e.global_shadow_applied,
                                           .local_cache_hits = e.local_cache_hits,
                                           .fallback_decisions = e.fallback_decisions,
                                           .latency = latency()});
    std::move(done)(std::move(e.response));
  });
}

}  // namespace sluice::server
