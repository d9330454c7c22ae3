// RateLimitService: envoyproxy/ratelimit's ShouldRateLimit semantics over a sluice Store.
//
// For each request descriptor: a per-descriptor `limit` override wins over the config; otherwise
// the config's most specific rule applies (RateLimitConfig::Match). `unlimited` rules answer OK
// with limit_remaining 4294967295 and never touch the store; `requests_per_unit: 0` denies without
// a store call. Hits: a descriptor's `hits_addend` wins even when 0 (a check that counts nothing),
// else max(1, request hits_addend). Every enforced limit of every descriptor is decided in ONE
// all-or-nothing Store::CheckAll, so a request rejected by one limit consumes none of the others
// (envoyproxy/ratelimit increments the others). Shadow-mode limits are decided in a separate call,
// counted, and never deny. `quota_mode` rules follow the reference: the request is over when a
// normal limit is over or when every quota-mode descriptor is; a quota-mode descriptor over on its
// own is reported OVER_LIMIT in its status while the overall code stays OK. `statuses` has one
// entry per request descriptor, in order.
//
// Errors: InvalidArgument for a malformed request (nothing is recorded); a store failure that the
// store's failure policy does not answer is Unavailable.
//
// Thread safety: thread-safe. SetConfig() swaps the config atomically; requests in flight finish on
// the config they started with.
#ifndef SLUICE_SERVER_RATE_LIMIT_SERVICE_H_
#define SLUICE_SERVER_RATE_LIMIT_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "envoy/service/ratelimit/v3/rls.pb.h"

#include "sluice/clock.h"
#include "sluice/config.h"
#include "sluice/store.h"

#include "src/server/metrics.h"
#include "src/server/over_limit_cache.h"
#include "src/util/mutex.h"

namespace sluice::server {

using RateLimitRequest = envoy::service::ratelimit::v3::RateLimitRequest;
using RateLimitResponse = envoy::service::ratelimit::v3::RateLimitResponse;

struct RateLimitServiceOptions {
  // Time for latency metrics and the over-limit cache. Not owned. Default: Clock::Real().
  Clock* clock = nullptr;
  // Add RateLimit-Limit / RateLimit-Remaining / RateLimit-Reset (and Retry-After when over the
  // limit) to response_headers_to_add, from the descriptor closest to its limit. Default: off.
  bool response_headers = false;
  // Treat every rule as shadow_mode (envoyproxy/ratelimit's SHADOW_MODE). Default: off.
  bool global_shadow_mode = false;
  // Hits above this share of a limit count as near_limit. Default: 0.8, as the reference.
  double near_limit_ratio = 0.8;
  // Request bounds; larger requests are INVALID_ARGUMENT.
  size_t max_descriptors = 64;
  size_t max_entries_per_descriptor = 32;
  size_t max_value_bytes = 4096;
  // Entries of the over-limit cache; 0 turns it off. Default: off (see docs/sluiced.md).
  size_t over_limit_cache_entries = 0;
};

class RateLimitService {
 public:
  using Callback = absl::AnyInvocable<void(absl::StatusOr<RateLimitResponse>) &&>;

  // `store` and `metrics` must outlive the service.
  RateLimitService(Store& store, Metrics& metrics, RateLimitServiceOptions options);

  void SetConfig(std::shared_ptr<const RateLimitConfig> config);
  std::shared_ptr<const RateLimitConfig> config() const;

  // RateLimitService::ShouldRateLimit()
  //
  // Decides `request` and completes `done` exactly once: inline for invalid requests and for
  // requests that need no store call, else on the store's completion thread.
  void ShouldRateLimit(const RateLimitRequest& request, Callback done);

 private:
  struct Call;
  // Decides the enforced (not shadow, not quota-mode) limits, then finishes when nothing else is
  // pending.
  void DecideEnforced(const std::shared_ptr<Call>& call);
  // Stores the store's answer for the given slots, or the call's error.
  void Record(Call& call, const std::vector<size_t>& slot_indexes,
              absl::StatusOr<MultiDecision> result);
  void Record(Call& call, size_t slot_index, absl::StatusOr<Decision> result);
  // True when the request has quota-mode descriptors and every one of them is over.
  static bool AllQuotaDescriptorsOver(const Call& call);
  void Finish(const std::shared_ptr<Call>& call);

  Store& store_;
  Metrics& metrics_;
  const RateLimitServiceOptions options_;
  Clock& clock_;
  std::unique_ptr<OverLimitCache> over_limit_cache_;
  mutable internal::Mutex mu_;
  std::shared_ptr<const RateLimitConfig> config_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RATE_LIMIT_SERVICE_H_
