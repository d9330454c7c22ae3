// CreateRedisRouter(): the router (redis_router.h) for a store URL's topology.
//
//   redis://, rediss://                    RedisClient (one server)
//   redis-cluster://, rediss-cluster://    ClusterClient (slots routed to their primaries)
//   redis-sentinel://, rediss-sentinel://  SentinelClient (the primary the Sentinels name)
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
// Returns a router for `options.url` that connects in the background, or InvalidArgument for bad
// options (as RedisClient::Create()). `options` applies to every server the router connects to.
absl::StatusOr<std::shared_ptr<RedisRouter>> CreateRedisRouter(const RedisClientOptions& options);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_ROUTER_FACTORY_H_
