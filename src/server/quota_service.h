// QuotaService: the rate limit quota service (RLQS, docs/rlqs.md) as sluiced serves it, when the
// settings turn it on: its allocator on the store's Redis (on a connection of its own) or in
// memory, and its gRPC service for the gRPC listener, whose usage reports go to the process's
// observers (ProcessObserver::OnQuotaUsage(): reported requests count as RLS decisions do) and
// whose families are a gauge source.
//
// Example:
//   absl::StatusOr<std::unique_ptr<QuotaService>> quota = QuotaService::Open(settings, service,
//                                                                            observers);
//   if (*quota != nullptr) grpc_services.push_back(&(*quota)->grpc_service());
//
// Thread safety: as RlqsGrpcService (src/server/grpc/rlqs_grpc_service.h).
#ifndef SLUICE_SERVER_QUOTA_SERVICE_H_
#define SLUICE_SERVER_QUOTA_SERVICE_H_

#include <memory>

#include "absl/status/statusor.h"

#include "src/server/grpc/rlqs_grpc_service.h"
#include "src/server/observe/gauge_source.h"
#include "src/server/observe/process_observer.h"
#include "src/server/rlqs/quota_allocator.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/settings.h"

namespace sluice::server {

class QuotaService {
 public:
  // QuotaService::Open()
  //
  // Returns the service, or null when the settings leave RLQS off or serve gRPC on the nghttp2
  // engine (unary methods only: warned). Returns the allocator's error ("rlqs: ..."), e.g.
  // InvalidArgument for a store URL it cannot use. `rls` (for its config) and `observer` must
  // outlive the service.
  static absl::StatusOr<std::unique_ptr<QuotaService>> Open(const ServerSettings& settings,
                                                            RateLimitService& rls,
                                                            ProcessObserver& observer);
  QuotaService(const QuotaService&) = delete;
  QuotaService& operator=(const QuotaService&) = delete;
  ~QuotaService() = default;

  // For the gRPC listener.
  GrpcService& grpc_service() { return *grpc_; }
  // The sluice_rlqs_* families.
  const GaugeSource& gauges() const { return *grpc_; }

 private:
  QuotaService() = default;

  std::unique_ptr<QuotaAllocator> allocator_;
  std::unique_ptr<RlqsGrpcService> grpc_;  // uses `allocator_`: declared after it
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_QUOTA_SERVICE_H_
