#include "src/server/quota_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "sluice/clock.h"

#include "src/server/rlqs/quota_allocator_factory.h"

namespace sluice::server {

absl::StatusOr<std::unique_ptr<QuotaService>> QuotaService::Open(const ServerSettings& settings,
                                                                 RateLimitService& rls,
                                                                 ProcessObserver& observer) {
  if (!settings.rlqs) return nullptr;
  if (settings.grpc_engine == "nghttp2") {
    spdlog::warn("rlqs: not served on the nghttp2 gRPC engine (unary methods only)");
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<QuotaAllocator>> allocator =
      OpenQuotaAllocator(settings.store, settings.key_prefix, Clock::Real());
  if (!allocator.ok()) {
    return absl::Status(allocator.status().code(),
                        absl::StrCat("rlqs: ", allocator.status().message()));
  }
  std::unique_ptr<QuotaService> quota(new QuotaService());
  quota->allocator_ = *std::move(allocator);
  quota->grpc_ = std::make_unique<RlqsGrpcService>(
      rls, *quota->allocator_,
      RlqsGrpcServiceOptions{
          .top_up_interval = settings.rlqs_top_up_interval,
          .on_usage = [&observer](const RlqsUsage& usage) { observer.OnQuotaUsage(usage); }});
  spdlog::info("rlqs: serving the rate limit quota service on the gRPC listener");
  return quota;
}

}  // namespace sluice::server
