#include "src/server/rlqs/quota_allocator_factory.h"

#include <memory>
#include <utility>

#include "sluice/store_url.h"

#include "src/server/rlqs/memory_quota_allocator.h"
#include "src/server/rlqs/redis_quota_allocator.h"
#include "src/store/redis/client/redis_router_factory.h"
#include "src/store/redis/redis_endpoint_url.h"

namespace sluice {
namespace {

// The Redis allocator holds its router weakly (as the store's runner does); this owns it.
class OwningRedisQuotaAllocator final : public QuotaAllocator {
 public:
  OwningRedisQuotaAllocator(std::shared_ptr<RedisRouter> router, const std::string& key_prefix)
      : router_(std::move(router)), allocator_(router_, {.key_prefix = key_prefix}) {}

  void Allocate(const QuotaReport& report, ShareCallback done) override {
    allocator_.Allocate(report, std::move(done));
  }

 private:
  std::shared_ptr<RedisRouter> router_;
  RedisQuotaAllocator allocator_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QuotaAllocator>> OpenQuotaAllocator(const std::string& store_url,
                                                                   const std::string& key_prefix,
                                                                   Clock& clock) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(store_url);
  if (!url.ok()) return url.status();
  if (url->kind == StoreUrl::Kind::kMemory) return std::make_unique<MemoryQuotaAllocator>(clock);
  absl::StatusOr<RedisEndpoint> endpoint = RedisEndpointFromUrl(*url);
  if (!endpoint.ok()) return endpoint.status();
  absl::StatusOr<std::shared_ptr<RedisRouter>> router =
      CreateRedisRouter(RedisClientOptions{.endpoint = *std::move(endpoint)});
  if (!router.ok()) return router.status();
  return std::make_unique<OwningRedisQuotaAllocator>(*std::move(router), key_prefix);
}

}  // namespace sluice
