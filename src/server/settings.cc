#include "src/server/settings.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "src/server/go_values.h"
#include "src/server/settings_internal.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace internal {

using ::sluice::internal::AbslView;
using ::sluice::internal::StdView;

std::optional<std::string> EnvReader::Get(std::string_view name) const {
  std::optional<std::string> v = env_(name);
  if (!v.has_value() || v->empty()) return std::nullopt;
  return v;
}

std::optional<std::string> EnvReader::GetOr(std::string_view name,
                                            std::string_view reference_default) const {
  if (std::optional<std::string> v = Get(name)) return v;
  if (reference_mode_) return std::string(reference_default);
  return std::nullopt;
}

std::optional<bool> EnvReader::Bool(std::string_view name, std::optional<bool> reference_default) {
  std::optional<std::string> v = Get(name);
  if (!v.has_value()) return reference_mode_ ? reference_default : std::nullopt;
  absl::StatusOr<bool> b = ParseGoBool(*v);
  if (!b.ok()) {
    Refuse(name, StdView(b.status().message()));
    return std::nullopt;
  }
  return *b;
}

std::optional<int64_t> EnvReader::Int(std::string_view name, int64_t min, int64_t max,
                                      std::optional<int64_t> reference_default) {
  std::optional<std::string> v = Get(name);
  if (!v.has_value()) return reference_mode_ ? reference_default : std::nullopt;
  int64_t n = 0;
  if (!absl::SimpleAtoi(*v, &n) || n < min || n > max) {
    Refuse(name, absl::StrCat("'", *v, "' is not an integer in [", min, ", ", max, "]"));
    return std::nullopt;
  }
  return n;
}

std::optional<std::chrono::milliseconds> EnvReader::Duration(std::string_view name,
                                                             std::string_view reference_default) {
  std::optional<std::string> v = GetOr(name, reference_default);
  if (!v.has_value()) return std::nullopt;
  absl::StatusOr<std::chrono::nanoseconds> d = ParseGoDuration(*v);
  if (!d.ok() || d->count() < 0) {
    Refuse(name, d.ok() ? "must not be negative" : StdView(d.status().message()));
    return std::nullopt;
  }
  return std::chrono::ceil<std::chrono::milliseconds>(*d);
}

void EnvReader::Refuse(std::string_view name, std::string_view why) {
  refusals_.push_back(absl::StrCat(AbslView(name), ": ", AbslView(why)));
}

void EnvReader::Note(std::string_view text) { s_.notes.emplace_back(text); }

void EnvReader::NoteUnused(const std::vector<std::string_view>& names, std::string_view feature) {
  for (std::string_view name : names) {
    if (Get(name).has_value()) {
      Note(absl::StrCat(AbslView(name), " is set but unused: ", AbslView(feature),
                        " is off (as in the reference)"));
    }
  }
}

}  // namespace internal

namespace {

using internal::EnvReader;
using ::sluice::internal::StdView;

// Splits "host:port" (the host may be empty or bracketed) at its last ':'.
std::pair<std::string, std::string> SplitAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return {address, ""};
  return {address.substr(0, colon), address.substr(colon + 1)};
}

// HOST/PORT-style pairs: the listener at `flag`, from `host_var` and `port_var`.
void Listener(EnvReader& r, std::string_view flag, std::string& address, std::string_view host_var,
              std::string_view port_var, std::string_view reference_port) {
  if (r.FlagGiven(flag)) return;
  std::optional<std::string> host = r.GetOr(host_var, "0.0.0.0");
  const std::optional<int64_t> port = r.Int(port_var, 0, 65535, std::nullopt);
  if (!host.has_value() && !port.has_value() && !r.reference_mode()) return;
  auto [current_host, current_port] = SplitAddress(address);
  if (address.empty()) current_host = "127.0.0.1";
  const std::string port_text = port.has_value()     ? absl::StrCat(*port)
                                : r.reference_mode() ? std::string(reference_port)
                                                     : current_port;
  address = absl::StrCat(host.value_or(current_host), ":", port_text);
}

