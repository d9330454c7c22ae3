// RedisEndpointFromUrl(): the Redis client's endpoint (client/redis_endpoint.h) for a store URL.
//
// The one place that knows both the store URL (sluice/store_url.h, the store's concept) and the
// client's endpoint, so that the client library does not depend on the URL parser. The store
// converts its URL once, here, and hands the endpoint to the client.
//
// Example:
//   absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis-cluster://10.0.0.5:7000,10.0.0.6:7000");
//   if (!url.ok()) return url.status();
//   SLUICE_ASSIGN_OR_RETURN(RedisEndpoint endpoint, RedisEndpointFromUrl(*url));
//   auto router = CreateRedisRouter({.endpoint = endpoint});
//
// Thread safety: a pure function, thread-safe.
#ifndef SLUICE_STORE_REDIS_REDIS_ENDPOINT_URL_H_
#define SLUICE_STORE_REDIS_REDIS_ENDPOINT_URL_H_

#include "absl/status/statusor.h"

#include "sluice/store_url.h"

#include "src/store/redis/client/redis_endpoint.h"

namespace sluice {

// RedisEndpointFromUrl()
//
// Returns the endpoint of a Redis URL (redis://, redis-cluster://, redis-sentinel:// and their
// rediss forms): every setting the client reads, and the store's own parameters (min_replicas,
// min_replicas_timeout_ms, functions) as RedisEndpoint::other_params, so that the endpoint's
// Redacted() is the URL's. Returns InvalidArgument for the memory URL.
absl::StatusOr<RedisEndpoint> RedisEndpointFromUrl(const StoreUrl& url);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_REDIS_ENDPOINT_URL_H_
