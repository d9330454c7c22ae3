// api_server: the HTTP middleware example. See README.md.
//
//   api_server --store memory --port 8080 --rules examples/api_server/rules.yaml
//   api_server --store redis://127.0.0.1:6379 --port 8081
//   api_server --no-limits --port 8082            # the same server without the middleware
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "examples/api_server/api_server.h"
#include <CLI/CLI.hpp>

#include "sluice/failure_policy.h"
#include "sluice/http/middleware.h"
#include "sluice/http/middleware_config.h"
#include "sluice/open_store.h"

namespace sluice::examples {
namespace {

struct Flags {
  std::string store = "memory";
  std::string address = "127.0.0.1";
  int port = 8080;
  std::string rules = "examples/api_server/rules.yaml";
  std::string failure_mode = "error";
  int64_t expected_instances = 1;
  int threads = 1;
  bool no_limits = false;
};

std::string Text(const absl::Status& status) { return std::string(status.message()); }

absl::StatusOr<std::unique_ptr<Store>> MakeStore(const Flags& flags) {
  absl::StatusOr<FailureMode> mode = ParseFailureMode(flags.failure_mode);
  if (!mode.ok()) return mode.status();
  absl::StatusOr<OpenedStore> opened = OpenStore(
      flags.store, {.policy = {.mode = *mode, .expected_instances = flags.expected_instances}});
  if (!opened.ok()) return opened.status();
  return std::unique_ptr<Store>(std::move(opened->store));
}

int Run(const Flags& flags) {
  // Signals are taken synchronously by the main thread; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<Store> store;
  std::unique_ptr<http::Middleware> middleware;
  if (!flags.no_limits) {
    absl::StatusOr<std::shared_ptr<const http::MiddlewareConfig>> config =
        http::LoadMiddlewareConfig(flags.rules);
    if (!config.ok()) {
      std::cerr << "--rules: " << Text(config.status()) << "\n";
      return 2;
    }
    absl::StatusOr<std::unique_ptr<Store>> made = MakeStore(flags);
    if (!made.ok()) {
      std::cerr << "--store: " << Text(made.status()) << "\n";
      return 2;
    }
    store = *std::move(made);
    absl::StatusOr<std::unique_ptr<http::Middleware>> created = http::Middleware::Create(
        {.store = store.get(), .config = *config, .authenticate = ToyAuthenticate});
    if (!created.ok()) {
      std::cerr << Text(created.status()) << "\n";
      return 2;
    }
    middleware = *std::move(created);
  }

  ApiServer server({.address = flags.address,
                    .port = static_cast<uint16_t>(flags.port),
                    .threads = flags.threads,
                    .middleware = middleware.get()});
  if (absl::Status s = server.Start(); !s.ok()) {
    std::cerr << Text(s) << "\n";
    return 1;
  }
  std::cout << "api_server listening on " << flags.address << ":" << server.port() << " (store "
            << (flags.no_limits ? "none: --no-limits" : flags.store) << ")" << std::endl;

  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    if (middleware == nullptr) continue;
    // Reload the rules; a bad file is refused and the running rules stay.
    if (absl::Status s = middleware->Reload(flags.rules); !s.ok()) {
      std::cerr << "rules not reloaded, keeping the old ones: " << Text(s) << "\n";
    } else {
      std::cout << "rules reloaded from " << flags.rules << std::endl;
    }
  }
  // Stop serving first; then the store, whose last callbacks post to the stopped (but still
  // existing) I/O context; the server object itself goes last.
  server.Stop();
  store.reset();
  const http::MiddlewareStats stats =
      middleware != nullptr ? middleware->Stats() : http::MiddlewareStats{};
  std::cout << "api_server stopped: enabled=" << stats.enabled << " ok=" << stats.ok
            << " over_limit=" << stats.over_limit << " enforced=" << stats.enforced
            << " error=" << stats.error << std::endl;
  return 0;
}

int Main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"api_server: a Beast API rate limited by the sluice HTTP middleware"};
  app.add_option("--store", flags.store, "memory | redis://host:port[/db] | rediss://...")
      ->capture_default_str();
  app.add_option("--address", flags.address, "Listen address")->capture_default_str();
  app.add_option("--port", flags.port, "Listen port (0: any free port)")->capture_default_str();
  app.add_option("--rules", flags.rules, "Rate limit rules (YAML)")->capture_default_str();
  app.add_option("--failure-mode", flags.failure_mode,
                 "When the store fails: error (503), allow, deny (503), local")
      ->capture_default_str();
  app.add_option("--expected-instances", flags.expected_instances,
                 "Failure mode local: divide limits by this many instances")
      ->capture_default_str();
  app.add_option("--threads", flags.threads, "I/O threads")->capture_default_str();
  app.add_flag("--no-limits", flags.no_limits, "Serve without the middleware (for benchmarks)");
  CLI11_PARSE(app, argc, argv);
  return Run(flags);
}

}  // namespace
}  // namespace sluice::examples

int main(int argc, char** argv) {
  // An exception that gets here (out of memory, a thread that cannot start) ends the process as
  // it would have escaping main(): std::terminate(), whose handler reports the exception.
  try {
    return sluice::examples::Main(argc, argv);
  } catch (...) {
    std::terminate();
  }
}