void ApplyListeners(EnvReader& r) {
  ServerSettings& s = r.settings();
  Listener(r, "--http", s.http, "HOST", "PORT", "8080");
  Listener(r, "--debug", s.debug, "DEBUG_HOST", "DEBUG_PORT", "6070");
  if (!r.FlagGiven("--grpc")) {
    if (std::optional<std::string> uds = r.Get("GRPC_UDS")) {
      s.grpc = absl::StrCat("unix:", *uds);
    } else {
      Listener(r, "--grpc", s.grpc, "GRPC_HOST", "GRPC_PORT", "8081");
    }
  }
  if (!r.FlagGiven("--grpc-engine")) {
    if (std::optional<std::string> engine = r.Get("SLUICE_GRPC_ENGINE")) {
      if (*engine == "grpc" || *engine == "nghttp2") {
        s.grpc_engine = *engine;
      } else {
        r.Refuse("SLUICE_GRPC_ENGINE", "must be grpc or nghttp2");
      }
    }
  }
  if (!r.FlagGiven("--grpc-max-connection-age-ms")) {
    if (auto age = r.Duration("GRPC_MAX_CONNECTION_AGE", "24h")) s.grpc_max_connection_age = *age;
  }
  if (!r.FlagGiven("--grpc-max-connection-age-grace-ms")) {
    if (auto grace = r.Duration("GRPC_MAX_CONNECTION_AGE_GRACE", "1h")) {
      s.grpc_max_connection_age_grace = *grace;
    }
  }
  const std::vector<std::string_view> tls_files = {"GRPC_SERVER_TLS_CERT", "GRPC_SERVER_TLS_KEY",
                                                   "GRPC_CLIENT_TLS_CACERT", "GRPC_CLIENT_TLS_SAN"};
  if (r.FlagGiven("--grpc-tls-cert") || r.FlagGiven("--grpc-tls-key") ||
      r.FlagGiven("--grpc-tls-client-ca")) {
    return;  // TLS is configured by flags; the variables are not read.
  }
  if (!r.Bool("GRPC_SERVER_USE_TLS", false).value_or(false)) {
    r.NoteUnused(tls_files, "GRPC_SERVER_USE_TLS");
    return;
  }
  std::optional<std::string> cert = r.Get("GRPC_SERVER_TLS_CERT");
  std::optional<std::string> key = r.Get("GRPC_SERVER_TLS_KEY");
  if (!cert.has_value() || !key.has_value()) {
    r.Refuse("GRPC_SERVER_USE_TLS",
             "needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (PEM files)");
    return;
  }
  s.grpc_tls_cert = *cert;
  s.grpc_tls_key = *key;
  s.grpc_tls_client_ca = r.Get("GRPC_CLIENT_TLS_CACERT").value_or("");
  if (r.Get("GRPC_CLIENT_TLS_SAN").has_value()) {
    r.Refuse("GRPC_CLIENT_TLS_SAN",
             "not supported: sluiced verifies client certificates against GRPC_CLIENT_TLS_CACERT "
             "but cannot yet require a SAN; unset it");
  }
}

// The reference's logrus level names, in spdlog's terms.
std::optional<std::string> LogLevel(std::string level) {
  absl::AsciiStrToLower(&level);
  if (level == "panic" || level == "fatal") return "critical";
  if (level == "warning") return "warn";
  for (std::string_view same : {"error", "warn", "info", "debug", "trace"}) {
    if (level == same) return level;
  }
  return std::nullopt;
}

void ApplyLogging(EnvReader& r) {
  ServerSettings& s = r.settings();
  if (!r.FlagGiven("--log-level")) {
    if (std::optional<std::string> level = r.GetOr("LOG_LEVEL", "WARN")) {
      if (std::optional<std::string> mapped = LogLevel(*level)) {
        s.log_level = *mapped;
      } else {
        r.Refuse("LOG_LEVEL", absl::StrCat("unknown level '", *level,
                                           "' (panic, fatal, error, warn, info, debug, trace)"));
      }
    }
  }
  if (!r.FlagGiven("--log-format")) {
    if (std::optional<std::string> format = r.Get("LOG_FORMAT")) {
      std::string lower = absl::AsciiStrToLower(*format);
      if (lower == "json" || lower == "text") {
        s.log_format = lower;
      } else {
        r.Refuse("LOG_FORMAT", absl::StrCat("unknown format '", *format, "' (text or json)"));
      }
    }
  }
}

