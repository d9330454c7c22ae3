#include "src/server/server_main.h"

#include <atomic>
#include <csignal>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"
#include <grpc/support/log.h>

#include "sluice/clock.h"
#include "sluice/failure_policy.h"
#include "sluice/open_store.h"

#include "src/server/admin/health.h"
#include "src/server/admin/http_api.h"
#include "src/server/admin/http_server.h"
#include "src/server/admin/listeners.h"
#include "src/server/config_reloader.h"
#include "src/server/config_watcher.h"
#include "src/server/dashboard/dashboard.h"
#include "src/server/dashboard/dashboard_routes.h"
#include "src/server/fd_limit.h"
#include "src/server/grpc/grpc_server.h"
#include "src/server/grpc/rlqs_grpc_service.h"
#include "src/server/grpc/rls_grpc_service.h"
#include "src/server/memory_release.h"
#include "src/server/rlqs/quota_allocator_factory.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/rls/rls_observer.h"
#include "src/server/stats/json_log_format.h"
#include "src/server/stats/metrics.h"
#include "src/server/stats/statsd_sink.h"
#include "src/server/stats/store_state_source.h"
#include "src/server/xds/xds_client.h"
#include "src/store/split/per_second_store.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

using ::sluice::internal::StdView;

// gRPC's own lines (gpr_log), through spdlog: with LOG_FORMAT=json they are JSON too.
void LogGrpcLine(gpr_log_func_args* args) {
  switch (args->severity) {
    case GPR_LOG_SEVERITY_DEBUG:
      spdlog::debug("grpc: {}", args->message);
      break;
    case GPR_LOG_SEVERITY_INFO:
      spdlog::info("grpc: {}", args->message);
      break;
    default:
      spdlog::error("grpc: {}", args->message);
  }
}

// The decision store and what /healthcheck probes: the main store, and with a per-second store
// (REDIS_PERSECOND) both behind a PerSecondStore.
struct Stores {
  OpenedStore main;
  std::optional<OpenedStore> per_second;
  std::unique_ptr<PerSecondStore> split;

  Store& decisions() { return split != nullptr ? *split : static_cast<Store&>(*main.store); }
  std::vector<Store*> health() {
    std::vector<Store*> out = {main.backend};
    if (per_second.has_value()) out.push_back(per_second->backend);
    return out;
  }
};

absl::StatusOr<Stores> MakeStores(const ServerSettings& s) {
  absl::StatusOr<FailureMode> mode = ParseFailureMode(s.failure_mode);
  if (!mode.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--failure-mode: ", mode.status().message()));
  }
  // Each descriptor is its own Redis Cluster slot (docs/keys.md), so on a cluster a request with
  // several descriptors is split into one atomic call per slot, as envoyproxy/ratelimit does per
  // descriptor (docs/redis.md, "Keys on Redis Cluster"). One server ignores this.
  const OpenStoreOptions options{
      .policy = FailurePolicy{.mode = *mode,
                              .expected_instances = s.expected_instances,
                              .divide_by_leaseholders = s.divide_by_leaseholders},
      .memory = MemoryStoreOptions{.max_bytes = s.memory_store_max_bytes},
      .key_prefix = s.key_prefix,
      .cross_slot = CrossSlot::kSplit,
      .startup_wait = s.redis_startup_max_elapsed};
  Stores stores;
  absl::StatusOr<OpenedStore> main = OpenStore(s.store, options);
  if (!main.ok()) {
    return absl::Status(main.status().code(), absl::StrCat("--store: ", main.status().message()));
  }
  stores.main = *std::move(main);
  spdlog::info("store: {} (failure mode {})", stores.main.description, s.failure_mode);
  if (!s.per_second_store.empty()) {
    absl::StatusOr<OpenedStore> per_second = OpenStore(s.per_second_store, options);
    if (!per_second.ok()) {
      return absl::Status(per_second.status().code(),
                          absl::StrCat("--per-second-store: ", per_second.status().message()));
    }
    stores.per_second = *std::move(per_second);
    stores.split = std::make_unique<PerSecondStore>(*stores.main.store, *stores.per_second->store);
    spdlog::info("per-second store: {}", stores.per_second->description);
  }
  return stores;
}

