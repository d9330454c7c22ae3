// sluiced: a rate limit service, drop-in for envoyproxy/ratelimit (gRPC and /json), on the memory
// or the Redis store. Its settings come from flags and, for whatever no flag gives, from the
// reference's environment variables (settings.h), so a reference deployment starts it unchanged.
// See docs/sluiced.md and docs/compatibility.md.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "spdlog/spdlog.h"
#include <CLI/CLI.hpp>

#include "sluice/version.h"

#include "src/server/admin/listeners.h"
#include "src/server/server_main.h"
#include "src/server/settings.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

using ::sluice::internal::StdView;

// Flags whose values are not ServerSettings fields as such; copied in after parsing.
struct ExtraFlags {
  std::string validate;
  bool print_version = false;
  std::string statsd;
  int64_t statsd_flush_ms = 0;
  int64_t grpc_max_connection_age_ms = 0;
  int64_t grpc_max_connection_age_grace_ms = 0;
  int64_t rlqs_top_up_interval_ms = 1000;
  int64_t redis_startup_max_elapsed_ms = 0;
};

void AddFlags(CLI::App& app, ServerSettings& s, ExtraFlags& x) {
  // Config.
  app.add_option("--config", s.config,
                 "Config file or directory of *.yaml files (without it: RUNTIME_ROOT/"
                 "RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY, as the reference)");
  app.add_option("--validate", x.validate, "Check a config file or directory and exit");
  app.add_flag("--merge-domain-config", s.merge_domains,
               "Several files may define one domain (MERGE_DOMAIN_CONFIG)");
  app.add_option("--ignore-dotfiles", s.ignore_dotfiles,
                 "Skip config files whose names start with '.' (RUNTIME_IGNOREDOTFILES)")
      ->capture_default_str();
  app.add_flag("--force-start", s.force_start,
               "Start without a loadable config, unhealthy until one loads "
               "(FORCE_START_WITHOUT_INITIAL_CONFIG)");
  app.add_flag("--healthy-with-one-config", s.healthy_with_one_config,
               "Unhealthy until a config naming a domain is loaded "
               "(HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED)");
  app.add_option("--config-poll-ms", s.config_poll_ms,
                 "How often to check the config files (and health)")
      ->capture_default_str();
  // Stores.
  app.add_option("--store", s.store,
                 "memory | redis://[user:pass@]host:port[/db] | rediss:// | redis-cluster:// | "
                 "redis-sentinel://")
      ->capture_default_str();
  app.add_option("--per-second-store", s.per_second_store,
                 "A store URL for the limits of one second (REDIS_PERSECOND)");
  app.add_option("--failure-mode", s.failure_mode,
                 "When the store fails: error (gRPC UNAVAILABLE / HTTP 503), allow, deny, local")
      ->capture_default_str();
  app.add_option("--expected-instances", s.expected_instances,
                 "Failure mode local: divide limits by this many instances")
      ->capture_default_str();
  app.add_option("--divide-by-leaseholders", s.divide_by_leaseholders,
                 "Failure mode local with a lease=true store: divide limits by the instances it "
                 "last counted as leaseholders, when more than --expected-instances")
      ->envname("SLUICE_DIVIDE_BY_LEASEHOLDERS")
      ->capture_default_str();
  app.add_option("--memory-store-max-bytes", s.memory_store_max_bytes,
                 "--store memory: bound on the bytes its entries take (keys and slots); new keys "
                 "beyond it evict the soonest-expiring ones")
      ->envname("SLUICE_MEMORY_STORE_MAX_BYTES")
      ->capture_default_str();
  app.add_option("--key-prefix", s.key_prefix, "Redis: prefix of every key (CACHE_KEY_PREFIX)");
  app.add_option("--redis-startup-max-elapsed-ms", x.redis_startup_max_elapsed_ms,
                 "Redis: exit when it does not answer within this at start; 0: do not wait "
                 "(REDIS_STARTUP_MAX_ELAPSED_TIME)")
      ->capture_default_str();
  // Listeners.
  app.add_option("--http", s.http, "HTTP listen address (PORT, HOST)")->capture_default_str();
  app.add_option("--grpc", s.grpc, "gRPC listen address, or unix:/path (GRPC_PORT, GRPC_HOST)")
      ->capture_default_str();
  app.add_option("--debug", s.debug, "Debug listen address, /rlconfig (DEBUG_PORT, DEBUG_HOST)");
  app.add_option("--prometheus", s.prometheus,
                 "Prometheus listen address (USE_PROMETHEUS, PROMETHEUS_ADDR)");
  app.add_option("--prometheus-path", s.prometheus_path, "Its path (PROMETHEUS_PATH)")
      ->capture_default_str();
  app.add_option("--http-threads", s.http_threads, "HTTP I/O threads")->capture_default_str();
  for (auto [name, field] : {std::pair{"--http-max-connections", &s.http_max_connections},
                             std::pair{"--grpc-max-connections", &s.grpc_max_connections}}) {
    app.add_option(name, *field,
                   "Open connections beyond which new ones are closed at once "
                   "(0: a quarter of the file descriptor limit, at most 10000)")
        ->capture_default_str();
  }
  app.add_option("--http-max-connections-per-address", s.http_max_connections_per_address,
                 "Open connections from one IP address beyond which its new ones are closed at "
                 "once, on each HTTP listener; 0: no such cap")
      ->envname("SLUICE_HTTP_MAX_CONNECTIONS_PER_ADDRESS")
      ->capture_default_str();
  app.add_option("--grpc-max-connections-per-address", s.grpc_max_connections_per_address,
                 "Open gRPC connections from one IP address beyond which its new ones are closed "
                 "at once (plain TCP on an IP literal); 0: no such cap")
      ->envname("SLUICE_GRPC_MAX_CONNECTIONS_PER_ADDRESS")
      ->capture_default_str();
  app.add_option("--grpc-max-in-flight", s.grpc_max_in_flight,
                 "gRPC calls in flight beyond which calls get RESOURCE_EXHAUSTED; each connection "
                 "gets a share of them")
      ->check(CLI::Range(size_t{1}, size_t{100'000'000}))
      ->capture_default_str();
  app.add_option("--grpc-max-concurrent-streams", s.grpc_max_concurrent_streams,
                 "Concurrent calls (HTTP/2 streams) per gRPC connection; a client queues the "
                 "rest on its side")
      ->envname("SLUICE_GRPC_MAX_CONCURRENT_STREAMS")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--grpc-decision-threads", s.grpc_decision_threads,
                 "Threads that run the gRPC calls waiting for their connection's turn while "
                 "several connections are busy; 0: one per hardware thread but one")
      ->envname("SLUICE_GRPC_DECISION_THREADS")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--memory-release-step-bytes", s.memory_release_step_bytes,
                 "Give freed heap memory back to the OS once RSS has grown this much since the "
                 "last time and as much is free (checked every config poll); 0: never")
      ->capture_default_str();
  app.add_option("--drain-ms", s.drain_ms, "After SIGTERM, fail health checks this long")
      ->capture_default_str();
  app.add_option("--grpc-max-connection-age-ms", x.grpc_max_connection_age_ms,
                 "Close gRPC connections after this long, +-10%; 0: never "
                 "(GRPC_MAX_CONNECTION_AGE)")
      ->capture_default_str();
  app.add_option("--grpc-max-connection-age-grace-ms", x.grpc_max_connection_age_grace_ms,
                 "Then give their calls this long; 0: unlimited (GRPC_MAX_CONNECTION_AGE_GRACE)")
      ->capture_default_str();
  app.add_option("--grpc-engine", s.grpc_engine,
                 "What serves gRPC: grpc (gRPC C++) or nghttp2 (leaner; plain TCP on an IP "
                 "literal only) (SLUICE_GRPC_ENGINE)")
      ->check(CLI::IsMember({"grpc", "nghttp2"}))
      ->capture_default_str();
  app.add_flag("--rlqs,!--no-rlqs", s.rlqs,
               "Serve the Rate Limit Quota Service on the gRPC listener (gRPC C++ engine only)");
  app.add_option("--rlqs-top-up-interval-ms", x.rlqs_top_up_interval_ms,
                 "Ask again this often, between reports, for quota grants held below their share "
                 "and send those that rose; 0: only at reports")
      ->envname("SLUICE_RLQS_TOP_UP_INTERVAL_MS")
      ->check(CLI::Range(int64_t{0}, int64_t{60'000}))
      ->capture_default_str();
  app.add_option("--grpc-tls-cert", s.grpc_tls_cert, "gRPC TLS certificate, PEM");
  app.add_option("--grpc-tls-key", s.grpc_tls_key, "gRPC TLS key, PEM");
  app.add_option("--grpc-tls-client-ca", s.grpc_tls_client_ca,
                 "Require client certificates signed by this CA, PEM (mTLS)");
  // Logging.
  app.add_option("--log-level", s.log_level, "trace|debug|info|warn|error|critical|off")
      ->check(
          CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--log-format", s.log_format, "text | json (LOG_FORMAT)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_flag("--version", x.print_version, "Print the version and how it was built, and exit");
  // Decisions.
  app.add_flag("--response-headers", s.response_headers,
               "Add RateLimit-* and Retry-After headers to responses");
  app.add_flag("--shadow-mode", s.shadow_mode, "Never deny; count what would be denied");
  app.add_flag("--dashboard", s.dashboard,
               "Serve the live dashboard at /dashboard; --dashboard=false turns it off "
               "(SLUICE_DASHBOARD)");
  app.add_flag("--quota-mode", s.quota_mode,
               "Every descriptor in quota mode: over only when all are (QUOTA_MODE)");
  app.add_flag("--response-dynamic-metadata", s.response_dynamic_metadata,
               "Return the passed descriptors' config metadata in dynamic_metadata "
               "(RESPONSE_DYNAMIC_METADATA)");
  app.add_flag("--reference-semantics", s.reference_semantics,
               "Decide exactly as envoyproxy/ratelimit: count rejected hits, a 0-hit check OK at "
               "the limit, no Retry-After (SLUICE_REFERENCE_SEMANTICS)");
  app.add_option("--near-limit-ratio", s.near_limit_ratio,
                 "Hits above this share of a limit count as near_limit (NEAR_LIMIT_RATIO)")
      ->capture_default_str();
  app.add_option("--local-cache-entries", s.local_cache_entries, "Over-limit cache size (0 = off)")
      ->capture_default_str();
  app.add_option("--local-cache-bytes", s.local_cache_bytes,
                 "Over-limit cache bound in bytes; alone it turns the cache on "
                 "(LOCAL_CACHE_SIZE_IN_BYTES)")
      ->capture_default_str();
  // Stats.
  app.add_option("--statsd", x.statsd,
                 "Send counters to statsd at host:port over UDP (USE_STATSD)");
  app.add_option("--statsd-flush-ms", x.statsd_flush_ms,
                 "How often to send them (STATS_FLUSH_INTERVAL)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--disable-stats", s.disable_stats,
               "No statsd, no Prometheus listener, no /metrics (DISABLE_STATS)");
}

// Copies the flags that are not settings fields as such; InvalidArgument for a bad --statsd.
absl::Status ApplyExtraFlags(const CLI::App& app, const ExtraFlags& x, ServerSettings& s) {
  s.grpc_max_connection_age = std::chrono::milliseconds(x.grpc_max_connection_age_ms);
  s.grpc_max_connection_age_grace = std::chrono::milliseconds(x.grpc_max_connection_age_grace_ms);
  s.rlqs_top_up_interval = std::chrono::milliseconds(x.rlqs_top_up_interval_ms);
  s.redis_startup_max_elapsed = std::chrono::milliseconds(x.redis_startup_max_elapsed_ms);
  if (app.count("--near-limit-ratio") > 0 && !(s.near_limit_ratio > 0 && s.near_limit_ratio <= 1)) {
    return absl::InvalidArgumentError("--near-limit-ratio: must be in (0, 1]");
  }
  if (app.count("--statsd-flush-ms") > 0) {
    s.statsd.flush_interval = std::chrono::milliseconds(x.statsd_flush_ms);
  }
  if (app.count("--statsd") > 0) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress("--statsd", x.statsd);
    if (!a.ok()) return a.status();
    if (a->port == 0) return absl::InvalidArgumentError("--statsd: the port must not be 0");
    s.statsd.enabled = true;
    s.statsd.host = a->host;
    s.statsd.port = a->port;
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  ServerSettings settings;
  ExtraFlags extra;
  CLI::App app{"sluiced: distributed rate limit service (Envoy RLS compatible)"};
  AddFlags(app, settings, extra);
  CLI11_PARSE(app, argc, argv);
  if (extra.print_version) {
    std::cout << "sluiced " << kBuildInfo.version << "\n"
              << "compiler: " << kBuildInfo.compiler << "\n"
              << "build type: " << kBuildInfo.build_type << "\n";
    return 0;
  }
  if (!extra.validate.empty()) {
    return ValidateConfig(extra.validate,
                          ConfigLoadOptions{.merge_domains = settings.merge_domains,
                                            .ignore_dotfiles = settings.ignore_dotfiles});
  }
  if (absl::Status s = ApplyExtraFlags(app, extra, settings); !s.ok()) {
    std::cerr << "sluiced: " << StdView(s.message()) << "\n";
    return 2;
  }
  absl::flat_hash_set<std::string> given;
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() > 0) given.insert(option->get_name());
  }
  if (absl::Status s = ApplyReferenceEnvironment(ProcessEnvironment(), given, settings); !s.ok()) {
    std::cerr << "sluiced: " << StdView(s.message()) << "\n";
    return 2;
  }
  if (absl::Status s = SetUpLogging(settings); !s.ok()) {
    std::cerr << "sluiced: " << StdView(s.message()) << "\n";
    return 2;
  }
  if (settings.config.empty() && !settings.xds) {
    std::cerr << "sluiced: --config is required\n";
    return 2;
  }
  return RunServer(settings);
}

}  // namespace
}  // namespace sluice::server

int main(int argc, char** argv) {
  // Errors are values inside sluiced; an exception that still gets here (out of memory, a thread
  // that cannot start) is logged and ends the process with a failure status, not an abort.
  try {
    return sluice::server::Main(argc, argv);
  } catch (const std::exception& e) {
    spdlog::critical("sluiced: fatal: {}", e.what());
  } catch (...) {
    spdlog::critical("sluiced: fatal: unknown exception");
  }
  return EXIT_FAILURE;
}
