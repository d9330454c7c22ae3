// ServerSettings: everything sluiced is started with, from its flags and from
// envoyproxy/ratelimit's environment variables (src/settings/settings.go), so that a reference
// deployment starts sluiced unchanged.
//
// Flags win: a variable is read only when the flag it maps to was not given. Every variable of the
// reference is either honoured with the reference's meaning, or refused by name with the reason
// (ApplyReferenceEnvironment() fails, listing every refusal); none is silently ignored. A variable
// that only configures a feature that is off (a memcache setting with BACKEND_TYPE=redis) is
// unused, as in the reference, and said so in `notes`. docs/compatibility.md has the table.
//
// "Started the reference's way" means without --config: the reference's defaults then apply to
// what neither a flag nor a variable sets (listeners on 0.0.0.0:8080 and :8081, the debug port
// 6070, the config under RUNTIME_ROOT, LOG_LEVEL WARN, statsd on localhost:8125, Redis). With
// --config, sluiced's own defaults apply (loopback listeners, memory store, no statsd) and only the
// variables that are set change them.
//
// Example:
//   ServerSettings settings;            // sluiced's defaults
//   ... CLI11 fills `settings`, collecting the flags given ...
//   SLUICE_RETURN_IF_ERROR(ApplyReferenceEnvironment(ProcessEnvironment(), given, settings));
//
// Thread safety: ApplyReferenceEnvironment() only touches its arguments.
#ifndef SLUICE_SERVER_SETTINGS_H_
#define SLUICE_SERVER_SETTINGS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"

#include "sluice/memory_store.h"

#include "src/server/rls/rls_headers.h"
#include "src/server/stats/statsd_settings.h"
#include "src/server/xds/xds_settings.h"

namespace sluice::server {

struct ServerSettings {
  // Config: a file or a directory of *.yaml files, or with `xds` (CONFIG_TYPE=GRPC_XDS_SOTW) from
  // the management server of xds_settings (then `config` is unused).
  std::string config{};
  bool xds = false;
  XdsSettings xds_settings{};
  bool merge_domains = false;
  bool ignore_dotfiles = true;
  // Start (and stay up) without a loadable config; unhealthy until one loads.
  bool force_start = false;
  // Healthy only once a config with at least one domain is loaded.
  bool healthy_with_one_config = false;
  int config_poll_ms = 1000;

  // Stores: a store URL (sluice/store_url.h); per_second_store, when set, holds the limits of one
  // second (the reference's REDIS_PERSECOND).
  std::string store = "memory";
  std::string per_second_store{};
  std::string failure_mode = "error";
  int64_t expected_instances = 1;
  // Failure mode local: divide by the leaseholders a leased Redis store counted, when more.
  bool divide_by_leaseholders = true;
  size_t memory_store_max_bytes = MemoryStoreOptions{}.max_bytes;
  // Redis: prefix of every key (CACHE_KEY_PREFIX); empty keeps the store's default.
  std::string key_prefix{};
  // At start, wait this long for Redis and exit if it does not answer; 0 does not wait.
  std::chrono::milliseconds redis_startup_max_elapsed{0};

