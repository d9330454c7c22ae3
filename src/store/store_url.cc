#include "sluice/store_url.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include <boost/url/grammar/lut_chars.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "src/store/redis/client/redis_url_format.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

namespace urls = boost::urls;
using internal::AbslView;

constexpr std::string_view kForms =
    R"(expected "memory", "redis://[[user]:password@]host[:port][/db]", )"
    R"("redis-cluster://host:port[,host:port...]", )"
    R"("redis-sentinel://host:port[,host:port...]/primary_name[/db]", or their rediss forms)";
// Upper bound on timeouts given in the URL: beyond an hour a value is surely a unit mistake.
constexpr int64_t kMaxTimeoutMs = 3'600'000;
// What a host name may hold once decoded (DNS names, and '_' as container runtimes use it).
constexpr urls::grammar::lut_chars kHostNameChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._";
// The hint of every error about a mis-split authority.
constexpr std::string_view kEncodeHint =
    "percent-encode reserved characters such as @ : / ? # in the user name and password";

absl::Status Invalid(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("invalid store URL: ", AbslView(what)));
}

absl::StatusOr<int64_t> ParseInt(std::string_view name, std::string_view text, int64_t min,
                                 int64_t max) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(AbslView(text), &value) || value < min || value > max) {
    return Invalid(absl::StrCat(AbslView(name), " must be an integer in [", min, ", ", max,
                                "], got \"", AbslView(text), "\""));
  }
  return value;
}

