#include "src/server/server_main.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"
#include <grpc/support/log.h>

#include "sluice/clock.h"

#include "src/server/admin/health.h"
#include "src/server/admin/http_api.h"
#include "src/server/admin/http_server.h"
#include "src/server/admin/listeners.h"
#include "src/server/config_provider.h"
#include "src/server/dashboard/dashboard.h"
#include "src/server/dashboard/dashboard_routes.h"
#include "src/server/fd_limit.h"
#include "src/server/grpc/rls_grpc_service.h"
#include "src/server/memory_release.h"
#include "src/server/observe/gauge_source.h"
#include "src/server/observe/observer_list.h"
#include "src/server/quota_service.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/server_listeners.h"
#include "src/server/signal_waiter.h"
#include "src/server/stats/json_log_format.h"
#include "src/server/stats/metrics.h"
#include "src/server/stats/statsd_sink.h"
#include "src/server/store_gauges.h"
#include "src/server/stores.h"
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

// Exit status for a set-up failure, which is logged: 2 for a bad setting, 1 for anything else.
int Fail(const absl::Status& s) {
  spdlog::error("{}", StdView(s.message()));
  return absl::IsInvalidArgument(s) ? 2 : 1;
}

// Raises the descriptor limit; returns the connection cap a listener gets when its setting is
// unset, derived from the raised limit.
size_t RaiseFdBudget() {
  absl::StatusOr<FdLimit> fds = RaiseFdLimit();
  if (fds.ok()) {
    spdlog::info("file descriptors: {} (soft limit was {})", fds->soft, fds->soft_before);
  } else {
    spdlog::warn("file descriptors: {}", StdView(fds.status().message()));
  }
  return FdBudget(fds.ok() ? fds->soft : 1024);
}

RateLimitServiceOptions ServiceOptions(const ServerSettings& settings) {
  return RateLimitServiceOptions{
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
  };
}

// Returns the statsd sink the settings ask for, started, or null; or why it could not start.
absl::StatusOr<std::unique_ptr<StatsdSink>> StartStatsd(const ServerSettings& settings,
                                                        Metrics& metrics) {
  if (!settings.statsd.enabled || settings.disable_stats) return nullptr;
  auto statsd = std::make_unique<StatsdSink>(metrics, settings.statsd);
  if (absl::Status s = statsd->Start(); !s.ok()) return s;
  spdlog::info("statsd: {}:{} every {} ms", settings.statsd.host, settings.statsd.port,
               settings.statsd.flush_interval.count());
  return statsd;
}

void LogServing(const ServerSettings& settings) {
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
}

// Health checked once a poll interval, one check at a time: a store that hangs until its deadline
// is not asked again meanwhile, and the main thread never waits for it (SIGTERM is handled at
// once).
class PeriodicHealthCheck {
 public:
  explicit PeriodicHealthCheck(Health& health) : health_(health) {}
  void Run() {
    if (in_flight_->exchange(true)) return;
    health_.Check([in_flight = in_flight_](const HealthResult&) { in_flight->store(false); });
  }

 private:
  Health& health_;
  // Shared with the check, which may complete after this object is gone.
  std::shared_ptr<std::atomic<bool>> in_flight_ = std::make_shared<std::atomic<bool>>(false);
};

