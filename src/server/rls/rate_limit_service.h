// RateLimitService: envoyproxy/ratelimit's ShouldRateLimit over a sluice Store.
//
// A request goes through three protobuf-free steps: MakePlan() (rls_plan.h) turns it and the
// config into the limits to check; PlanExecutor (rls_executor.h) decides them on the store, every
// enforced limit of every descriptor in ONE all-or-nothing call, so a request rejected by one limit
// consumes none of the others (the reference increments the others); Evaluate() (rls_evaluate.h)
// turns the decisions into the response and the reference's stats, which go to an RlsObserver
// (rls_observer.h). In exact-reference mode (RateLimitServiceOptions::reference_semantics) the
// executor decides as the reference does instead: each limit on its own, fixed windows counting
// rejected hits. The service knows no protobuf: the gRPC and /json edges convert
// (ShouldRateLimit() in src/server/grpc/rls_proto.h).
//
// Example:
//   RateLimitService service(store, metrics, RateLimitServiceOptions{});  // Metrics: an observer
//   service.SetConfig(config);
//   service.Decide(request, [](absl::StatusOr<RlsResponse> r) { ... });
//
// Errors: InvalidArgument for a malformed request (nothing is recorded); a store failure that the
// store's failure policy does not answer is Unavailable.
//
// Thread safety: thread-safe. SetConfig() swaps the config atomically; requests in flight finish on
// the config they started with.
#ifndef SLUICE_SERVER_RLS_RATE_LIMIT_SERVICE_H_
#define SLUICE_SERVER_RLS_RATE_LIMIT_SERVICE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"

#include "sluice/clock.h"
#include "sluice/config.h"
#include "sluice/store.h"

#include "src/server/rls/rls_evaluate.h"
#include "src/server/rls/rls_executor.h"
#include "src/server/rls/rls_observer.h"
#include "src/server/rls/rls_plan.h"
#include "src/server/rls/rls_types.h"
#include "src/store/over_limit/over_limit_store.h"
#include "src/util/mutex.h"

namespace sluice::server {

struct RateLimitServiceOptions {
  // Time for latency metrics, the over-limit cache and `requests_per_unit: 0` resets. Not owned.
  // Default: Clock::Real().
  Clock* clock = nullptr;
  // Add the RateLimit-* headers (and Retry-After when over the limit) to response_headers_to_add,
  // from the descriptor closest to its limit (LIMIT_RESPONSE_HEADERS_ENABLED). Default: off.
  bool response_headers = false;
  // Their names (LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER).
  RlsHeaderNames header_names{};
  // Never answer OVER_LIMIT overall; descriptors keep their status (the reference's SHADOW_MODE).
  // Default: off.
  bool global_shadow_mode = false;
  // Every descriptor is in quota mode (the reference's QUOTA_MODE): the request is over only when
  // every descriptor that is not `unlimited` is, one without a limit counting as admitted.
  // Default: off.
  bool global_quota_mode = false;
  // Hits above this share of a limit count as near_limit. Default: 0.8, as the reference.
  float near_limit_ratio = 0.8f;
  // Return the request and the passed descriptors' config `metadata` in the response's
  // dynamic_metadata (RESPONSE_DYNAMIC_METADATA; rls_metadata.h). Default: off.
  bool response_dynamic_metadata = false;
  // Exact-reference mode (--reference-semantics, SLUICE_REFERENCE_SEMANTICS; docs/compatibility.md
  // "Exact-reference mode"): decide as envoyproxy/ratelimit does, fixed windows counting rejected
  // hits each on its own, a 0-hit check OK while the counter is at most the limit, and no
  // Retry-After. Default: off (sluice's all-or-nothing semantics).
  bool reference_semantics = false;
  // With reference_semantics: the reference's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true (only
  // the limits a request takes past their limit are incremented when one does). Ignored without.
  // Default: off, the reference's default.
  bool stop_increment_when_over_limit = false;
  // Request bounds; larger requests are INVALID_ARGUMENT.
  size_t max_descriptors = 64;
  size_t max_entries_per_descriptor = 32;
  size_t max_value_bytes = 4096;
  // Bounds of the over-limit cache: entries (--local-cache-entries) and bytes
  // (LOCAL_CACHE_SIZE_IN_BYTES, --local-cache-bytes). The cache is on when either is above 0; an
  // unset entry bound leaves only the byte bound, an unset byte bound is
  // OverLimitCache::kDefaultMaxBytes. The service then decides through an OverLimitStore in front
  // of its store. Default: both 0, off (see docs/sluiced.md).
  size_t over_limit_cache_entries = 0;
  size_t over_limit_cache_bytes = 0;
};

class RateLimitService {
 public:
  using DecideCallback = absl::AnyInvocable<void(absl::StatusOr<RlsResponse>) &&>;

  // `store` and `observer` must outlive the service; `observer` hears of every request
  // (rls_observer.h).
  RateLimitService(Store& store, RlsObserver& observer, RateLimitServiceOptions options);
  RateLimitService(const RateLimitService&) = delete;
  RateLimitService& operator=(const RateLimitService&) = delete;
  ~RateLimitService() = default;

  // Serves `config` from now on; `origin` says where it came from, for /rlconfig (a file path, or
  // "xds <server url> version <v>").
  void SetConfig(std::shared_ptr<const RateLimitConfig> config, std::string origin = "");
  std::shared_ptr<const RateLimitConfig> config() const;
  // Where the config served came from, or "" (none loaded, or not said).
  std::string config_origin() const;

  // RateLimitService::Decide()
  //
  // Decides `request` and completes `done` exactly once: inline for invalid requests, for requests
  // that need no store call and on a store that answers inline; else on the store's completion
  // thread. `request` may go as soon as Decide() returns.
  void Decide(const RlsRequest& request, DecideCallback done);

  // RateLimitService::ReportInvalidRequest()
  //
  // Reports a request that an edge could not turn into an RlsRequest (it is counted as a malformed
  // request is, the reference's should_rate_limit.service_error). Decide() reports its own.
  void ReportInvalidRequest() { observer_.OnInvalidRequest(); }

 private:
  RlsObserver& observer_;
  const RateLimitServiceOptions options_;
  Clock& clock_;
  // The over-limit cache in front of the store, when the options ask for one.
  std::unique_ptr<internal::OverLimitStore> over_limit_store_;
  PlanExecutor executor_;
  mutable internal::Mutex mu_;
  std::shared_ptr<const RateLimitConfig> config_ ABSL_GUARDED_BY(mu_);
  std::string config_origin_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RATE_LIMIT_SERVICE_H_
