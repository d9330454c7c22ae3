// RlqsGrpcService's state, shared by the service (rlqs_grpc_service.cc) and its streams
// (rlqs_stream.cc). Internal to those two files.
//
// Thread safety: Impl's members are guarded as their comments say; the counters are atomic.
#ifndef SLUICE_SERVER_GRPC_RLQS_GRPC_SERVICE_IMPL_H_
#define SLUICE_SERVER_GRPC_RLQS_GRPC_SERVICE_IMPL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "envoy/service/rate_limit_quota/v3/rlqs.grpc.pb.h"
#include <grpcpp/grpcpp.h>

#include "src/server/grpc/rlqs_grpc_service.h"
#include "src/util/log_throttle.h"

namespace sluice::server {
namespace rlqs_internal {

namespace rlqs = envoy::service::rate_limit_quota::v3;
using Reports = rlqs::RateLimitQuotaUsageReports;
using Response = rlqs::RateLimitQuotaResponse;

class RlqsStream;  // rlqs_stream.h

}  // namespace rlqs_internal

using rlqs_internal::RlqsStream;

struct RlqsGrpcService::Impl {
  Impl(RateLimitService& rls_in, QuotaAllocator& allocator_in, const RlqsGrpcServiceOptions& o)
      : rls(rls_in),
        allocator(allocator_in),
        options(o),
        clock(o.clock != nullptr ? *o.clock : Clock::Real()),
        service(*this) {}

  // Counts a stream in; false (refused) past max_streams.
  bool Open() {
    std::lock_guard lock(mu);
    if (open >= options.max_streams) return false;
    ++open;
    return true;
  }
  // Keeps `state` as the rule's last allocation; a new rule past the bound is not kept.
  void Record(const std::string& stats_key, RlqsBucketState state) {
    std::lock_guard lock(buckets_mu);
    if (buckets.size() >= 10'000 && !buckets.contains(stats_key)) return;
    buckets[stats_key] = std::move(state);
  }
  void Close() {
    std::lock_guard lock(mu);
    --open;
    idle.notify_all();
  }
  // The streams a top-up pass visits (TopUpAll()). Unregister() waits for a pass in progress.
  void Register(RlqsStream* stream) {
    std::lock_guard lock(streams_mu);
    streams.insert(stream);
  }
  void Unregister(RlqsStream* stream) {
    std::lock_guard lock(streams_mu);
    streams.erase(stream);
  }
  void TopUpAll();

  class Service final : public rlqs_internal::rlqs::RateLimitQuotaService::CallbackService {
   public:
    explicit Service(Impl& impl) : impl_(impl) {}
    grpc::ServerBidiReactor<rlqs_internal::Reports, rlqs_internal::Response>* StreamRateLimitQuotas(
        grpc::CallbackServerContext* context) override;

   private:
    Impl& impl_;
  };

  RateLimitService& rls;
  QuotaAllocator& allocator;
  const RlqsGrpcServiceOptions options;
  Clock& clock;
  std::mutex mu;
  std::condition_variable idle;
  size_t open = 0;
  mutable std::mutex buckets_mu;
  absl::flat_hash_map<std::string, RlqsBucketState> buckets;
  std::mutex streams_mu;
  absl::flat_hash_set<RlqsStream*> streams;
  struct Counters {
    std::atomic<uint64_t> streams_refused{0}, reports{0}, reports_throttled{0},
        reports_malformed{0}, buckets_assigned{0}, buckets_abandoned{0}, allocation_errors{0},
        requests_allowed{0}, requests_denied{0}, top_up_rounds{0}, buckets_topped_up{0};
  } counters;
  // Store errors come per bucket, as many as a report has: one line a second.
  internal::LogThrottle allocation_error_log;
  Service service;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_RLQS_GRPC_SERVICE_IMPL_H_
