// CreateRedisRouter(): the router (redis_router.h) for an endpoint's topology.
//
//   kServer    (redis://, rediss://)                    RedisClient (one server)
//   kCluster   (redis-cluster://, rediss-cluster://)    ClusterClient (slots routed to primaries)
//   kSentinel  (redis-sentinel://, rediss-sentinel://)  SentinelClient (the primary Sentinels name)
//
// Thread safety: thread-safe.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_ROUTER_FACTORY_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_ROUTER_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_router.h"

namespace sluice {

// CreateRedisRouter()
//
// Returns a router for `options.endpoint` that connects in the background, or InvalidArgument for
// bad options (as RedisClient::Create()). `options` applies to every server the router connects to.
absl::StatusOr<std::shared_ptr<RedisRouter>> CreateRedisRouter(const RedisClientOptions& options);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_ROUTER_FACTORY_H_
