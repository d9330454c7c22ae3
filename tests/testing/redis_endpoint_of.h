// EndpointOf(): the Redis client's endpoint for a parsed store URL, for client tests that name
// their servers by URL as the store does.
//
// Example:
//   absl::StatusOr<StoreUrl> url = ParseStoreUrl(server->Url());
//   ASSERT_TRUE(url.ok());
//   auto client = RedisClient::Create({.endpoint = testing::EndpointOf(*url)});
//
// Thread safety: a pure function. Link sluice_redis_endpoint_url.
#ifndef SLUICE_TESTS_TESTING_REDIS_ENDPOINT_OF_H_
#define SLUICE_TESTS_TESTING_REDIS_ENDPOINT_OF_H_

#include "sluice/store_url.h"

#include "src/store/redis/client/redis_endpoint.h"
#include "src/store/redis/redis_endpoint_url.h"

namespace sluice::testing {

// EndpointOf()
//
// Returns RedisEndpointFromUrl(url), or a default RedisEndpoint (no host, which every client
// refuses) for the memory URL.
inline RedisEndpoint EndpointOf(const StoreUrl& url) {
  return RedisEndpointFromUrl(url).value_or(RedisEndpoint{});
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_REDIS_ENDPOINT_OF_H_
