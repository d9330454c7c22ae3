#include "src/store/redis/redis_endpoint_url.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sluice {

// Both bound the same parameter: the client checks what the URL parser already refused.
static_assert(RedisEndpoint::kMaxConnections == StoreUrl::kMaxConnections);
static_assert(RedisNode::kDefaultPort == StoreUrl::kDefaultRedisPort);

absl::StatusOr<RedisEndpoint> RedisEndpointFromUrl(const StoreUrl& url) {
  RedisEndpoint endpoint;
  switch (url.kind) {
    case StoreUrl::Kind::kRedis:
      endpoint.topology = RedisEndpoint::Topology::kServer;
      break;
    case StoreUrl::Kind::kRedisCluster:
      endpoint.topology = RedisEndpoint::Topology::kCluster;
      break;
    case StoreUrl::Kind::kRedisSentinel:
      endpoint.topology = RedisEndpoint::Topology::kSentinel;
      break;
    case StoreUrl::Kind::kMemory:
      return absl::InvalidArgumentError("redis client: the store URL is not a Redis URL");
  }
  endpoint.host = url.host;
  endpoint.port = url.port;
  endpoint.nodes.reserve(url.nodes.size());
  for (const StoreUrl::Node& node : url.nodes) {
    endpoint.nodes.push_back({.host = node.host, .port = node.port});
  }
  endpoint.username = url.username;
  endpoint.password = url.password;
  endpoint.password_file = url.password_file;
  endpoint.db = url.db;
  endpoint.tls = url.tls;
  endpoint.tls_verify = url.tls_verify;
  endpoint.tls_ca_file = url.tls_ca_file;
  endpoint.tls_cert_file = url.tls_cert_file;
  endpoint.tls_key_file = url.tls_key_file;
  endpoint.tls_server_name = url.tls_server_name;
  endpoint.primary_name = url.primary_name;
  endpoint.sentinel_username = url.sentinel_username;
  endpoint.sentinel_password = url.sentinel_password;
  endpoint.sentinel_password_file = url.sentinel_password_file;
  endpoint.sentinel_tls = url.sentinel_tls;
  endpoint.command_timeout = url.command_timeout;
  endpoint.connect_timeout = url.connect_timeout;
  endpoint.connections = url.connections;
  // The store's parameters, in the order StoreUrl::Redacted() writes them.
  if (url.min_replicas != 0) {
    endpoint.other_params.emplace_back("min_replicas", absl::StrCat(url.min_replicas));
  }
  if (url.min_replicas_timeout != StoreUrl{}.min_replicas_timeout) {
    endpoint.other_params.emplace_back("min_replicas_timeout_ms",
                                       absl::StrCat(url.min_replicas_timeout.count()));
  }
  if (!url.functions) endpoint.other_params.emplace_back("functions", "false");
  if (url.lease) endpoint.other_params.emplace_back("lease", "true");
  if (url.lease_refresh) {
    endpoint.other_params.emplace_back("lease_refresh_ms",
                                       absl::StrCat(url.lease_refresh->count()));
  }
  if (url.lease_ttl) {
    endpoint.other_params.emplace_back("lease_ttl_ms", absl::StrCat(url.lease_ttl->count()));
  }
  if (url.lease_max_units) {
    endpoint.other_params.emplace_back("lease_max_units", absl::StrCat(*url.lease_max_units));
  }
  return endpoint;
}

}  // namespace sluice
