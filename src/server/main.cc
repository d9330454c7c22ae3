// sluiced: a rate limit service, drop-in for envoyproxy/ratelimit (gRPC and /json), on the memory
// or the Redis store. See docs/sluiced.md.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"
#include <CLI/CLI.hpp>

#include "sluice/config.h"
#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"
#include "sluice/version.h"

#include "src/server/config_reloader.h"
#include "src/server/config_watcher.h"
#include "src/server/grpc_server.h"
#include "src/server/http_api.h"
#include "src/server/http_server.h"
#include "src/server/metrics.h"
#include "src/server/rate_limit_service.h"
#include "src/server/store_factory.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

struct Flags {
  std::string config;
  std::string validate;
  std::string store = "memory";
  std::string http = "127.0.0.1:8080";
  std::string grpc = "127.0.0.1:8081";
  std::string failure_mode = "error";
  int64_t expected_instances = 1;
  std::string log_level = "info";
  bool response_headers = false;
  bool shadow_mode = false;
  size_t local_cache_entries = 0;
  size_t memory_store_max_bytes = MemoryStoreOptions{}.max_bytes;
  int http_threads = 2;
  int config_poll_ms = 1000;
  int drain_ms = 2000;
};

absl::StatusOr<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& s) {
  const size_t colon = s.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(s).substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("expected host:port, got '", s, "'"));
  }
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(host, static_cast<uint16_t>(port));
}

int Validate(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const RateLimitConfig>> config = LoadRateLimitConfig(path);
  if (!config.ok()) {
    std::cerr << internal::StdView(config.status().message()) << "\n";
    return 1;
  }
  std::cout << "OK: " << path << "\n" << (*config)->Dump();
  return 0;
}

