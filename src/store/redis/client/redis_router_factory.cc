#include "src/store/redis/client/redis_router_factory.h"

#include <utility>

#include "absl/status/status.h"

#include "src/store/redis/client/cluster/cluster_client.h"
#include "src/store/redis/client/sentinel/sentinel_client.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<RedisRouter>> CreateRedisRouter(const RedisClientOptions& options) {
  switch (options.endpoint.topology) {
    case RedisEndpoint::Topology::kServer: {
      absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(options);
      if (!client.ok()) return client.status();
      return std::shared_ptr<RedisRouter>(std::shared_ptr<RedisClient>(*std::move(client)));
    }
    case RedisEndpoint::Topology::kCluster: {
      absl::StatusOr<std::shared_ptr<ClusterClient>> cluster =
          ClusterClient::Create({.node = options});
      if (!cluster.ok()) return cluster.status();
      return std::shared_ptr<RedisRouter>(*std::move(cluster));
    }
    case RedisEndpoint::Topology::kSentinel: {
      absl::StatusOr<std::shared_ptr<SentinelClient>> sentinel =
          SentinelClient::Create({.node = options});
      if (!sentinel.ok()) return sentinel.status();
      return std::shared_ptr<RedisRouter>(*std::move(sentinel));
    }
  }
  return absl::InvalidArgumentError("redis client: unknown topology");
}

}  // namespace sluice
