// RedisEndpoint: the Redis deployment a client connects to, as the client sees it: its topology
// (one server, a Cluster, a primary found through Sentinels), its hosts, the credentials and
// database, the TLS and Sentinel settings, and the connection parameters the operator gave.
//
// The client's own type, so that the client library does not depend on the store URL
// (sluice/store_url.h), a store-level concept that also carries the store's settings. The store
// turns its URL into a RedisEndpoint once (src/store/redis/redis_endpoint_url.h); the client
// derives each server's endpoint from it (ForNode()). The text forms (HostPort(), Redacted()) and
// ForNode() are written once, in redis_url_format.h, for this type and the store URL alike.
//
// Example:
//   RedisEndpoint endpoint{.host = "10.0.0.5", .port = 6380,
//                          .nodes = {{.host = "10.0.0.5", .port = 6380}}, .db = 2};
//   auto client = RedisClient::Create({.endpoint = endpoint});
//   spdlog::info("redis {}", endpoint.Redacted());  // redis://10.0.0.5:6380/2
//
// Thread safety: value types.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_ENDPOINT_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_ENDPOINT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice {

// One server's address.
struct RedisNode {
  static constexpr int kDefaultPort = 6379;

  // Host name or IP address, without brackets for IPv6 ("::1").
  std::string host = {};
  int port = kDefaultPort;

  friend bool operator==(const RedisNode&, const RedisNode&) = default;
};

// RedisNodeName()
//
// Returns "host:port", or "[host]:port" for an IPv6 address, for messages and map keys.
std::string RedisNodeName(const RedisNode& node);

struct RedisEndpoint {
  // kServer: one server; kCluster: a Redis Cluster; kSentinel: a primary found through Sentinels.
  enum class Topology : uint8_t { kServer, kCluster, kSentinel };

  static constexpr int kMaxConnections = 64;

  Topology topology = Topology::kServer;
  // The first host. Default port: 6379.
  std::string host = {};
  int port = RedisNode::kDefaultPort;
  // Every host in order, the first one included: the seeds of a Cluster, the Sentinels of a
  // Sentinel deployment, the one server otherwise.
  std::vector<RedisNode> nodes = {};
  // ACL user; empty means the default user (AUTH with the password alone).
  std::string username = {};
  // The password; empty when there is none or it comes from `password_file`.
  std::string password = {};
  // File holding the password, read on every (re)connect; empty when not given.
  std::string password_file = {};
  // Database index for SELECT. Default: 0.
  int db = 0;
  // TLS (rediss), and how the server is verified: see sluice/store_url.h for each parameter.
  bool tls = false;
  bool tls_verify = true;
  std::string tls_ca_file = {};
  std::string tls_cert_file = {};
  std::string tls_key_file = {};
  std::string tls_server_name = {};
  // kSentinel: the name of the primary the Sentinels monitor, the Sentinels' own credentials, and
  // whether they speak TLS too.
  std::string primary_name = {};
  std::string sentinel_username = {};
  std::string sentinel_password = {};
  std::string sentinel_password_file = {};
  bool sentinel_tls = true;
  // The operator's connection parameters, when given: they override the client options' fields
  // of the same name.
  std::optional<std::chrono::milliseconds> command_timeout = {};
  std::optional<std::chrono::milliseconds> connect_timeout = {};
  std::optional<int> connections = {};
  // Parameters of the deployment's address that the client does not read (the store's own, such
  // as min_replicas), as (name, value) in the order written, so that Redacted() names the
  // deployment the way it was configured.
  std::vector<std::pair<std::string, std::string>> other_params = {};

  // RedisEndpoint::HostPort()
  //
  // Returns "host:port" ("[::1]:6380" for IPv6) of the first host, for messages.
  std::string HostPort() const;

  // RedisEndpoint::Redacted()
  //
  // Returns the endpoint as a URL with the passwords replaced by "***", safe for logs: e.g.
  // "rediss://limiter:***@[::1]:6380/2?tls_ca_file=/etc/ca.pem". The same text as the store
  // URL's StoreUrl::Redacted() for the URL the endpoint was made from.
  std::string Redacted() const;

  // RedisEndpoint::ForNode()
  //
  // Returns the endpoint of the one server at `node_host`:`node_port`, with the same
  // credentials, TLS settings and parameters and no Sentinel settings: how a Cluster or Sentinel
  // client reaches each server it finds.
  RedisEndpoint ForNode(std::string_view node_host, int node_port) const;

  friend bool operator==(const RedisEndpoint&, const RedisEndpoint&) = default;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_ENDPOINT_H_
