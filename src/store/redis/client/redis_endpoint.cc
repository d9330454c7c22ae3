#include "src/store/redis/client/redis_endpoint.h"

#include <string>
#include <string_view>

#include "src/store/redis/client/redis_url_format.h"

namespace sluice {
namespace {

internal::RedisUrlTopology UrlTopology(RedisEndpoint::Topology topology) {
  switch (topology) {
    case RedisEndpoint::Topology::kCluster:
      return internal::RedisUrlTopology::kCluster;
    case RedisEndpoint::Topology::kSentinel:
      return internal::RedisUrlTopology::kSentinel;
    case RedisEndpoint::Topology::kServer:
      break;
  }
  return internal::RedisUrlTopology::kServer;
}

}  // namespace

std::string RedisNodeName(const RedisNode& node) {
  return internal::RedisHostPort(node.host, node.port);
}

std::string RedisEndpoint::HostPort() const { return internal::RedisHostPort(host, port); }

std::string RedisEndpoint::Redacted() const {
  return internal::RedactedRedisUrl(*this, UrlTopology(topology), [this](auto&& param) {
    for (const auto& [key, value] : other_params) param(key, value);
  });
}

RedisEndpoint RedisEndpoint::ForNode(std::string_view node_host, int node_port) const {
  RedisEndpoint one = internal::OneRedisServer(*this, node_host, node_port);
  one.topology = Topology::kServer;
  return one;
}

}  // namespace sluice