// Starts an HTTP listener at `address` (named `what` in errors).
absl::StatusOr<std::unique_ptr<HttpServer>> StartHttp(std::string_view what,
                                                      const std::string& address, int threads,
                                                      size_t max_connections,
                                                      size_t max_connections_per_address,
                                                      HttpServer::Handler handler) {
  absl::StatusOr<ListenAddress> parsed = ParseListenAddress(what, address);
  if (!parsed.ok()) return parsed.status();
  auto server = std::make_unique<HttpServer>(
      HttpServerOptions{.address = parsed->host,
                        .port = parsed->port,
                        .threads = threads,
                        .max_connections = max_connections,
                        .max_connections_per_address = max_connections_per_address},
      std::move(handler));
  if (absl::Status s = server->Start(); !s.ok()) return s;
  spdlog::info("{} listening on {}:{}", what, parsed->host, server->port());
  return server;
}

// Exit status for a set-up failure: 2 for a bad setting, 1 for anything else.
int ExitStatusFor(const absl::Status& s) { return absl::IsInvalidArgument(s) ? 2 : 1; }

timespec Timespec(int ms) {
  return timespec{.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1'000'000L};
}

}  // namespace

absl::Status SetUpLogging(const ServerSettings& settings) {
  const spdlog::level::level_enum level = spdlog::level::from_str(settings.log_level);
  // spdlog turns an unknown name into "off"; an unknown name must not silence the service.
  if (level == spdlog::level::off && settings.log_level != "off") {
    return absl::InvalidArgumentError(absl::StrCat("unknown log level '", settings.log_level, "'"));
  }
  if (settings.log_format == "json") {
    spdlog::set_formatter(std::make_unique<JsonLogFormatter>());
  } else if (settings.log_format != "text") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown log format '", settings.log_format, "' (text or json)"));
  }
  spdlog::set_level(level);
  gpr_set_log_function(&LogGrpcLine);
  return absl::OkStatus();
}

int ValidateConfig(const std::string& path, const ConfigLoadOptions& options) {
  absl::StatusOr<std::shared_ptr<const RateLimitConfig>> config =
      LoadRateLimitConfig(path, options);
  if (!config.ok()) {
    std::cerr << StdView(config.status().message()) << "\n";
    return 1;
  }
  std::cout << "OK: " << path << "\n" << (*config)->Dump();
  return 0;
}