int Run(const Flags& flags) {
  spdlog::set_level(spdlog::level::from_str(flags.log_level));
  // Debian builds Abseil without NDEBUG, so every absl::Mutex lock (gRPC takes several per call)
  // also updates a global lock-order graph: about a tenth of sluiced's CPU under gRPC load.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  // Signals are taken synchronously by the main thread; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<FailureMode> mode = ParseFailureMode(flags.failure_mode);
  if (!mode.ok()) {
    spdlog::error("--failure-mode: {}", internal::StdView(mode.status().message()));
    return 2;
  }
  absl::StatusOr<StoreHandles> stores = MakeStore(
      flags.store, FailurePolicy{.mode = *mode, .expected_instances = flags.expected_instances},
      MemoryStoreOptions{.max_bytes = flags.memory_store_max_bytes});
  if (!stores.ok()) {
    spdlog::error("--store: {}", internal::StdView(stores.status().message()));
    return 2;
  }
  spdlog::info("store: {} (failure mode {})", stores->description, flags.failure_mode);

  Metrics metrics;
  RateLimitService service(*stores->store, metrics,
                           RateLimitServiceOptions{
                               .response_headers = flags.response_headers,
                               .global_shadow_mode = flags.shadow_mode,
                               .over_limit_cache_entries = flags.local_cache_entries,
                           });
  metrics.SetStoreStateSource(StoreStateSource(*stores));
  auto apply = [&](const std::string& why, ConfigReloader::Result config) {
    metrics.CountConfigLoad(config.ok());
    if (!config.ok()) {
      spdlog::error("config {} rejected, keeping the previous one: {}", why,
                    internal::StdView(config.status().message()));
      return false;
    }
    service.SetConfig(*std::move(config));
    spdlog::info("config {}: loaded {} (domains: {})", why, flags.config,
                 absl::StrJoin(service.config()->Domains(), ", "));
    return true;
  };
  auto load = [&](const char* why) { return apply(why, LoadRateLimitConfig(flags.config)); };
  // Reloads parse on a thread of their own, so SIGTERM never waits for one (config_reloader.h).
  ConfigReloader reloader([path = flags.config] { return LoadRateLimitConfig(path); }, apply);
  // Fingerprint the files before reading them: a change that lands between the two is then seen
  // by the first poll instead of being mistaken for the state already loaded.
  ConfigWatcher watcher(flags.config);
  if (!load("at start")) return 1;

  absl::StatusOr<std::pair<std::string, uint16_t>> http_addr = SplitHostPort(flags.http);
  if (!http_addr.ok()) {
    spdlog::error("--http: {}", internal::StdView(http_addr.status().message()));
    return 2;
  }
  HttpApi api(service, metrics, *stores->health_store);
  HttpServer http(
      {.address = http_addr->first, .port = http_addr->second, .threads = flags.http_threads},
      [&api](const HttpRequest& req, HttpServer::Respond respond) {
        api.Handle(req, std::move(respond));
      });
  if (absl::Status s = http.Start(); !s.ok()) {
    spdlog::error("{}", internal::StdView(s.message()));
    return 1;
  }
  GrpcServer grpc(flags.grpc, service);
  if (absl::Status s = grpc.Start(); !s.ok()) {
    spdlog::error("{}", internal::StdView(s.message()));
    return 1;
  }
  spdlog::info("sluiced serving: HTTP on {}:{}, gRPC on {}", http_addr->first, http.port(),
               flags.grpc);

  for (;;) {
    timespec timeout{.tv_sec = flags.config_poll_ms / 1000,
                     .tv_nsec = (flags.config_poll_ms % 1000) * 1'000'000L};
    const int sig = sigtimedwait(&signals, nullptr, &timeout);
    if (sig == SIGHUP) {
      watcher.Poll();  // Before loading, for the same reason as at start.
      reloader.Request("on SIGHUP");
    } else if (sig == SIGINT || sig == SIGTERM) {
      spdlog::info("{}: draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      api.MarkTerminating();
      if (sig == SIGTERM && flags.drain_ms > 0) {
        // Health is already failing; give load balancers time to notice before closing.
        timespec drain{.tv_sec = flags.drain_ms / 1000,
                       .tv_nsec = (flags.drain_ms % 1000) * 1'000'000L};
        nanosleep(&drain, nullptr);
      }
      break;
    } else if (watcher.Poll()) {
      reloader.Request("on change");
    }
  }
  grpc.Stop();
  http.Stop();
  spdlog::info("sluiced stopped");
  return 0;
}

int Main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"sluiced: distributed rate limit service (Envoy RLS compatible)"};
  app.add_option("--config", flags.config, "Config file or directory of *.yaml files");
  app.add_option("--validate", flags.validate, "Check a config file or directory and exit");
  app.add_option("--store", flags.store, "memory | redis://[user:pass@]host:port[/db] | rediss://")
      ->capture_default_str();
  app.add_option("--http", flags.http, "HTTP listen address")->capture_default_str();
  app.add_option("--grpc", flags.grpc, "gRPC listen address")->capture_default_str();
  app.add_option("--failure-mode", flags.failure_mode,
                 "When the store fails: error (gRPC UNAVAILABLE / HTTP 503), allow, deny, local")
      ->capture_default_str();
  app.add_option("--expected-instances", flags.expected_instances,
                 "Failure mode local: divide limits by this many instances")
      ->capture_default_str();
  app.add_option("--log-level", flags.log_level, "trace|debug|info|warn|error|critical|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "critical",
                             "off"}))
      ->capture_default_str();
  bool print_version = false;
  app.add_flag("--version", print_version, "Print the version and how it was built, and exit");
  app.add_flag("--response-headers", flags.response_headers,
               "Add RateLimit-* and Retry-After headers to responses");
  app.add_flag("--shadow-mode", flags.shadow_mode, "Never deny; count what would be denied");
  app.add_option("--local-cache-entries", flags.local_cache_entries,
                 "Over-limit cache size (0 = off)")
      ->capture_default_str();
  app.add_option("--memory-store-max-bytes", flags.memory_store_max_bytes,
                 "--store memory: bound on the bytes its entries take (keys and slots); new keys "
                 "beyond it evict the soonest-expiring ones")
      ->envname("SLUICE_MEMORY_STORE_MAX_BYTES")
      ->capture_default_str();
  app.add_option("--http-threads", flags.http_threads, "HTTP I/O threads")->capture_default_str();
  app.add_option("--config-poll-ms", flags.config_poll_ms, "How often to check the config files")
      ->capture_default_str();
  app.add_option("--drain-ms", flags.drain_ms, "After SIGTERM, fail health checks this long")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (print_version) {
    std::cout << "sluiced " << kBuildInfo.version << "\n"
              << "compiler: " << kBuildInfo.compiler << "\n"
              << "build type: " << kBuildInfo.build_type << "\n";
    return 0;
  }
  if (!flags.validate.empty()) return Validate(flags.validate);
  if (flags.config.empty()) {
    std::cerr << "--config is required\n";
    return 2;
  }
  return Run(flags);
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
