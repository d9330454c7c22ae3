// How a Redis deployment is written as text: "host:port", percent-encoding, the URL with its
// secrets redacted, and the one-server deployment a router derives for each server it finds.
//
// Shared by the client's RedisEndpoint (redis_endpoint.h) and the store URL (sluice/store_url.h):
// both name a deployment the same way, in logs and errors, and spell their fields alike, so the
// functions below are templates over either. The client knows nothing of the store URL; the store
// URL's library includes this header without linking the client (it is header-only).
//
// Example:
//   std::string text = internal::RedactedRedisUrl(endpoint, internal::RedisUrlTopology::kServer,
//                                                 [](auto&& /*param*/) {});
//
// Thread safety: pure functions, thread-safe.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_URL_FORMAT_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_URL_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

#include "src/util/strings.h"

namespace sluice::internal {

// RedisHostPort()
//
// Returns "host:port", or "[host]:port" for an IPv6 address, for messages and map keys.
inline std::string RedisHostPort(std::string_view host, int port) {
  return host.find(':') == std::string_view::npos ? absl::StrCat(AbslView(host), ":", port)
                                                  : absl::StrCat("[", AbslView(host), "]:", port);
}

// RFC 3986 unreserved characters: what a user name keeps unencoded.
inline bool IsUnreservedUrlChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// Parameter values keep '/' and ':' unencoded, for readable paths; '&', '=', '+', '#', '@' and
// spaces are escaped so that the text parses back as itself.
inline bool IsUrlParamValueChar(char c) { return IsUnreservedUrlChar(c) || c == '/' || c == ':'; }

// PercentEncode()
//
// Returns `text` with every byte that `keep` does not accept written as %XX, upper-case hex.
template <typename Keep>
std::string PercentEncode(std::string_view text, Keep keep) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (keep(c)) {
      out.push_back(c);
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xF]);
    }
  }
  return out;
}

// The three forms of a Redis URL (redis://, redis-cluster://, redis-sentinel://).
enum class RedisUrlTopology : uint8_t { kServer, kCluster, kSentinel };

// RedactedRedisUrl()
//
// Returns `deployment` as a URL of `topology` with the passwords replaced by "***", safe for logs:
// e.g. "rediss://limiter:***@[::1]:6380/2?tls_ca_file=/etc/ca.pem". `Deployment` has the fields
// of RedisEndpoint of the same names (host, port, nodes with host and port, username, password,
// password_file, db, the tls_* and sentinel_* fields, primary_name, command_timeout,
// connect_timeout, connections). `own_params(param)` writes the parameters that only the
// caller's type has, by calling `param(name, value)` for each, between tls_server_name and the
// Sentinel parameters.
template <typename Deployment, typename OwnParams>
std::string RedactedRedisUrl(const Deployment& d, RedisUrlTopology topology, OwnParams own_params) {
  std::string out = d.tls ? "rediss" : "redis";
  if (topology == RedisUrlTopology::kCluster) out += "-cluster";
  if (topology == RedisUrlTopology::kSentinel) out += "-sentinel";
  out += "://";
  if (!d.username.empty() || !d.password.empty()) {
    absl::StrAppend(&out, PercentEncode(d.username, IsUnreservedUrlChar),
                    d.password.empty() ? "" : ":***", "@");
  }
  if (d.nodes.empty()) {
    absl::StrAppend(&out, RedisHostPort(d.host, d.port));
  } else {
    for (size_t i = 0; i < d.nodes.size(); ++i) {
      absl::StrAppend(&out, i == 0 ? "" : ",", RedisHostPort(d.nodes[i].host, d.nodes[i].port));
    }
  }
  if (topology == RedisUrlTopology::kSentinel) absl::StrAppend(&out, "/", d.primary_name);
  if (d.db != 0) absl::StrAppend(&out, "/", d.db);
  char sep = '?';
  auto param = [&](std::string_view key, std::string_view value) {
    absl::StrAppend(&out, absl::string_view(&sep, 1), AbslView(key), "=",
                    PercentEncode(value, IsUrlParamValueChar));
    sep = '&';
  };
  if (!d.password_file.empty()) param("password_file", d.password_file);
  if (d.command_timeout) param("timeout_ms", absl::StrCat(d.command_timeout->count()));
  if (d.connect_timeout) param("connect_timeout_ms", absl::StrCat(d.connect_timeout->count()));
  if (d.connections) param("connections", absl::StrCat(*d.connections));
  if (!d.tls_verify) param("tls_verify", "false");
  if (!d.tls_ca_file.empty()) param("tls_ca_file", d.tls_ca_file);
  if (!d.tls_cert_file.empty()) param("tls_cert_file", d.tls_cert_file);
  if (!d.tls_key_file.empty()) param("tls_key_file", d.tls_key_file);
  if (!d.tls_server_name.empty()) param("tls_server_name", d.tls_server_name);
  own_params(param);
  if (!d.sentinel_username.empty()) param("sentinel_username", d.sentinel_username);
  if (!d.sentinel_password.empty()) {
    // Written as is: "***" marks a redacted secret, as in the user information.
    absl::StrAppend(&out, absl::string_view(&sep, 1), "sentinel_password=***");
    sep = '&';
  }
  if (!d.sentinel_password_file.empty()) param("sentinel_password_file", d.sentinel_password_file);
  if (!d.sentinel_tls) param("sentinel_tls", "false");
  return out;
}

// OneRedisServer()
//
// Returns `deployment` reduced to the one server at `host`:`port`, with the same credentials, TLS
// settings and parameters and no Sentinel settings: how a Cluster or Sentinel client reaches each
// server it finds. `Deployment` is as for RedactedRedisUrl(); the caller sets its topology.
template <typename Deployment>
Deployment OneRedisServer(Deployment one, std::string_view host, int port) {
  using Node = typename decltype(one.nodes)::value_type;
  one.host = std::string(host);
  one.port = port;
  one.nodes = {Node{.host = one.host, .port = port}};
  one.primary_name.clear();
  one.sentinel_username.clear();
  one.sentinel_password.clear();
  one.sentinel_password_file.clear();
  one.sentinel_tls = true;
  return one;
}

}  // namespace sluice::internal

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_URL_FORMAT_H_
