#include "src/store/redis/redis_endpoint_url.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

#include "sluice/store_url.h"

namespace sluice {
namespace {

// Every form of Redis URL, with each parameter the client reads and the store's own ones.
constexpr const char* kUrls[] = {
    "redis://127.0.0.1:6379",
    "redis://limiter:s3cret@10.0.0.5:6380/2",
    "redis://:pw@[::1]:6380?timeout_ms=15&connect_timeout_ms=200&connections=4",
    "redis://us%40er:p%40ss@h",
    "redis://u%2Fv@h?password_file=/run/secrets/redis%20pw~x",
    "rediss://h:6380?tls_verify=false&tls_ca_file=/etc/ca.pem&tls_cert_file=/c.pem"
    "&tls_key_file=/k.pem&tls_server_name=redis.internal",
    "redis://h?min_replicas=1&min_replicas_timeout_ms=5&functions=false&timeout_ms=50",
    "redis-cluster://u:p@h1:7000,h2:7001,[::1]:7002?connections=2&min_replicas=1",
    "rediss-cluster://h1:7000?tls_verify=false",
    "rediss-sentinel://:datapw@s1:26379,s2:26380/mymaster/3?sentinel_password=sp"
    "&sentinel_username=su&sentinel_tls=false&functions=false",
    "rediss-sentinel://s1/mymaster?sentinel_password_file=/sp&min_replicas_timeout_ms=7",
};

// Verifies that the endpoint names a deployment exactly as the store URL does, in logs and in
// Describe(), for the deployment and for each server a router derives from it.
TEST(RedisEndpointFromUrl, RedactsAndDerivesNodesAsTheStoreUrlDoes) {
  for (const char* text : kUrls) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(text);
    ASSERT_TRUE(url.ok()) << text << ": " << url.status();
    absl::StatusOr<RedisEndpoint> endpoint = RedisEndpointFromUrl(*url);
    ASSERT_TRUE(endpoint.ok()) << text << ": " << endpoint.status();
    EXPECT_EQ(endpoint->Redacted(), url->Redacted()) << text;
    EXPECT_EQ(endpoint->HostPort(), url->HostPort()) << text;
    EXPECT_EQ(endpoint->ForNode("10.1.2.3", 7005).Redacted(),
              url->ForNode("10.1.2.3", 7005).Redacted())
        << text;
    EXPECT_EQ(endpoint->ForNode("::2", 7005).HostPort(), url->ForNode("::2", 7005).HostPort())
        << text;
  }
}

TEST(RedisEndpointFromUrl, MapsEachKindToItsTopology) {
  EXPECT_EQ(RedisEndpointFromUrl(*ParseStoreUrl("redis://h"))->topology,
            RedisEndpoint::Topology::kServer);
  EXPECT_EQ(RedisEndpointFromUrl(*ParseStoreUrl("redis-cluster://h:7000"))->topology,
            RedisEndpoint::Topology::kCluster);
  EXPECT_EQ(RedisEndpointFromUrl(*ParseStoreUrl("redis-sentinel://h/m"))->topology,
            RedisEndpoint::Topology::kSentinel);
}

TEST(RedisEndpointFromUrl, RefusesTheMemoryUrl) {
  EXPECT_TRUE(absl::IsInvalidArgument(RedisEndpointFromUrl(StoreUrl{}).status()));
}

}  // namespace
}  // namespace sluice
