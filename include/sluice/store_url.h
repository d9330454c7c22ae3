// StoreUrl: where limit state lives, as one URL string shared by every binary and config file.
//
// Accepted forms:
//   memory
//   redis://[[user]:password@]host[:port][/db][?param=value&...]
//   rediss://...                    (the same over TLS)
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
//
// Errors are InvalidArgument and never contain the password; log a StoreUrl through Redacted().
//
// Example:
//   absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://limiter:s3cret@10.0.0.5:6379/2");
//   if (!url.ok()) return url.status();
//   LOG(INFO) << "store: " << url->Redacted();  // redis://limiter:***@10.0.0.5:6379/2
//
// Thread safety: a value type; ParseStoreUrl() is thread-safe.
#ifndef SLUICE_STORE_URL_H_
#define SLUICE_STORE_URL_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace sluice {

struct StoreUrl {
  enum class Kind : uint8_t { kMemory, kRedis };

  static constexpr int kDefaultRedisPort = 6379;
  static constexpr int kMaxConnections = 64;

  Kind kind = Kind::kMemory;

  // The fields below are meaningful for Kind::kRedis only.

  // Host name or IP address, without brackets for IPv6 ("::1").
  std::string host = {};
  // TCP port. Default: 6379.
  int port = kDefaultRedisPort;
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

  friend bool operator==(const StoreUrl&, const StoreUrl&) = default;
};

// ParseStoreUrl()
//
// Returns the parsed URL, or InvalidArgument naming what is wrong (never quoting the password).
absl::StatusOr<StoreUrl> ParseStoreUrl(std::string_view url);

}  // namespace sluice

#endif  // SLUICE_STORE_URL_H_
