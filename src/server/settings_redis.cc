// The reference's Redis variables as a sluice store URL (sluice/store_url.h):
//   REDIS_TYPE=single    REDIS_URL=host:port              -> redis://host:port
//   REDIS_TYPE=cluster   REDIS_URL=h1:p1,h2:p2            -> redis-cluster://h1:p1,h2:p2
//   REDIS_TYPE=sentinel  REDIS_URL=primary,s1:p1,s2:p2    -> redis-sentinel://s1:p1,s2:p2/primary
// with REDIS_TLS as the rediss* schemes, REDIS_AUTH ("password" or "user:password") as the URL's
// user information, REDIS_SENTINEL_AUTH as sentinel_username / sentinel_password, REDIS_TIMEOUT
// as timeout_ms and connect_timeout_ms, REDIS_POOL_SIZE as connections, and the REDIS_TLS_* files
// as tls_*_file. The same for REDIS_PERSECOND_*, the store of per-second limits.
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "sluice/store_url.h"

#include "src/server/settings_internal.h"
#include "src/util/strings.h"

namespace sluice::server::internal {

using ::sluice::internal::AbslView;

namespace {

// Percent-encodes everything but RFC 3986's unreserved characters.
std::string PercentEncode(std::string_view s) {
  static constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// "user:password" or "password" -> "user:password@" / ":password@", percent-encoded.
std::string UserInfo(const std::string& auth) {
  const size_t colon = auth.find(':');
  if (colon == std::string::npos) return absl::StrCat(":", PercentEncode(auth), "@");
  return absl::StrCat(PercentEncode(std::string_view(auth).substr(0, colon)), ":",
                      PercentEncode(std::string_view(auth).substr(colon + 1)), "@");
}

// One store's variables; `p` is "REDIS_" or "REDIS_PERSECOND_". Returns the URL, or "" after a
// refusal.
std::string RedisUrl(EnvReader& r, std::string_view p) {
  auto var = [p](std::string_view name) { return absl::StrCat(AbslView(p), AbslView(name)); };
  const std::string socket =
      absl::AsciiStrToLower(r.GetOr(var("SOCKET_TYPE"), "unix").value_or("tcp"));
  if (socket != "tcp") {
    r.Refuse(var("SOCKET_TYPE"),
             socket == "unix"
                 ? "unix sockets (the reference's default) are not supported yet; set tcp and a "
                   "host:port REDIS_URL, or start with --store"
                 : absl::StrCat("unknown socket type '", socket, "' (tcp)"));
    return "";
  }
  const std::optional<std::string> url = r.Get(var("URL"));
  if (!url.has_value()) {
    r.Refuse(var("URL"), "required (host:port)");
    return "";
  }
  const std::string type = absl::AsciiStrToLower(r.Get(var("TYPE")).value_or("single"));
  const bool tls = r.Bool(var("TLS"), false).value_or(false);
  const std::optional<std::string> auth = r.Get(var("AUTH"));
  std::vector<std::string> params;
  if (auto size = r.Int(var("POOL_SIZE"), 1, StoreUrl::kMaxConnections, std::nullopt)) {
    params.push_back(absl::StrCat("connections=", *size));
  }
  if (auto timeout = r.Duration(var("TIMEOUT"), "10s"); timeout.has_value() && timeout->count()) {
    params.push_back(absl::StrCat("timeout_ms=", timeout->count()));
    params.push_back(absl::StrCat("connect_timeout_ms=", timeout->count()));
  }
  if (std::optional<std::string> empty = r.Get(var("POOL_ON_EMPTY_BEHAVIOR"));
      empty.has_value() && absl::AsciiStrToUpper(*empty) != "WAIT") {
    r.Refuse(var("POOL_ON_EMPTY_BEHAVIOR"), "only WAIT is supported (as in the reference)");
  }
  for (std::string_view name :
       {"PIPELINE_WINDOW", "PIPELINE_LIMIT", "CLUSTER_PIPELINE_PARALLELISM"}) {
    if (r.Get(var(name)).has_value()) {
      r.Note(absl::StrCat(var(name),
                          ": honoured by sluice's client on its own, which coalesces every "
                          "concurrent command into one write and runs slots in parallel"));
    }
  }
  if (tls) {
    for (auto [name, param] : {std::pair{"REDIS_TLS_CACERT", "tls_ca_file"},
                               std::pair{"REDIS_TLS_CLIENT_CERT", "tls_cert_file"},
                               std::pair{"REDIS_TLS_CLIENT_KEY", "tls_key_file"}}) {
      if (auto file = r.Get(name)) params.push_back(absl::StrCat(param, "=", PercentEncode(*file)));
    }
  }
  std::string scheme = tls ? "rediss" : "redis";
  std::string hosts = *url;
  std::string path;
  if (url->find("://") != std::string::npos) {
    // Already a URL: taken as a sluice store URL.
    return *url;
  }
  if (type == "cluster") {
    scheme += "-cluster";
  } else if (type == "sentinel") {
    std::vector<std::string> parts = absl::StrSplit(*url, ',');
    if (parts.size() < 2) {
      r.Refuse(var("URL"), "sentinel: expected <primary name>,<sentinel host:port>,...");
      return "";
    }
    scheme += "-sentinel";
    path = absl::StrCat("/", PercentEncode(parts[0]));
    parts.erase(parts.begin());
    hosts = absl::StrJoin(parts, ",");
    if (auto sentinel_auth = r.Get(var("SENTINEL_AUTH"))) {
      const size_t colon = sentinel_auth->find(':');
      if (colon != std::string::npos) {
        params.push_back(
            absl::StrCat("sentinel_username=", PercentEncode(sentinel_auth->substr(0, colon))));
      }
      params.push_back(absl::StrCat(
          "sentinel_password=",
          PercentEncode(colon == std::string::npos ? *sentinel_auth
                                                   : sentinel_auth->substr(colon + 1))));
    }
  } else if (type != "single") {
    r.Refuse(var("TYPE"), absl::StrCat("unknown type '", type, "' (single, cluster, sentinel)"));
    return "";
  }
  std::string out = absl::StrCat(scheme, "://", auth.has_value() ? UserInfo(*auth) : "", hosts,
                                 path, params.empty() ? "" : "?", absl::StrJoin(params, "&"));
  if (absl::StatusOr<StoreUrl> parsed = ParseStoreUrl(out); !parsed.ok()) {
    // The parser never repeats a password; neither do we (the message names the variables).
    r.Refuse(var("URL"),
             absl::StrCat("does not make a valid store (", parsed.status().message(), ")"));
    return "";
  }
  return out;
}

}  // namespace

void ApplyRedisEnvironment(EnvReader& r) {
  ServerSettings& s = r.settings();
  const std::string backend = absl::AsciiStrToLower(r.GetOr("BACKEND_TYPE", "redis").value_or(""));
  const std::vector<std::string_view> memcache = {"MEMCACHE_HOST_PORT",
                                                  "MEMCACHE_MAX_IDLE_CONNS",
                                                  "MEMCACHE_SRV",
                                                  "MEMCACHE_SRV_REFRESH",
                                                  "MEMCACHE_TLS",
                                                  "MEMCACHE_TLS_CLIENT_CERT",
                                                  "MEMCACHE_TLS_CLIENT_KEY",
                                                  "MEMCACHE_TLS_CACERT",
                                                  "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION"};
  if (backend == "memcache") {
    r.Refuse("BACKEND_TYPE", "memcache is not supported this release; use redis");
    return;
  }
  r.NoteUnused(memcache, "BACKEND_TYPE=memcache");
  if (!backend.empty() && backend != "redis") {
    r.Refuse("BACKEND_TYPE", absl::StrCat("unknown backend '", backend, "' (redis)"));
    return;
  }
  if (r.Bool("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", false).value_or(false)) {
    r.Refuse("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION",
             "not supported: sluice verifies the server's certificate and name; set "
             "tls_server_name in a --store URL instead");
  }
  if (r.Get("REDIS_HEALTH_CHECK_ACTIVE_CONNECTION").has_value()) {
    r.Bool("REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", false);
    r.Note(
        "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: /healthcheck always runs a real script call on "
        "Redis, which also needs an active connection");
  }
  for (std::string_view name : {"REDIS_STARTUP_INITIAL_INTERVAL", "REDIS_STARTUP_MAX_INTERVAL"}) {
    if (r.Duration(name, "1s").has_value() && r.Get(name).has_value()) {
      r.Note(absl::StrCat(AbslView(name),
                          ": sluiced connects in the background with its own "
                          "jittered backoff (50 ms doubling up to 1 s)"));
    }
  }
  if (!r.FlagGiven("--redis-startup-max-elapsed-ms")) {
    if (auto elapsed = r.Duration("REDIS_STARTUP_MAX_ELAPSED_TIME", "0")) {
      s.redis_startup_max_elapsed = *elapsed;
    }
  }
  // With --config, the Redis variables apply only when a deployment sets them.
  const bool redis_set = r.Get("BACKEND_TYPE").has_value() || r.Get("REDIS_URL").has_value() ||
                         r.Get("REDIS_SOCKET_TYPE").has_value();
  if (!r.FlagGiven("--store") && (r.reference_mode() || redis_set)) {
    std::string url = RedisUrl(r, "REDIS_");
    if (!url.empty()) s.store = std::move(url);
  }
  if (!r.FlagGiven("--per-second-store") && r.Bool("REDIS_PERSECOND", false).value_or(false)) {
    std::string url = RedisUrl(r, "REDIS_PERSECOND_");
    if (!url.empty()) s.per_second_store = std::move(url);
  }
}

}  // namespace sluice::server::internal
