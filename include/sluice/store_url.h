// StoreUrl: where limit state lives, as one URL string shared by every binary and config file.
//
// Accepted forms:
//   memory
//   redis://[[user]:password@]host[:port][/db][?param=value&...]
//   rediss://...                    (the same over TLS)
//   redis-cluster://[[user]:password@]host:port[,host:port...][?param=value&...]
//   rediss-cluster://...            (Redis Cluster over TLS; any node is a seed, no database)
//   redis-sentinel://[[user]:password@]host:port[,host:port...]/primary_name[/db][?param=...]
//   rediss-sentinel://...           (Sentinel-managed primary over TLS)
//
// For redis-sentinel the hosts are the Sentinels, `primary_name` the name they monitor, and the
// user and password those of the data servers; the Sentinels' own credentials are parameters.
//
// `host` is a name (letters, digits, '.', '-' and '_'), an IPv4 address or a bracketed IPv6
// address (`redis://[::1]:6380`). The port defaults to 6379 and the database to 0. Reserved
// characters in the user or password (`@ : / ? # %` and others) must be percent-encoded (`p%40ss`
// for `p@ss`); prefer `password_file` for real secrets so they stay out of command lines and config
// files. A user without a password is an error unless `password_file` supplies one. An unencoded
// `@` after the host (in the path, a parameter or a fragment) is an error: it is the mark of a
// password whose unencoded `/ ? #` ended the user information early, so a parameter value holding
// `@` must write it as `%40`.
//
// Query parameters (anything else is InvalidArgument, so a typo is caught at start-up):
//   password_file=PATH       the password is the content of PATH (one trailing newline removed),
//                            read on every (re)connect so a rotated secret is picked up; it
//                            cannot be combined with a password in the URL
//   timeout_ms=N             per-command deadline in ms (RedisClientOptions::command_timeout)
//   connect_timeout_ms=N     deadline for connect + TLS + AUTH/SELECT, in ms
//   connections=N            connections multiplexing all commands, 1..64 (default 1)
//   tls_verify=true|false    rediss only: verify the server certificate and name (default true;
//                            false is for tests and must never be used in production)
//   tls_ca_file=PATH         rediss only: CA bundle (PEM) to verify against, default the system's
//   tls_cert_file=PATH       rediss only: client certificate chain (PEM), for tls-auth-clients
//   tls_key_file=PATH        rediss only: client private key (PEM); required with tls_cert_file
//   tls_server_name=NAME     rediss only: name to send as SNI and to verify, default `host`
//   min_replicas=N           after each decision, WAIT until N replicas acknowledged its write
//                            (0..16, default 0: no wait); on timeout the failure policy answers
//   min_replicas_timeout_ms=N  the WAIT's timeout in ms (default 10)
//   functions=true|false     run the scripts as functions (FCALL) where the server has them
//                            (default true); false: always EVALSHA (docs/redis.md, "Functions")
//   lease=true|false         spend units leased from Redis in memory (docs/redis.md, "Leases");
//                            default false
//   lease_refresh_ms=N       a lease holds the units its key used in N ms (1..60000, default 500)
//   lease_ttl_ms=N           sliding_log, token_bucket and gcra leases last N ms (1..60000,
//                            default 1000; at most the limit's period)
//   lease_max_units=N        most units one lease asks for (default 100000)
//   sentinel_password=P      sentinel only: the Sentinels' password (percent-encoded); redacted
//   sentinel_password_file=PATH  sentinel only: the Sentinels' password from a file
//   sentinel_username=U      sentinel only: the Sentinels' ACL user
//   sentinel_tls=true|false  rediss-sentinel only: whether the Sentinels speak TLS too (default
//                            true)
//
// Errors are InvalidArgument and never contain the password; log a StoreUrl through Redacted().
//
// Example:
//   absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://limiter:s3cret@10.0.0.5:6379/2");
//   if (!url.ok()) return url.status();
//   std::clog << "store: " << url->Redacted() << "\n";  // redis://limiter:***@10.0.0.5:6379/2
//
// Thread safety: a value type; ParseStoreUrl() is thread-safe.
#ifndef SLUICE_STORE_URL_H_
#define SLUICE_STORE_URL_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice {

struct StoreUrl {
  // kRedis: one server; kRedisCluster: a Redis Cluster; kRedisSentinel: a primary found through
  // Sentinels.
  enum class Kind : uint8_t { kMemory, kRedis, kRedisCluster, kRedisSentinel };

  static constexpr int kDefaultRedisPort = 6379;
  static constexpr int kDefaultSentinelPort = 26379;
  static constexpr int kMaxConnections = 64;
  static constexpr int kMaxHosts = 64;
  static constexpr int kMaxMinReplicas = 16;

  // One host of the URL.
  struct Node {
    std::string host;
    int port = kDefaultRedisPort;
    friend bool operator==(const Node&, const Node&) = default;
  };

  Kind kind = Kind::kMemory;

  // The fields below are meaningful for the Redis kinds only.

  // Host name or IP address of the first host, without brackets for IPv6 ("::1").
  std::string host = {};
  // TCP port of the first host. Default: 6379 (26379 for a Sentinel).
  int port = kDefaultRedisPort;
  // Every host of the URL in order, the first one included: the seeds of a Cluster, the Sentinels
  // of a Sentinel URL, the one server of redis://.
  std::vector<Node> nodes = {};
  // kRedisSentinel: the name of the primary the Sentinels monitor.
  std::string primary_name = {};
  // min_replicas and min_replicas_timeout_ms; 0 replicas means no WAIT.
  int min_replicas = 0;
  std::chrono::milliseconds min_replicas_timeout{10};
  // `functions`: false forces EVALSHA (RedisStoreOptions::use_functions).
  bool functions = true;
  // `lease` and its sizing parameters, when given (OpenStore() puts a lease store in front).
  bool lease = false;
  std::optional<std::chrono::milliseconds> lease_refresh = {};
  std::optional<std::chrono::milliseconds> lease_ttl = {};
  std::optional<int64_t> lease_max_units = {};
  // kRedisSentinel: the Sentinels' own credentials and whether they speak TLS.
  std::string sentinel_username = {};
  std::string sentinel_password = {};
  std::string sentinel_password_file = {};
  bool sentinel_tls = true;
  // True for rediss://.
  bool tls = false;
  // ACL user; empty means the default user (AUTH with the password alone).
  std::string username = {};
  // Percent-decoded password; empty when there is none or it comes from `password_file`.
  std::string password = {};
  // File holding the password; empty when not given.
  std::string password_file = {};
  // Database index for SELECT. Default: 0.
  int db = 0;
  // `timeout_ms`, when given.
  std::optional<std::chrono::milliseconds> command_timeout = {};
  // `connect_timeout_ms`, when given.
  std::optional<std::chrono::milliseconds> connect_timeout = {};
  // `connections`, when given.
  std::optional<int> connections = {};
  // TLS settings, for rediss:// only; see the parameters above.
  bool tls_verify = true;
  std::string tls_ca_file = {};
  std::string tls_cert_file = {};
  std::string tls_key_file = {};
  std::string tls_server_name = {};

  // StoreUrl::Redacted()
  //
  // Returns the URL in canonical form with the password replaced by "***", safe for logs:
  // "memory", or e.g. "rediss://limiter:***@[::1]:6380/2?tls_ca_file=/etc/ca.pem".
  std::string Redacted() const;

  // StoreUrl::HostPort()
  //
  // Returns "host:port" ("[::1]:6380" for IPv6), for error messages.
  std::string HostPort() const;

  // StoreUrl::ForNode()
  //
  // Returns this URL as a redis:// (or rediss://) URL of one server at `host`:`port`, with the
  // same credentials, TLS settings and parameters: how a Cluster or Sentinel client reaches each
  // server it finds.
  StoreUrl ForNode(std::string_view host, int port) const;

  bool is_redis() const { return kind != Kind::kMemory; }

  friend bool operator==(const StoreUrl&, const StoreUrl&) = default;
};

// ParseStoreUrl()
//
// Returns the parsed URL, or InvalidArgument naming what is wrong (never quoting the password).
absl::StatusOr<StoreUrl> ParseStoreUrl(std::string_view url);

}  // namespace sluice

#endif  // SLUICE_STORE_URL_H_