// CONFIG_GRPC_XDS_NODE_METADATA, read as the reference reads it: "k=v,k2=v2", each item split at
// its first '='; an item without one is skipped (the reference's own example, "key1:val1", is).
void ApplyNodeMetadata(EnvReader& r, XdsSettings& x) {
  std::optional<std::string> text = r.Get("CONFIG_GRPC_XDS_NODE_METADATA");
  if (!text.has_value()) return;
  for (absl::string_view item : absl::StrSplit(*text, ',')) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      r.Note(absl::StrCat("CONFIG_GRPC_XDS_NODE_METADATA: item '", item,
                          "' has no '=' and is skipped, as in the reference"));
      continue;
    }
    x.node_metadata.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
  }
}

// CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: an envconfig map, "k:v,k2:v2", sent as gRPC metadata
// (keys lowercased, as Go's metadata.New does; gRPC refuses other characters in them).
void ApplyAdditionalHeaders(EnvReader& r, XdsSettings& x) {
  std::optional<std::string> text = r.Get("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS");
  if (!text.has_value()) return;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> pairs = ParseGoStringMap(*text);
  if (!pairs.ok()) {
    r.Refuse("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", StdView(pairs.status().message()));
    return;
  }
  for (auto& [key, value] : *pairs) {
    key = absl::AsciiStrToLower(key);
    const bool key_ok =
        !key.empty() && !absl::StartsWith(key, "grpc-") &&
        key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") == std::string::npos;
    const bool binary = absl::EndsWith(key, "-bin");
    const bool value_ok = binary || std::all_of(value.begin(), value.end(),
                                                [](char c) { return c >= 0x20 && c <= 0x7e; });
    if (!key_ok || !value_ok) {
      r.Refuse("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS",
               absl::StrCat("'", key, "' is not a valid gRPC metadata ",
                            key_ok ? "value" : "key (a-z, 0-9, '-', '_', '.'; not grpc-)"));
      continue;
    }
    x.additional_headers.emplace_back(std::move(key), std::move(value));
  }
}