absl::StatusOr<bool> ParseBool(std::string_view name, std::string_view text) {
  if (text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no") return false;
  return Invalid(
      absl::StrCat(AbslView(name), " must be true or false, got \"", AbslView(text), "\""));
}

// Applies one query parameter. Values of the parameters are file paths, numbers and names, never
// secrets, so they may be quoted in errors.
absl::Status ApplyParam(std::string_view key, std::string_view value, StoreUrl& url) {
  if (key == "password_file") {
    if (value.empty()) return Invalid("password_file is empty");
    url.password_file = std::string(value);
  } else if (key == "timeout_ms") {
    absl::StatusOr<int64_t> ms = ParseInt(key, value, 1, kMaxTimeoutMs);
    if (!ms.ok()) return ms.status();
    url.command_timeout = std::chrono::milliseconds(*ms);
  } else if (key == "connect_timeout_ms") {
    absl::StatusOr<int64_t> ms = ParseInt(key, value, 1, kMaxTimeoutMs);
    if (!ms.ok()) return ms.status();
    url.connect_timeout = std::chrono::milliseconds(*ms);
  } else if (key == "connections") {
    absl::StatusOr<int64_t> n = ParseInt(key, value, 1, StoreUrl::kMaxConnections);
    if (!n.ok()) return n.status();
    url.connections = static_cast<int>(*n);
  } else if (key == "tls_verify") {
    absl::StatusOr<bool> verify = ParseBool(key, value);
    if (!verify.ok()) return verify.status();
    url.tls_verify = *verify;
  } else if (key == "tls_ca_file") {
    url.tls_ca_file = std::string(value);
  } else if (key == "tls_cert_file") {
    url.tls_cert_file = std::string(value);
  } else if (key == "tls_key_file") {
    url.tls_key_file = std::string(value);
  } else if (key == "tls_server_name") {
    url.tls_server_name = std::string(value);
  } else if (key == "min_replicas") {
    absl::StatusOr<int64_t> n = ParseInt(key, value, 0, StoreUrl::kMaxMinReplicas);
    if (!n.ok()) return n.status();
    url.min_replicas = static_cast<int>(*n);
  } else if (key == "min_replicas_timeout_ms") {
    absl::StatusOr<int64_t> ms = ParseInt(key, value, 1, kMaxTimeoutMs);
    if (!ms.ok()) return ms.status();
    url.min_replicas_timeout = std::chrono::milliseconds(*ms);
  } else if (key == "functions") {
    absl::StatusOr<bool> functions = ParseBool(key, value);
    if (!functions.ok()) return functions.status();
    url.functions = *functions;
  } else if (key == "lease") {
    absl::StatusOr<bool> lease = ParseBool(key, value);
    if (!lease.ok()) return lease.status();
    url.lease = *lease;
  } else if (key == "lease_refresh_ms") {
    absl::StatusOr<int64_t> ms = ParseInt(key, value, 1, 60'000);
    if (!ms.ok()) return ms.status();
    url.lease_refresh = std::chrono::milliseconds(*ms);
  } else if (key == "lease_ttl_ms") {
    absl::StatusOr<int64_t> ms = ParseInt(key, value, 1, 60'000);
    if (!ms.ok()) return ms.status();
    url.lease_ttl = std::chrono::milliseconds(*ms);
  } else if (key == "lease_max_units") {
    absl::StatusOr<int64_t> n = ParseInt(key, value, 1, int64_t{1} << 32);
    if (!n.ok()) return n.status();
    url.lease_max_units = *n;
  } else if (url.kind == StoreUrl::Kind::kRedisSentinel && key == "sentinel_password") {
    // A secret: never quoted, and redacted by Redacted().
    if (value.empty()) return Invalid("sentinel_password is empty");
    url.sentinel_password = std::string(value);
  } else if (url.kind == StoreUrl::Kind::kRedisSentinel && key == "sentinel_password_file") {
    if (value.empty()) return Invalid("sentinel_password_file is empty");
    url.sentinel_password_file = std::string(value);
  } else if (url.kind == StoreUrl::Kind::kRedisSentinel && key == "sentinel_username") {
    url.sentinel_username = std::string(value);
  } else if (url.kind == StoreUrl::Kind::kRedisSentinel && key == "sentinel_tls") {
    absl::StatusOr<bool> tls = ParseBool(key, value);
    if (!tls.ok()) return tls.status();
    url.sentinel_tls = *tls;
  } else if (key.starts_with("sentinel_")) {
    return Invalid(
        absl::StrCat("parameter \"", AbslView(key), "\" is for redis-sentinel:// URLs only"));
  } else {
    return Invalid(absl::StrCat("unknown parameter \"", AbslView(key), "\""));
  }
  return absl::OkStatus();
}

absl::Status ParseHost(const urls::url_view& view, StoreUrl& url) {
  switch (view.host_type()) {
    case urls::host_type::name:
    case urls::host_type::ipv4:
    case urls::host_type::ipv6:
      url.host = view.host_address();
      break;
    default:
      return Invalid("unsupported host");
  }
  if (url.host.empty()) return Invalid("missing host");
  // A name is decoded; "h%2Fx" or "a%3Ab" cannot be resolved and would not survive Redacted().
  if (view.host_type() == urls::host_type::name &&
      !std::all_of(url.host.begin(), url.host.end(), [](char c) { return kHostNameChars(c); })) {
    return Invalid("the host name may hold only letters, digits, '.', '-' and '_'");
  }
  if (view.has_port() && !view.port().empty()) {
    absl::StatusOr<int64_t> port = ParseInt("port", view.port(), 1, 65535);
    if (!port.ok()) return port.status();
    url.port = static_cast<int>(*port);
  }
  return absl::OkStatus();
}

absl::Status ParseDb(std::string_view path, StoreUrl& url) {
  if (path.empty() || path == "/") return absl::OkStatus();
  // Boost.URL 1.81 parses "host:6379:1" as port 6379 and path ":1", and "host:abc" as an empty
  // port and path "abc": a path that does not start with '/' is really a malformed port.
  if (path[0] != '/') return Invalid("malformed port");
  absl::StatusOr<int64_t> db =
      ParseInt("database (the path)", path.substr(1), 0, std::numeric_limits<int32_t>::max());
  if (!db.ok()) return db.status();
  url.db = static_cast<int>(*db);
  return absl::OkStatus();
}

// redis-sentinel: "/primary_name[/db]".
absl::Status ParseSentinelPath(std::string_view path, StoreUrl& url) {
  if (path.size() <= 1) return Invalid("a redis-sentinel URL needs /primary_name after the hosts");
  path.remove_prefix(1);
  const size_t slash = path.find('/');
  url.primary_name = std::string(path.substr(0, slash));
  if (url.primary_name.empty()) return Invalid("empty primary_name");
  if (!std::all_of(url.primary_name.begin(), url.primary_name.end(),
                   [](char c) { return kHostNameChars(c); })) {
    return Invalid("primary_name may hold only letters, digits, '.', '-' and '_'");
  }
  if (slash == std::string_view::npos) return absl::OkStatus();
  return ParseDb(path.substr(slash), url);
}

absl::Status CheckConsistency(const StoreUrl& url) {
  if (!url.password.empty() && !url.password_file.empty()) {
    return Invalid("give the password either in the URL or in password_file, not both");
  }
  if (!url.username.empty() && url.password.empty() && url.password_file.empty()) {
    return Invalid("a user name needs a password (user:password@host or ?password_file=)");
  }
  const bool any_tls_param = !url.tls_verify || !url.tls_ca_file.empty() ||
                             !url.tls_cert_file.empty() || !url.tls_key_file.empty() ||
                             !url.tls_server_name.empty();
  if (!url.tls && any_tls_param) return Invalid("tls_* parameters need rediss://");
  if (!url.tls && !url.sentinel_tls) return Invalid("sentinel_tls needs rediss-sentinel://");
  if (!url.sentinel_password.empty() && !url.sentinel_password_file.empty()) {
    return Invalid("give sentinel_password or sentinel_password_file, not both");
  }
  if (!url.sentinel_username.empty() && url.sentinel_password.empty() &&
      url.sentinel_password_file.empty()) {
    return Invalid("sentinel_username needs sentinel_password or sentinel_password_file");
  }
  if (url.tls_cert_file.empty() != url.tls_key_file.empty()) {
    return Invalid("tls_cert_file and tls_key_file go together");
  }
  if (!url.lease && (url.lease_refresh || url.lease_ttl || url.lease_max_units)) {
    return Invalid("lease_* parameters need lease=true");
  }
  return absl::OkStatus();
}

// The scheme of `text` (before "://"), lower-cased; empty when there is none.
std::string SchemeOf(std::string_view text) {
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos) return {};
  std::string scheme(text.substr(0, sep));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return scheme;
}

// Parses one extra "host[:port]" of a multi-host URL into `node`.
absl::Status ParseExtraHost(std::string_view text, int default_port, StoreUrl::Node& node) {
  if (text.empty()) return Invalid("empty host in the host list");
  const std::string single = absl::StrCat("redis://", AbslView(text));
  urls::result<urls::url_view> parsed = urls::parse_uri(single);
  if (!parsed.has_value() || parsed->has_userinfo() || !parsed->encoded_path().empty() ||
      parsed->has_query()) {
    return Invalid(absl::StrCat("bad host \"", AbslView(text), "\" in the host list"));
  }
  StoreUrl one;
  one.port = default_port;
  if (absl::Status s = ParseHost(*parsed, one); !s.ok()) return s;
  node = {.host = one.host, .port = one.port};
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StoreUrl> ParseStoreUrl(std::string_view text) {
  if (absl::EqualsIgnoreCase(AbslView(text), "memory")) return StoreUrl{};
  StoreUrl url;
  const std::string scheme = SchemeOf(text);
  if (scheme == "redis" || scheme == "rediss") {
    url.kind = StoreUrl::Kind::kRedis;
  } else if (scheme == "redis-cluster" || scheme == "rediss-cluster") {
    url.kind = StoreUrl::Kind::kRedisCluster;
  } else if (scheme == "redis-sentinel" || scheme == "rediss-sentinel") {
    url.kind = StoreUrl::Kind::kRedisSentinel;
    url.port = StoreUrl::kDefaultSentinelPort;
  } else {
    return Invalid(kForms);
  }
  url.tls = scheme.starts_with("rediss");
  // A Cluster or Sentinel URL lists several hosts, which no URL grammar allows: the first host
  // stays in the URL that Boost.URL parses, the others are cut out and parsed one by one. The
  // authority ends at the first '/', '?' or '#'; the host list starts after its last '@'.
  const size_t authority_begin = scheme.size() + 3;
  size_t authority_end = text.find_first_of("/?#", authority_begin);
  if (authority_end == std::string_view::npos) authority_end = text.size();
  const std::string_view authority = text.substr(authority_begin, authority_end - authority_begin);
  const size_t at = authority.rfind('@');
  const size_t hosts_begin = at == std::string_view::npos ? 0 : at + 1;
  std::vector<std::string_view> extra_hosts;
  size_t first_host_end = authority.size();
  if (const size_t comma = authority.find(',', hosts_begin); comma != std::string_view::npos) {
    if (url.kind == StoreUrl::Kind::kRedis) {
      return Invalid("redis:// takes one host; use redis-cluster:// or redis-sentinel://");
    }
    first_host_end = comma;
    std::string_view rest = authority.substr(comma + 1);
    while (true) {
      const size_t next = rest.find(',');
      extra_hosts.push_back(rest.substr(0, next));
      if (next == std::string_view::npos) break;
      rest.remove_prefix(next + 1);
    }
    if (extra_hosts.size() + 1 > static_cast<size_t>(StoreUrl::kMaxHosts)) {
      return Invalid(absl::StrCat("at most ", StoreUrl::kMaxHosts, " hosts"));
    }
  }
  const std::string single = absl::StrCat(url.tls ? "rediss://" : "redis://",
                                          AbslView(authority.substr(0, first_host_end)),
                                          AbslView(text.substr(authority_end)));
  urls::result<urls::url_view> parsed = urls::parse_uri(single);
  if (!parsed.has_value()) {
    // Boost's message never quotes the input, so it cannot leak the password.
    return Invalid(absl::StrCat(parsed.error().message(), " (", AbslView(kEncodeHint), ")"));
  }
  const urls::url_view& view = *parsed;
  // A password with an unencoded '/', '?' or '#' ends the authority early: "redis://u:123/x@h"
  // reads as host "u", port 123 and path "/x@h", and "redis://u:123?x@h" as query "x@h". The rest
  // of the password then lands in the path, the query or the fragment, where an error would quote
  // it and Redacted() would log it ("rediss://u:1?tls_server_name=x@h" even parsed). Its
  // signature is the '@' that ended the user information, so an unencoded '@' anywhere after the
  // host is refused, before the port, path and parameters, whose errors quote them, are looked
  // at. A parameter value that really holds '@' writes it as "%40".
  const auto holds_at = [](urls::pct_string_view part) {
    return part.find('@') != urls::pct_string_view::npos;
  };
  if (holds_at(view.encoded_path()) || holds_at(view.encoded_query()) ||
      holds_at(view.encoded_fragment())) {
    return Invalid(absl::StrCat("'@' after the host; ", AbslView(kEncodeHint),
                                ", and '@' in parameter values as %40"));
  }
  if (view.has_fragment()) return Invalid("a fragment (#...) is not allowed");
  if (view.has_userinfo()) {
    url.username = view.user();
    if (view.has_password()) url.password = view.password();
    if (url.username.empty() && url.password.empty()) return Invalid("empty user information");
  }
  if (absl::Status s = ParseHost(view, url); !s.ok()) return s;
  url.nodes.push_back({.host = url.host, .port = url.port});
  for (std::string_view host : extra_hosts) {
    StoreUrl::Node node;
    if (absl::Status s = ParseExtraHost(host,
                                        url.kind == StoreUrl::Kind::kRedisSentinel
                                            ? StoreUrl::kDefaultSentinelPort
                                            : StoreUrl::kDefaultRedisPort,
                                        node);
        !s.ok()) {
      return s;
    }
    url.nodes.push_back(std::move(node));
  }
  const std::string path = view.encoded_path().decode();
  switch (url.kind) {
    case StoreUrl::Kind::kRedisSentinel:
      if (absl::Status s = ParseSentinelPath(path, url); !s.ok()) return s;
      break;
    case StoreUrl::Kind::kRedisCluster:
      // A Cluster has only database 0.
      if (!path.empty() && path != "/") return Invalid("a redis-cluster URL takes no database");
      break;
    default:
      if (absl::Status s = ParseDb(path, url); !s.ok()) return s;
      break;
  }
  for (const urls::param& param : view.params()) {
    if (absl::Status s = ApplyParam(param.key, param.value, url); !s.ok()) return s;
  }
  if (absl::Status s = CheckConsistency(url); !s.ok()) return s;
  return url;
}

StoreUrl StoreUrl::ForNode(std::string_view node_host, int node_port) const {
  StoreUrl one = internal::OneRedisServer(*this, node_host, node_port);
  one.kind = Kind::kRedis;
  return one;
}

std::string StoreUrl::HostPort() const { return internal::RedisHostPort(host, port); }

std::string StoreUrl::Redacted() const {
  internal::RedisUrlTopology topology = internal::RedisUrlTopology::kServer;
  switch (kind) {
    case Kind::kMemory:
      return "memory";
    case Kind::kRedisCluster:
      topology = internal::RedisUrlTopology::kCluster;
      break;
    case Kind::kRedisSentinel:
      topology = internal::RedisUrlTopology::kSentinel;
      break;
    case Kind::kRedis:
      break;
  }
  // The store's own parameters, which the client's endpoint carries as other_params.
  return internal::RedactedRedisUrl(*this, topology, [this](auto&& param) {
    if (min_replicas != 0) param("min_replicas", absl::StrCat(min_replicas));
    if (min_replicas_timeout != StoreUrl{}.min_replicas_timeout) {
      param("min_replicas_timeout_ms", absl::StrCat(min_replicas_timeout.count()));
    }
    if (!functions) param("functions", "false");
    if (lease) param("lease", "true");
    if (lease_refresh) param("lease_refresh_ms", absl::StrCat(lease_refresh->count()));
    if (lease_ttl) param("lease_ttl_ms", absl::StrCat(lease_ttl->count()));
    if (lease_max_units) param("lease_max_units", absl::StrCat(*lease_max_units));
  });
}

}  // namespace sluice