// Serves until SIGINT or SIGTERM (then health fails, and after SIGTERM the drain time passes):
// reloads on SIGHUP and when the files change, checks health, and gives freed memory back.
void ServeUntilStopped(const ServerSettings& settings, SignalWaiter& signals,
                       ConfigProvider& config, Health& health, PeriodicHealthCheck& health_check) {
  // After a burst (a gRPC flood, a reload), RSS back near its baseline: see memory_release.h.
  MemoryRelease memory_release(settings.memory_release_step_bytes);
  for (;;) {
    const int sig = signals.Wait(std::chrono::milliseconds(settings.config_poll_ms));
    if (sig == SIGHUP) {
      config.Reload();
    } else if (sig == SIGINT || sig == SIGTERM) {
      spdlog::info("{}: draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      health.MarkTerminating();
      if (sig == SIGTERM && settings.drain_ms > 0) {
        // Health is already failing; give load balancers time to notice before closing.
        std::this_thread::sleep_for(std::chrono::milliseconds(settings.drain_ms));
      }
      return;
    } else {
      config.Poll();
    }
    health_check.Run();
    if (std::optional<MemoryReleaseResult> r = memory_release.Poll(); r.has_value()) {
      spdlog::debug(
          "memory: RSS {} MiB -> {} MiB, freed heap given back to the OS ({} MiB free, "
          "{} us)",
          r->rss_before >> 20, r->rss_after >> 20, r->free_bytes >> 20, r->took.count());
    }
  }
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
  SignalWaiter signals;  // before any thread starts
  const size_t fd_budget = RaiseFdBudget();

  absl::StatusOr<Stores> stores = MakeStores(settings);
  if (!stores.ok()) return Fail(stores.status());
  const StoreGauges store_gauges(*stores->main.store, stores->main.backend);

  // Who hears what happens in the process (src/server/observe/): the metrics, and the dashboard
  // when it is on (off, it costs nothing). Every room reports to `observers`.
  Metrics metrics;
  std::optional<Dashboard> dashboard;
  std::vector<ProcessObserver*> observer_list{&metrics};
  if (settings.dashboard) {
    dashboard.emplace(Clock::Real(), DashboardOptions{});
    dashboard->SetStoreStateSource(&store_gauges);
    observer_list.push_back(&*dashboard);
  }
  ObserverList observers(std::move(observer_list));
  RateLimitService service(stores->decisions(), observers, ServiceOptions(settings));

  absl::StatusOr<std::unique_ptr<ConfigProvider>> config =
      ConfigProvider::Create(settings, service, observers);
  if (!config.ok()) return Fail(config.status());
  if (const ConfigProvider::Started started = (*config)->Start(signals);
      started != ConfigProvider::Started::kServing) {
    return started == ConfigProvider::Started::kRefused ? 1 : 0;
  }

  Health health(service, stores->health(),
                HealthOptions{.require_domain = settings.healthy_with_one_config});
  const std::vector<Route> dashboard_routes =
      dashboard ? DashboardRoutes(*dashboard) : std::vector<Route>{};
  HttpApi api(service, metrics, health,
              HttpApiOptions{.metrics_path = settings.disable_stats ? "" : "/metrics",
                             .extra_routes = dashboard_routes});
  RlsGrpcService rls_grpc(service, {.max_in_flight = settings.grpc_max_in_flight,
                                    .threads = settings.grpc_decision_threads});
  absl::StatusOr<std::unique_ptr<QuotaService>> quota =
      QuotaService::Open(settings, service, observers);
  if (!quota.ok()) return Fail(quota.status());
  std::vector<GrpcService*> grpc_services = {&rls_grpc};
  if (*quota != nullptr) grpc_services.push_back(&(*quota)->grpc_service());
  absl::StatusOr<std::unique_ptr<ServerListeners>> listeners = ServerListeners::Start(
      settings, fd_budget, std::move(grpc_services), health,
      ListenerHandlers{
          .http = [&api](const HttpRequest& req,
                         HttpServer::Respond respond) { api.Handle(req, std::move(respond)); },
          .debug = DebugHandler(service, dashboard_routes),
          .prometheus = PrometheusHandler(metrics, settings.prometheus_path)});
  if (!listeners.ok()) return Fail(listeners.status());

  // The page /metrics serves after its counters: each room's gauges, in this order.
  const GaugeList gauges({&store_gauges, listeners->get(), (*config)->gauges(),
                          &metrics.SeriesGauges(),
                          *quota != nullptr ? &(*quota)->gauges() : nullptr});
  metrics.SetGauges(&gauges);
  absl::Cleanup forget_gauges = [&metrics] { metrics.SetGauges(nullptr); };  // before they go

  PeriodicHealthCheck health_check(health);
  health_check.Run();
  LogServing(settings);
  absl::StatusOr<std::unique_ptr<StatsdSink>> statsd = StartStatsd(settings, metrics);
  if (!statsd.ok()) {
    spdlog::error("statsd: {}", StdView(statsd.status().message()));
    return 1;
  }

  ServeUntilStopped(settings, signals, **config, health, health_check);
  (*config)->Stop();
  (*listeners)->Stop();
  if (*statsd != nullptr) (*statsd)->Stop();
  spdlog::info("sluiced stopped");
  return 0;
}

}  // namespace sluice::server
