#include "src/store/redis/client/redis_endpoint.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

#include "src/util/strings.h"

namespace sluice {
namespace {

using internal::AbslView;

// RFC 3986 unreserved characters.
bool IsUnreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// Percent-encodes every byte of `text` that `keep` does not accept, with upper-case hex digits:
// what the store URL's Redacted() writes, so that both name a deployment the same way.
template <typename Keep>
std::string Encode(std::string_view text, Keep keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
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

// Parameter values keep '/' and ':' unencoded, for readable paths; '&', '=', '+', '#', '@' and
// spaces are escaped so that the text parses back as itself.
bool IsParamValueChar(char c) { return IsUnreserved(c) || c == '/' || c == ':'; }

}  // namespace

std::string RedisNodeName(const RedisNode& node) {
  return node.host.find(':') == std::string::npos ? absl::StrCat(node.host, ":", node.port)
                                                  : absl::StrCat("[", node.host, "]:", node.port);
}

std::string RedisEndpoint::HostPort() const { return RedisNodeName({.host = host, .port = port}); }

std::string RedisEndpoint::Redacted() const {
  std::string out = tls ? "rediss" : "redis";
  if (topology == Topology::kCluster) out += "-cluster";
  if (topology == Topology::kSentinel) out += "-sentinel";
  out += "://";
  if (!username.empty() || !password.empty()) {
    absl::StrAppend(&out, Encode(username, IsUnreserved), password.empty() ? "" : ":***", "@");
  }
  if (nodes.empty()) {
    absl::StrAppend(&out, HostPort());
  } else {
    for (size_t i = 0; i < nodes.size(); ++i) {
      absl::StrAppend(&out, i == 0 ? "" : ",", RedisNodeName(nodes[i]));
    }
  }
  if (topology == Topology::kSentinel) absl::StrAppend(&out, "/", primary_name);
  if (db != 0) absl::StrAppend(&out, "/", db);
  char sep = '?';
  auto param = [&](std::string_view key, std::string_view value) {
    absl::StrAppend(&out, absl::string_view(&sep, 1), AbslView(key), "=",
                    Encode(value, IsParamValueChar));
    sep = '&';
  };
  if (!password_file.empty()) param("password_file", password_file);
  if (command_timeout) param("timeout_ms", absl::StrCat(command_timeout->count()));
  if (connect_timeout) param("connect_timeout_ms", absl::StrCat(connect_timeout->count()));
  if (connections) param("connections", absl::StrCat(*connections));
  if (!tls_verify) param("tls_verify", "false");
  if (!tls_ca_file.empty()) param("tls_ca_file", tls_ca_file);
  if (!tls_cert_file.empty()) param("tls_cert_file", tls_cert_file);
  if (!tls_key_file.empty()) param("tls_key_file", tls_key_file);
  if (!tls_server_name.empty()) param("tls_server_name", tls_server_name);
  for (const auto& [key, value] : other_params) param(key, value);
  if (!sentinel_username.empty()) param("sentinel_username", sentinel_username);
  if (!sentinel_password.empty()) {
    // Written as is: "***" marks a redacted secret, as in the user information.
    absl::StrAppend(&out, absl::string_view(&sep, 1), "sentinel_password=***");
    sep = '&';
  }
  if (!sentinel_password_file.empty()) param("sentinel_password_file", sentinel_password_file);
  if (!sentinel_tls) param("sentinel_tls", "false");
  return out;
}

RedisEndpoint RedisEndpoint::ForNode(std::string_view node_host, int node_port) const {
  RedisEndpoint one = *this;
  one.topology = Topology::kServer;
  one.host = std::string(node_host);
  one.port = node_port;
  one.nodes = {RedisNode{.host = one.host, .port = node_port}};
  one.primary_name.clear();
  one.sentinel_username.clear();
  one.sentinel_password.clear();
  one.sentinel_password_file.clear();
  one.sentinel_tls = true;
  return one;
}

}  // namespace sluice