int RunServer(const ServerSettings& settings) {
  // Debian builds Abseil without NDEBUG, so every absl::Mutex lock (gRPC takes several per call)
  // also updates a global lock-order graph: about a tenth of sluiced's CPU under gRPC load.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  for (const std::string& note : settings.notes) spdlog::warn("settings: {}", note);

  // Signals are taken synchronously by the main thread; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // The connection caps derive from the raised descriptor limit.
  absl::StatusOr<FdLimit> fds = RaiseFdLimit();
  if (fds.ok()) {
    spdlog::info("file descriptors: {} (soft limit was {})", fds->soft, fds->soft_before);
  } else {
    spdlog::warn("file descriptors: {}", StdView(fds.status().message()));
  }
  const size_t fd_budget = FdBudget(fds.ok() ? fds->soft : 1024);
  auto cap = [fd_budget](size_t setting) { return setting > 0 ? setting : fd_budget; };

  absl::StatusOr<Stores> stores = MakeStores(settings);
  if (!stores.ok()) {
    spdlog::error("{}", StdView(stores.status().message()));
    return ExitStatusFor(stores.status());
  }

  Metrics metrics;
  // The dashboard observes decisions beside the metrics; off, it costs nothing.
  std::optional<Dashboard> dashboard;
  std::vector<RlsObserver*> observer_list{&metrics};
  if (settings.dashboard) {
    dashboard.emplace(Clock::Real(), DashboardOptions{});
    observer_list.push_back(&*dashboard);
  }
  RlsObserverList observers(std::move(observer_list));
  RateLimitService service(
      stores->decisions(), observers,
      RateLimitServiceOptions{
          .response_headers = settings.response_headers,
          .header_names = settings.header_names,
          .global_shadow_mode = settings.shadow_mode,
          .global_quota_mode = settings.quota_mode,
          .near_limit_ratio = settings.near_limit_ratio,
          .response_dynamic_metadata = settings.response_dynamic_metadata,
          .reference_semantics = settings.reference_semantics,
          .stop_increment_when_over_limit = settings.stop_increment_when_over_limit,
          .over_limit_cache_entries = settings.local_cache_entries,
          .over_limit_cache_bytes = settings.local_cache_bytes,
      });
  const ConfigLoadOptions load_options{.merge_domains = settings.merge_domains,
                                       .ignore_dotfiles = settings.ignore_dotfiles};
  metrics.SetStoreStateSource(StoreStateSource(*stores->main.store, stores->main.backend));
  if (dashboard) {
    dashboard->SetStoreStateSource(StoreStateSource(*stores->main.store, stores->main.backend));
  }
  // Every config served, from the files or from xDS, comes through here.
  auto serve = [&](const std::string& why, const std::string& origin,
                   std::shared_ptr<const RateLimitConfig> config) {
    metrics.CountConfigLoad(true);
    if (dashboard) dashboard->OnConfigLoad(true, origin, "");
    service.SetConfig(std::move(config), origin);
    spdlog::info("config {}: loaded {} (domains: {})", why, origin,
                 absl::StrJoin(service.config()->Domains(), ", "));
  };
  auto apply = [&](const std::string& why, ConfigReloader::Result config) {
    if (!config.ok()) {
      metrics.CountConfigLoad(false);
      if (dashboard) dashboard->OnConfigLoad(false, "", StdView(config.status().message()));
      spdlog::error("config {} rejected, keeping the previous one: {}", why,
                    StdView(config.status().message()));
      return false;
    }
    serve(why, settings.config, *std::move(config));
    return true;
  };
  auto load_config = [path = settings.config, load_options] {
    return LoadRateLimitConfig(path, load_options);
  };
  // Files: reloads parse on a thread of their own, so SIGTERM never waits for one
  // (config_reloader.h). xDS: the client's thread applies what the server sends (xds_client.h).
  std::optional<ConfigReloader> reloader;
  std::optional<ConfigWatcher> watcher;
  std::unique_ptr<XdsClient> xds;
  if (settings.xds) {
    absl::StatusOr<std::unique_ptr<XdsClient>> client = XdsClient::Create(
        settings.xds_settings,
        XdsClientCallbacks{
            .apply =
                [&serve](const std::string& origin, std::shared_ptr<const RateLimitConfig> config) {
                  serve("from xds", origin, std::move(config));
                },
            // The client logs why (at most every 30 s per message).
            .reject =
                [&metrics, &dashboard](const absl::Status& s) {
                  metrics.CountConfigLoad(false);
                  if (dashboard) dashboard->OnConfigLoad(false, "", StdView(s.message()));
                }});
    if (!client.ok()) {
      spdlog::error("{}", StdView(client.status().message()));
      return ExitStatusFor(client.status());
    }
    xds = *std::move(client);
    metrics.SetXdsStateSource([&xds] {
      const XdsClientStats s = xds->Stats();
      return XdsState{.responses = s.responses,
                      .acks = s.acks,
                      .nacks = s.nacks,
                      .streams = s.streams,
                      .stream_failures = s.stream_failures,
                      .connected = s.connected};
    });
    xds->Start();
  } else {
    reloader.emplace(load_config, apply);
    // Fingerprint the files before reading them: a change that lands between the two is then seen
    // by the first poll instead of being mistaken for the state already loaded.
    watcher.emplace(settings.config);
  }
  // Before `xds` goes: a scrape must not reach it.
  absl::Cleanup forget_xds = [&metrics] { metrics.SetXdsStateSource(nullptr); };
  if (xds != nullptr && !settings.force_start) {
    // As the reference: no listener before the first config (FORCE_START_WITHOUT_INITIAL_CONFIG
    // starts without one). Unlike it, a refused first config does not end the wait.
    spdlog::info("waiting for the first config from xds {}", settings.xds_settings.server_url);
    while (service.config() == nullptr) {
      const timespec slice = Timespec(100);
      if (const int sig = sigtimedwait(&signals, nullptr, &slice);
          sig == SIGINT || sig == SIGTERM) {
        spdlog::info("stopped before a config arrived");
        return 0;
      }
    }
  } else if (xds != nullptr) {
    spdlog::warn("starting without a config (force start); unhealthy until xds sends one");
  } else if (!apply("at start", load_config())) {
    if (!settings.force_start) return 1;
    spdlog::warn("starting without a config (force start); unhealthy until one loads");
  }

  Health health(service, stores->health(),
                HealthOptions{.require_domain = settings.healthy_with_one_config});
  const std::vector<Route> dashboard_routes =
      dashboard ? DashboardRoutes(*dashboard) : std::vector<Route>{};
  HttpApi api(service, metrics, health,
              HttpApiOptions{.metrics_path = settings.disable_stats ? "" : "/metrics",
                             .extra_routes = dashboard_routes});
  // gRPC first: once /healthcheck answers, every listener is up.
  RlsGrpcService rls_grpc(service, {.max_in_flight = settings.grpc_max_in_flight,
                                    .threads = settings.grpc_decision_threads});
  // The quota service (docs/rlqs.md) shares the store's Redis, on a connection of its own.
  std::unique_ptr<QuotaAllocator> quota_allocator;
  std::unique_ptr<RlqsGrpcService> rlqs_grpc;
  std::vector<GrpcService*> grpc_services = {&rls_grpc};
  if (settings.rlqs && settings.grpc_engine == "nghttp2") {
    spdlog::warn("rlqs: not served on the nghttp2 gRPC engine (unary methods only)");
  } else if (settings.rlqs) {
    absl::StatusOr<std::unique_ptr<QuotaAllocator>> allocator =
        OpenQuotaAllocator(settings.store, settings.key_prefix, Clock::Real());
    if (!allocator.ok()) {
      spdlog::error("rlqs: {}", StdView(allocator.status().message()));
      return ExitStatusFor(allocator.status());
    }
    quota_allocator = *std::move(allocator);
    // Reported requests count in the per-rule counters and on the dashboard, as RLS decisions do.
    rlqs_grpc = std::make_unique<RlqsGrpcService>(
        service, *quota_allocator,
        RlqsGrpcServiceOptions{
            .top_up_interval = settings.rlqs_top_up_interval,
            .on_usage = [&metrics, &dashboard](const RlqsUsage& u) {
              metrics.AddRuleStats(absl::string_view(u.domain.data(), u.domain.size()),
                                   absl::string_view(u.stats_key.data(), u.stats_key.size()),
                                   RuleStats{.total_hits = u.allowed + u.denied,
                                             .within_limit = u.allowed,
                                             .over_limit = u.denied});
              if (dashboard) {
                dashboard->OnQuotaReport(u.domain, u.entries, u.allowed, u.denied, u.limit, u.unit);
              }
            }});
    metrics.SetTextSource([&rlqs = *rlqs_grpc] { return rlqs.RenderPrometheus(); });
    spdlog::info("rlqs: serving the rate limit quota service on the gRPC listener");
    grpc_services.push_back(rlqs_grpc.get());
  }
  // Before `rlqs_grpc` goes: a scrape must not reach it.
  absl::Cleanup forget_rlqs = [&metrics] { metrics.SetTextSource(nullptr); };
  GrpcServer grpc(
      GrpcServerOptions{
          .engine = settings.grpc_engine == "nghttp2" ? GrpcEngine::kNghttp2 : GrpcEngine::kGrpc,
          .address = settings.grpc,
          .max_connection_age = settings.grpc_max_connection_age,
          .max_connection_age_grace = settings.grpc_max_connection_age_grace,
          .tls_cert_file = settings.grpc_tls_cert,
          .tls_key_file = settings.grpc_tls_key,
          .tls_client_ca_file = settings.grpc_tls_client_ca,
          .max_connections = cap(settings.grpc_max_connections),
          .max_connections_per_address = settings.grpc_max_connections_per_address,
          .max_concurrent_streams = settings.grpc_max_concurrent_streams},
      grpc_services);
  if (absl::Status s = grpc.Start(); !s.ok()) {
    spdlog::error("--grpc: {}", StdView(s.message()));
    return ExitStatusFor(s);
  }
  // gRPC health follows /healthcheck: not serving until the first check says otherwise, then set
  // on every change that a check (periodic, or one asked over HTTP) or SIGTERM brings.
  grpc.SetServing(false);
  health.OnChange([&grpc](bool healthy) {
    spdlog::info("health: {}", healthy ? "serving" : "not serving");
    grpc.SetServing(healthy);
  });
  // Before `grpc` goes, on every path out: a check completing late must not reach it.
  absl::Cleanup forget_grpc = [&health] { health.OnChange(nullptr); };
  std::vector<std::unique_ptr<HttpServer>> http_servers;
  std::vector<std::string> http_names;  // For /metrics: "http", "debug", "prometheus".
  auto start_http = [&](std::string_view what, const std::string& address, int threads,
                        HttpServer::Handler handler) {
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        StartHttp(what, address, threads, cap(settings.http_max_connections),
                  settings.http_max_connections_per_address, std::move(handler));
    if (!server.ok()) {
      spdlog::error("{}", StdView(server.status().message()));
      return ExitStatusFor(server.status());
    }
    http_servers.push_back(*std::move(server));
    http_names.emplace_back(what.substr(2));  // "--http" -> "http"
    return 0;
  };
  if (int rc = start_http("--http", settings.http, settings.http_threads,
                          [&api](const HttpRequest& req, HttpServer::Respond respond) {
                            api.Handle(req, std::move(respond));
                          });
      rc != 0) {
    return rc;
  }
  if (!settings.debug.empty()) {
    if (int rc = start_http("--debug", settings.debug, 1, DebugHandler(service, dashboard_routes));
        rc != 0) {
      return rc;
    }
  }
  if (!settings.prometheus.empty() && !settings.disable_stats) {
    if (int rc = start_http("--prometheus", settings.prometheus, 1,
                            PrometheusHandler(metrics, settings.prometheus_path));
        rc != 0) {
      return rc;
    }
  }

  // Every listener must still accept: a listener out of descriptors for good (or closed) makes
  // /healthcheck and gRPC health fail. The list is complete here and never changes again.
  health.SetListenerHealth([&grpc, &http_servers] {
    absl::Status s = grpc.ListenerHealth();
    for (const auto& server : http_servers) s.Update(server->ListenerHealth());
    return s;
  });
  absl::Cleanup forget_listeners = [&health] { health.SetListenerHealth(nullptr); };
  metrics.SetServerStateSource([&grpc, &http_servers, &http_names] {
    const GrpcServerStats g = grpc.Stats();
    ServerState state{.listeners = {{.name = "grpc",
                                     .accepted = g.listener.accepted,
                                     .rejected_over_cap = g.listener.rejected_over_cap,
                                     .closed_idle_at_cap = g.listener.closed_idle_at_cap,
                                     .rejected_per_address = g.listener.rejected_per_address,
                                     .accept_failures = g.listener.accept_failures}},
                      .grpc_in_flight = g.in_flight,
                      .grpc_rejected_in_flight = g.rejected_in_flight,
                      .grpc_rejected_connection_share = g.rejected_connection_share,
                      .grpc_unparsable_requests = g.unparsable_requests,
                      .grpc_silent_connections_closed = g.silent_closed};
    for (size_t i = 0; i < http_servers.size(); ++i) {
      const ::sluice::net::ListenerStats l = http_servers[i]->ListenerStats();
      state.listeners.push_back({.name = http_names[i],
                                 .accepted = l.accepted,
                                 .rejected_over_cap = l.rejected_over_cap,
                                 .closed_idle_at_cap = l.closed_idle_at_cap,
                                 .rejected_per_address = l.rejected_per_address,
                                 .accept_failures = l.accept_failures});
    }
    return state;
  });
  absl::Cleanup forget_server_state = [&metrics] { metrics.SetServerStateSource(nullptr); };

  auto in_flight = std::make_shared<std::atomic<bool>>(false);
  auto check_health = [&health, in_flight] {
    // One periodic check at a time: a store that hangs until its deadline is not asked again
    // meanwhile, and the main thread never waits for it (SIGTERM is handled at once).
    if (in_flight->exchange(true)) return;
    health.Check([in_flight](const HealthResult&) { in_flight->store(false); });
  };
  check_health();
  spdlog::info("sluiced serving: HTTP on {}, gRPC on {} ({} engine)", settings.http, settings.grpc,
               settings.grpc_engine);
  if (settings.reference_semantics) {
    spdlog::info(
        "decisions: exact-reference mode (envoyproxy/ratelimit's counting; "
        "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT={})",
        settings.stop_increment_when_over_limit);
  } else {
    spdlog::info(
        "decisions: sluice's semantics (all-or-nothing; --reference-semantics for the "
        "reference's)");
  }

  std::unique_ptr<StatsdSink> statsd;
  if (settings.statsd.enabled && !settings.disable_stats) {
    statsd = std::make_unique<StatsdSink>(metrics, settings.statsd);
    if (absl::Status s = statsd->Start(); !s.ok()) {
      spdlog::error("statsd: {}", StdView(s.message()));
      return 1;
    }
    spdlog::info("statsd: {}:{} every {} ms", settings.statsd.host, settings.statsd.port,
                 settings.statsd.flush_interval.count());
  }

  // After a burst (a gRPC flood, a reload), RSS back near its baseline: see memory_release.h.
  MemoryRelease memory_release(settings.memory_release_step_bytes);
  for (;;) {
    const timespec timeout = Timespec(settings.config_poll_ms);
    const int sig = sigtimedwait(&signals, nullptr, &timeout);
    if (sig == SIGHUP) {
      if (watcher.has_value()) {
        watcher->Poll();  // Before loading, for the same reason as at start.
        reloader->Request("on SIGHUP");
      }
    } else if (sig == SIGINT || sig == SIGTERM) {
      spdlog::info("{}: draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      health.MarkTerminating();
      if (sig == SIGTERM && settings.drain_ms > 0) {
        // Health is already failing; give load balancers time to notice before closing.
        const timespec drain = Timespec(settings.drain_ms);
        nanosleep(&drain, nullptr);
      }
      break;
    } else if (watcher.has_value() && watcher->Poll()) {
      reloader->Request("on change");
    }
    check_health();
    if (std::optional<MemoryReleaseResult> r = memory_release.Poll(); r.has_value()) {
      spdlog::debug(
          "memory: RSS {} MiB -> {} MiB, freed heap given back to the OS ({} MiB free, "
          "{} us)",
          r->rss_before >> 20, r->rss_after >> 20, r->free_bytes >> 20, r->took.count());
    }
  }
  health.OnChange(nullptr);
  if (xds != nullptr) xds->Stop();
  grpc.Stop();
  for (auto& server : http_servers) server->Stop();
  if (statsd != nullptr) statsd->Stop();
  spdlog::info("sluiced stopped");
  return 0;
}

}  // namespace sluice::server