  // Listeners ("host:port"; gRPC also "unix:/path"). Empty: off.
  std::string http = "127.0.0.1:8080";
  std::string grpc = "127.0.0.1:8081";
  std::string debug{};
  std::string prometheus{};
  std::string prometheus_path = "/metrics";
  int http_threads = 2;
  int drain_ms = 2000;
  // Open connections per listener beyond which new ones are closed at once; 0: a quarter of the
  // (raised) file descriptor limit, at most 10,000 (FdBudget()).
  size_t http_max_connections = 0;
  size_t grpc_max_connections = 0;
  // Open connections from one IP address per listener beyond which its new ones are closed at
  // once; 0: no such cap (SLUICE_HTTP_MAX_CONNECTIONS_PER_ADDRESS,
  // SLUICE_GRPC_MAX_CONNECTIONS_PER_ADDRESS). gRPC: where sluiced accepts the connections itself.
  size_t http_max_connections_per_address = 0;
  size_t grpc_max_connections_per_address = 0;
  // gRPC decisions waiting for the store beyond which calls get RESOURCE_EXHAUSTED at once; at
  // least 1 (0 would refuse every call). The default is GrpcServerOptions' own.
  size_t grpc_max_in_flight = 10'000;
  // Concurrent calls (HTTP/2 streams) per gRPC connection (SLUICE_GRPC_MAX_CONCURRENT_STREAMS).
  int grpc_max_concurrent_streams = 100;
  // Threads that run gRPC calls waiting for their connection's turn; 0: one per hardware thread
  // but one (SLUICE_GRPC_DECISION_THREADS).
  int grpc_decision_threads = 0;
  // Freed heap memory is given back to the OS (malloc_trim) once RSS has grown this many bytes
  // since the last time and malloc holds as much free (MemoryRelease); 0: never.
  uint64_t memory_release_step_bytes = uint64_t{8} << 20;
  // gRPC: a connection lives this long (+-10%), then gets this grace (0: unlimited).
  std::chrono::milliseconds grpc_max_connection_age{0};
  std::chrono::milliseconds grpc_max_connection_age_grace{0};
  // gRPC over TLS when cert and key are set; client certificates required when client_ca is.
  std::string grpc_tls_cert{};
  std::string grpc_tls_key{};
  std::string grpc_tls_client_ca{};
  // What serves gRPC: "grpc" (gRPC C++) or "nghttp2" (plain TCP only; SLUICE_GRPC_ENGINE).
  std::string grpc_engine = "grpc";
  // Serve the Rate Limit Quota Service beside the rate limit service (gRPC C++ engine only;
  // docs/rlqs.md). --no-rlqs turns it off.
  bool rlqs = true;
  // How often grants held below their share are asked for again between reports; 0: never.
  std::chrono::milliseconds rlqs_top_up_interval{1000};

  // Logging: trace, debug, info, warn, error, critical, off; text or json.
  std::string log_level = "info";
  std::string log_format = "text";

  // Decisions.
  bool response_headers = false;
  RlsHeaderNames header_names{};
  bool shadow_mode = false;
  // The live dashboard at /dashboard, where /json is and on the debug listener (--dashboard,
  // SLUICE_DASHBOARD). Default: on.
  bool dashboard = true;
  bool quota_mode = false;
  // The request and the passed descriptors' config `metadata` in the response's dynamic_metadata.
  bool response_dynamic_metadata = false;
  // Exact-reference mode (--reference-semantics, SLUICE_REFERENCE_SEMANTICS): decide as
  // envoyproxy/ratelimit does (docs/compatibility.md, "Exact-reference mode").
  bool reference_semantics = false;
  // With reference_semantics: STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true.
  bool stop_increment_when_over_limit = false;
  float near_limit_ratio = 0.8f;
  size_t local_cache_entries = 0;
  size_t local_cache_bytes = 0;

  // Stats.
  StatsdSettings statsd{};
  bool disable_stats = false;

  // What the environment did, for the start-up log (never secrets).
  std::vector<std::string> notes{};
};

// Looks a variable up: its value, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// Returns the process environment as an EnvLookup.
EnvLookup ProcessEnvironment();

// The names of envoyproxy/ratelimit's settings, in settings.go order.
const std::vector<std::string_view>& ReferenceVariableNames();

// ApplyReferenceEnvironment()
//
// Applies the reference's variables found by `env` to `settings`, except those mapping to a flag
// in `flags_given` (names as "--http"); with settings.config empty and "--config" not given, the
// reference's defaults first (started the reference's way). Returns OK, or InvalidArgument whose
// message names every variable refused and why (settings then unspecified).
absl::Status ApplyReferenceEnvironment(const EnvLookup& env,
                                       const absl::flat_hash_set<std::string>& flags_given,
                                       ServerSettings& settings);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_SETTINGS_H_