void ApplyXds(EnvReader& r) {
  XdsSettings& x = r.settings().xds_settings;
  if (auto url = r.Get("CONFIG_GRPC_XDS_SERVER_URL")) x.server_url = *url;
  if (auto id = r.Get("CONFIG_GRPC_XDS_NODE_ID")) x.node_id = *id;
  ApplyNodeMetadata(r, x);
  ApplyAdditionalHeaders(r, x);
  if (auto d = r.Duration("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "3s")) {
    if (d->count() > 0) {
      x.connect_retry_interval = *d;
    } else {
      r.Refuse("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "must be positive");
    }
  }
  x.use_tls = r.Bool("CONFIG_GRPC_XDS_SERVER_USE_TLS", false).value_or(false);
  const std::vector<std::string_view> tls = {
      "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "CONFIG_GRPC_XDS_CLIENT_TLS_KEY",
      "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "CONFIG_GRPC_XDS_SERVER_TLS_SAN"};
  if (x.use_tls) {
    x.client_tls_cert = r.Get(tls[0]).value_or("");
    x.client_tls_key = r.Get(tls[1]).value_or("");
    x.server_tls_ca = r.Get(tls[2]).value_or("");
    x.server_tls_san = r.Get(tls[3]).value_or("");
    if (x.client_tls_cert.empty() != x.client_tls_key.empty()) {
      r.Refuse(x.client_tls_cert.empty() ? tls[0] : tls[1],
               "CONFIG_GRPC_XDS_CLIENT_TLS_CERT and _KEY go together; set both or neither");
    }
  } else {
    r.NoteUnused(tls, "CONFIG_GRPC_XDS_SERVER_USE_TLS");
  }
  if (auto d = r.Duration("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "10s")) x.backoff_initial = *d;
  if (auto d = r.Duration("XDS_CLIENT_BACKOFF_MAX_INTERVAL", "60s")) x.backoff_max = *d;
  if (auto f = r.Get("XDS_CLIENT_BACKOFF_RANDOM_FACTOR")) {
    double factor = 0;
    if (absl::SimpleAtod(*f, &factor) && std::isfinite(factor)) {
      x.backoff_factor = factor;
    } else {
      r.Refuse("XDS_CLIENT_BACKOFF_RANDOM_FACTOR", absl::StrCat("'", *f, "' is not a number"));
    }
  }
  if (auto b = r.Bool("XDS_CLIENT_BACKOFF_JITTER", true)) x.backoff_jitter = *b;
  if (auto n = r.Int("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", 0, std::numeric_limits<int32_t>::max(),
                     std::nullopt)) {
    x.max_message_bytes = static_cast<size_t>(*n);
  }
}

// The variables of CONFIG_TYPE=GRPC_XDS_SOTW, in settings.go's order.
const std::vector<std::string_view>& XdsVariableNames() {
  static const std::vector<std::string_view> names = {
      "CONFIG_GRPC_XDS_NODE_ID",
      "CONFIG_GRPC_XDS_NODE_METADATA",
      "CONFIG_GRPC_XDS_SERVER_URL",
      "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL",
      "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS",
      "CONFIG_GRPC_XDS_SERVER_USE_TLS",
      "CONFIG_GRPC_XDS_CLIENT_TLS_CERT",
      "CONFIG_GRPC_XDS_CLIENT_TLS_KEY",
      "CONFIG_GRPC_XDS_SERVER_TLS_CACERT",
      "CONFIG_GRPC_XDS_SERVER_TLS_SAN",
      "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
      "XDS_CLIENT_BACKOFF_MAX_INTERVAL",
      "XDS_CLIENT_BACKOFF_RANDOM_FACTOR",
      "XDS_CLIENT_BACKOFF_JITTER",
      "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES"};
  return names;
}

void ApplyConfig(EnvReader& r) {
  ServerSettings& s = r.settings();
  const std::string type = absl::AsciiStrToUpper(r.GetOr("CONFIG_TYPE", "FILE").value_or("FILE"));
  if (type == "GRPC_XDS_SOTW") {
    if (r.FlagGiven("--config")) {
      r.Refuse("CONFIG_TYPE", "GRPC_XDS_SOTW takes the config from xDS; do not give --config too");
    }
    s.xds = true;
    ApplyXds(r);
  } else if (type == "FILE") {
    r.NoteUnused(XdsVariableNames(), "CONFIG_TYPE=GRPC_XDS_SOTW");
  } else {
    r.Refuse("CONFIG_TYPE", absl::StrCat("unknown type '", type, "' (FILE or GRPC_XDS_SOTW)"));
  }
  if (!r.FlagGiven("--config")) {
    std::optional<std::string> root = r.GetOr("RUNTIME_ROOT", "/srv/runtime_data/current");
    std::optional<std::string> sub = r.Get("RUNTIME_SUBDIRECTORY");
    std::optional<std::string> app = r.GetOr("RUNTIME_APPDIRECTORY", "config");
    if (root.has_value()) {
      std::filesystem::path path(*root);
      if (sub.has_value()) path /= *sub;
      path /= app.value_or("config");
      s.config = path.string();
    }
  }
  if (!r.FlagGiven("--ignore-dotfiles")) {
    if (auto b = r.Bool("RUNTIME_IGNOREDOTFILES", false)) s.ignore_dotfiles = *b;
  }
  // Both values are honoured by one mechanism: sluiced fingerprints the whole config path,
  // following symlinks, so a swap of the root (watch_root) and a write under the subdirectory are
  // both seen. Read only to refuse a value that is not a boolean.
  r.Bool("RUNTIME_WATCH_ROOT", true);
  if (!r.FlagGiven("--merge-domain-config")) {
    if (auto b = r.Bool("MERGE_DOMAIN_CONFIG", false)) s.merge_domains = *b;
  }
  s.xds_settings.merge_domains = s.merge_domains;
  if (!r.FlagGiven("--force-start")) {
    if (auto b = r.Bool("FORCE_START_WITHOUT_INITIAL_CONFIG", false)) s.force_start = *b;
  }
  if (!r.FlagGiven("--healthy-with-one-config")) {
    if (auto b = r.Bool("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", false)) {
      s.healthy_with_one_config = *b;
    }
  }
}

void ApplyStats(EnvReader& r) {
  ServerSettings& s = r.settings();
  if (!r.FlagGiven("--disable-stats")) {
    if (auto b = r.Bool("DISABLE_STATS", false)) s.disable_stats = *b;
  }
  if (r.Bool("USE_DOG_STATSD", false).value_or(false)) {
    r.Refuse("USE_DOG_STATSD", "DogStatsD is not supported; use USE_STATSD or USE_PROMETHEUS");
  } else {
    r.NoteUnused({"USE_DOG_STATSD_MOGRIFIERS"}, "USE_DOG_STATSD");
  }
  // --statsd and --prometheus configure their sink themselves; the variables are then not read.
  const bool statsd_flag = r.FlagGiven("--statsd");
  const bool prometheus_flag = r.FlagGiven("--prometheus");
  const bool statsd =
      statsd_flag ? s.statsd.enabled : r.Bool("USE_STATSD", true).value_or(s.statsd.enabled);
  const bool prometheus =
      prometheus_flag ? !s.prometheus.empty() : r.Bool("USE_PROMETHEUS", false).value_or(false);
  if (statsd && prometheus && !s.disable_stats && !statsd_flag && !prometheus_flag) {
    r.Refuse("USE_PROMETHEUS", "cannot be used with USE_STATSD, as in the reference; set one");
  }
  s.statsd.enabled = statsd && !s.disable_stats;
  if (!statsd_flag) {
    if (auto host = r.Get("STATSD_HOST")) s.statsd.host = *host;
    if (auto port = r.Int("STATSD_PORT", 1, 65535, std::nullopt)) {
      s.statsd.port = static_cast<int>(*port);
    }
  }
  if (auto tags = r.Get("EXTRA_TAGS")) {
    absl::StatusOr<std::vector<std::pair<std::string, std::string>>> parsed =
        ParseGoStringMap(*tags);
    if (parsed.ok()) {
      s.statsd.tags = *std::move(parsed);
    } else {
      r.Refuse("EXTRA_TAGS", StdView(parsed.status().message()));
    }
  }
  if (auto every = r.FlagGiven("--statsd-flush-ms") ? std::nullopt
                                                    : r.Duration("STATS_FLUSH_INTERVAL", "10s")) {
    if (every->count() > 0) {
      s.statsd.flush_interval = *every;
    } else {
      r.Refuse("STATS_FLUSH_INTERVAL", "must be positive");
    }
  }
  if (s.disable_stats) s.prometheus.clear();
  if (prometheus_flag) return;  // --prometheus (and --prometheus-path) configure the listener.
  if (!prometheus || s.disable_stats) {
    r.NoteUnused({"PROMETHEUS_ADDR", "PROMETHEUS_PATH", "PROMETHEUS_MAPPER_YAML",
                  "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS"},
                 "USE_PROMETHEUS");
    return;
  }
  std::string addr = r.Get("PROMETHEUS_ADDR").value_or(":9090");
  // Go's ":9090" listens on every interface.
  if (!addr.empty() && addr[0] == ':') addr = "0.0.0.0" + addr;
  s.prometheus = addr;
  if (!r.FlagGiven("--prometheus-path")) {
    s.prometheus_path = r.Get("PROMETHEUS_PATH").value_or("/metrics");
  }
  if (r.Get("PROMETHEUS_MAPPER_YAML").has_value()) {
    r.Refuse("PROMETHEUS_MAPPER_YAML",
             "not supported: sluiced exports Prometheus names of its own (docs/sluiced.md); unset "
             "it");
  }
  if (r.Bool("PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", false).value_or(false)) {
    r.Refuse("PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS",
             "not supported: the response time histogram is in seconds");
  }
}

void ApplyLimits(EnvReader& r) {
  ServerSettings& s = r.settings();
  if (r.Get("EXPIRATION_JITTER_MAX_SECONDS").has_value()) {
    r.Refuse("EXPIRATION_JITTER_MAX_SECONDS",
             "not supported: sluice's keys expire when their state is back to full, each at its "
             "own time (docs/redis.md); unset it");
  }
  if (!r.FlagGiven("--local-cache-entries") && !r.FlagGiven("--local-cache-bytes")) {
    if (auto bytes = r.Int("LOCAL_CACHE_SIZE_IN_BYTES", 0, int64_t{1} << 40, std::nullopt)) {
      s.local_cache_bytes = static_cast<size_t>(*bytes);
    }
  }
  if (auto ratio = r.FlagGiven("--near-limit-ratio") ? std::nullopt : r.Get("NEAR_LIMIT_RATIO")) {
    float value = 0;
    if (!absl::SimpleAtof(*ratio, &value) || !(value > 0 && value <= 1)) {
      r.Refuse("NEAR_LIMIT_RATIO", absl::StrCat("'", *ratio, "' is not a number in (0, 1]"));
    } else {
      s.near_limit_ratio = value;
    }
  }
  if (!r.FlagGiven("--key-prefix")) {
    if (auto prefix = r.Get("CACHE_KEY_PREFIX")) s.key_prefix = *prefix;
  }
  if (!r.FlagGiven("--reference-semantics")) {
    if (auto b = r.Bool("SLUICE_REFERENCE_SEMANTICS", std::nullopt)) s.reference_semantics = *b;
  }
  const std::optional<bool> stop = r.Bool("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", std::nullopt);
  if (s.reference_semantics) {
    // The reference's meaning, its default false included.
    s.stop_increment_when_over_limit = stop.value_or(false);
  } else if (stop == false) {
    r.Refuse("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT",
             "sluiced never counts a rejected request (all-or-nothing, the behaviour of true); "
             "false is honoured only in exact-reference mode (--reference-semantics or "
             "SLUICE_REFERENCE_SEMANTICS=true); unset it, set it to true, or turn that mode on");
  }
  if (!r.FlagGiven("--response-headers")) {
    if (auto b = r.Bool("LIMIT_RESPONSE_HEADERS_ENABLED", false)) s.response_headers = *b;
  }
  if (auto h = r.Get("LIMIT_LIMIT_HEADER")) s.header_names.limit = *h;
  if (auto h = r.Get("LIMIT_REMAINING_HEADER")) s.header_names.remaining = *h;
  if (auto h = r.Get("LIMIT_RESET_HEADER")) s.header_names.reset = *h;
  if (!r.FlagGiven("--shadow-mode")) {
    if (auto b = r.Bool("SHADOW_MODE", false)) s.shadow_mode = *b;
  }
  if (!r.FlagGiven("--dashboard")) {
    if (auto b = r.Bool("SLUICE_DASHBOARD", true)) s.dashboard = *b;
  }
  if (!r.FlagGiven("--quota-mode")) {
    if (auto b = r.Bool("QUOTA_MODE", false)) s.quota_mode = *b;
  }
  if (!r.FlagGiven("--response-dynamic-metadata")) {
    if (auto b = r.Bool("RESPONSE_DYNAMIC_METADATA", false)) s.response_dynamic_metadata = *b;
  }
  if (r.Bool("TRACING_ENABLED", false).value_or(false)) {
    r.Refuse("TRACING_ENABLED", "tracing (OpenTelemetry) is not supported this release");
  } else {
    r.NoteUnused(
        {"TRACING_SERVICE_NAME", "TRACING_SERVICE_NAMESPACE", "TRACING_SERVICE_INSTANCE_ID",
         "TRACING_EXPORTER_PROTOCOL", "TRACING_SAMPLING_RATE"},
        "TRACING_ENABLED");
  }
}

}  // namespace

const std::vector<std::string_view>& ReferenceVariableNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v = {"HOST",
                                       "PORT",
                                       "DEBUG_HOST",
                                       "DEBUG_PORT",
                                       "GRPC_UDS",
                                       "GRPC_HOST",
                                       "GRPC_PORT",
                                       "GRPC_MAX_CONNECTION_AGE",
                                       "GRPC_MAX_CONNECTION_AGE_GRACE",
                                       "GRPC_SERVER_USE_TLS",
                                       "GRPC_SERVER_TLS_CERT",
                                       "GRPC_SERVER_TLS_KEY",
                                       "GRPC_CLIENT_TLS_CACERT",
                                       "GRPC_CLIENT_TLS_SAN",
                                       "LOG_LEVEL",
                                       "LOG_FORMAT",
                                       "CONFIG_TYPE",
                                       "FORCE_START_WITHOUT_INITIAL_CONFIG",
                                       "USE_DOG_STATSD",
                                       "USE_DOG_STATSD_MOGRIFIERS",
                                       "USE_STATSD",
                                       "STATSD_HOST",
                                       "STATSD_PORT",
                                       "EXTRA_TAGS",
                                       "STATS_FLUSH_INTERVAL",
                                       "DISABLE_STATS",
                                       "USE_PROMETHEUS",
                                       "PROMETHEUS_ADDR",
                                       "PROMETHEUS_PATH",
                                       "PROMETHEUS_MAPPER_YAML",
                                       "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS",
                                       "RUNTIME_ROOT",
                                       "RUNTIME_SUBDIRECTORY",
                                       "RUNTIME_APPDIRECTORY",
                                       "RUNTIME_IGNOREDOTFILES",
                                       "RUNTIME_WATCH_ROOT",
                                       "EXPIRATION_JITTER_MAX_SECONDS",
                                       "LOCAL_CACHE_SIZE_IN_BYTES",
                                       "NEAR_LIMIT_RATIO",
                                       "CACHE_KEY_PREFIX",
                                       "BACKEND_TYPE",
                                       "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT",
                                       "LIMIT_RESPONSE_HEADERS_ENABLED",
                                       "LIMIT_LIMIT_HEADER",
                                       "LIMIT_REMAINING_HEADER",
                                       "LIMIT_RESET_HEADER",
                                       "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED",
                                       "REDIS_SOCKET_TYPE",
                                       "REDIS_TYPE",
                                       "REDIS_URL",
                                       "REDIS_POOL_SIZE",
                                       "REDIS_AUTH",
                                       "REDIS_TLS",
                                       "REDIS_TLS_CLIENT_CERT",
                                       "REDIS_TLS_CLIENT_KEY",
                                       "REDIS_TLS_CACERT",
                                       "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION",
                                       "REDIS_PIPELINE_WINDOW",
                                       "REDIS_PIPELINE_LIMIT",
                                       "REDIS_CLUSTER_PIPELINE_PARALLELISM",
                                       "REDIS_PERSECOND",
                                       "REDIS_PERSECOND_SOCKET_TYPE",
                                       "REDIS_PERSECOND_TYPE",
                                       "REDIS_PERSECOND_URL",
                                       "REDIS_PERSECOND_POOL_SIZE",
                                       "REDIS_PERSECOND_AUTH",
                                       "REDIS_PERSECOND_TLS",
                                       "REDIS_SENTINEL_AUTH",
                                       "REDIS_PERSECOND_SENTINEL_AUTH",
                                       "REDIS_PERSECOND_PIPELINE_WINDOW",
                                       "REDIS_PERSECOND_PIPELINE_LIMIT",
                                       "REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM",
                                       "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION",
                                       "REDIS_TIMEOUT",
                                       "REDIS_PERSECOND_TIMEOUT",
                                       "REDIS_POOL_ON_EMPTY_BEHAVIOR",
                                       "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR",
                                       "REDIS_STARTUP_INITIAL_INTERVAL",
                                       "REDIS_STARTUP_MAX_INTERVAL",
                                       "REDIS_STARTUP_MAX_ELAPSED_TIME",
                                       "MEMCACHE_HOST_PORT",
                                       "MEMCACHE_MAX_IDLE_CONNS",
                                       "MEMCACHE_SRV",
                                       "MEMCACHE_SRV_REFRESH",
                                       "MEMCACHE_TLS",
                                       "MEMCACHE_TLS_CLIENT_CERT",
                                       "MEMCACHE_TLS_CLIENT_KEY",
                                       "MEMCACHE_TLS_CACERT",
                                       "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION",
                                       "SHADOW_MODE",
                                       "QUOTA_MODE",
                                       "RESPONSE_DYNAMIC_METADATA",
                                       "MERGE_DOMAIN_CONFIG",
                                       "TRACING_ENABLED",
                                       "TRACING_SERVICE_NAME",
                                       "TRACING_SERVICE_NAMESPACE",
                                       "TRACING_SERVICE_INSTANCE_ID",
                                       "TRACING_EXPORTER_PROTOCOL",
                                       "TRACING_SAMPLING_RATE"};
    // The xDS group follows FORCE_START_WITHOUT_INITIAL_CONFIG, as in settings.go.
    const auto force_start = std::find(v.begin(), v.end(), "FORCE_START_WITHOUT_INITIAL_CONFIG");
    v.insert(force_start + 1, XdsVariableNames().begin(), XdsVariableNames().end());
    return v;
  }();
  return names;
}

EnvLookup ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

absl::Status ApplyReferenceEnvironment(const EnvLookup& env,
                                       const absl::flat_hash_set<std::string>& flags_given,
                                       ServerSettings& settings) {
  const bool reference_mode = settings.config.empty() && !flags_given.contains("--config");
  EnvReader reader(env, flags_given, reference_mode, settings);
  if (reference_mode) settings.notes.emplace_back("started the reference's way (no --config)");
  ApplyListeners(reader);
  ApplyLogging(reader);
  ApplyConfig(reader);
  ApplyStats(reader);
  ApplyLimits(reader);
  internal::ApplyRedisEnvironment(reader);
  if (reader.refusals().empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("refusing to start; these settings cannot be honoured: ",
                   absl::StrJoin(reader.refusals(), "; ")));
}

}  // namespace sluice::server
