#include "src/store/redis/client/redis_router_factory.h"

#include <utility>

#include "absl/status/status.h"

#include "src/store/redis/client/cluster_client.h"
#include "src/store/redis/client/sentinel_client.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<RedisRouter>> CreateRedisRouter(const RedisClientOptions& options) {
  switch (options.url.kind) {
    case StoreUrl::Kind::kRedis: {
      absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(options);
      if (!client.ok()) return client.status();
      return std::shared_ptr<RedisRouter>(std::shared_ptr<RedisClient>(*std::move(client)));
    }
    case StoreUrl::Kind::kRedisCluster: {
      absl::StatusOr<std::shared_ptr<ClusterClient>> cluster =
          ClusterClient::Create({.node = options});
      if (!cluster.ok()) return cluster.status();
      return std::shared_ptr<RedisRouter>(*std::move(cluster));
    }
    case StoreUrl::Kind::kRedisSentinel: {
      absl::StatusOr<std::shared_ptr<SentinelClient>> sentinel =
          SentinelClient::Create({.node = options});
      if (!sentinel.ok()) return sentinel.status();
      return std::shared_ptr<RedisRouter>(*std::move(sentinel));
    }
    case StoreUrl::Kind::kMemory:
      break;
  }
  return absl::InvalidArgumentError("redis client: the store URL is not a Redis URL");
}

}  // namespace sluice
