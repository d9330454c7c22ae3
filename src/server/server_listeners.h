// ServerListeners: sluiced's listeners, started together and stopped together: the gRPC server
// (its services: the rate limit service, and RLQS when on), then the HTTP listeners the settings
// name: --http (the API), --debug and --prometheus. Health is tied to them: gRPC health follows
// every change /healthcheck sees, and a listener that stops accepting makes both unhealthy. Their
// counters are its gauges (a GaugeSource: listener_gauges.h).
//
// gRPC starts first: once /healthcheck answers, every listener is up.
//
// Example:
//   absl::StatusOr<std::unique_ptr<ServerListeners>> listeners = ServerListeners::Start(
//       settings, fd_budget, {&rls_grpc}, health, {.http = ..., .debug = ..., .prometheus = ...});
//   ...
//   (*listeners)->Stop();
//
// Thread safety: Start() and Stop() from one thread; AppendPrometheus() from any.
#ifndef SLUICE_SERVER_SERVER_LISTENERS_H_
#define SLUICE_SERVER_SERVER_LISTENERS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "src/server/admin/health.h"
#include "src/server/admin/http_server.h"
#include "src/server/grpc/grpc_server.h"
#include "src/server/grpc/grpc_service.h"
#include "src/server/observe/gauge_source.h"
#include "src/server/settings.h"

namespace sluice::server {

// What each HTTP listener serves.
struct ListenerHandlers {
  // --http: the API (/json, /healthcheck, /metrics, ...).
  HttpServer::Handler http;
  // --debug, when set.
  HttpServer::Handler debug;
  // --prometheus, when set and stats are on.
  HttpServer::Handler prometheus;
};

class ServerListeners final : public GaugeSource {
 public:
  // ServerListeners::Start()
  //
  // Starts the listeners `settings` name, with connection caps from `fd_budget` where the
  // settings leave them unset, serving `services` over gRPC and `handlers` over HTTP, and ties
  // `health` to them. Returns them started, or the first listener's error (its setting named,
  // the listeners already started stopped again): InvalidArgument for a bad address or TLS file,
  // Unavailable when it cannot listen. `services`, `health` and what the handlers use must outlive
  // the listeners.
  static absl::StatusOr<std::unique_ptr<ServerListeners>> Start(const ServerSettings& settings,
                                                                size_t fd_budget,
                                                                std::vector<GrpcService*> services,
                                                                Health& health,
                                                                ListenerHandlers handlers);
  ServerListeners(const ServerListeners&) = delete;
  ServerListeners& operator=(const ServerListeners&) = delete;
  // Stop().
  ~ServerListeners() override;

  // Unties health, then stops gRPC (its calls in flight finish, bounded) and the HTTP listeners.
  // Later calls do nothing.
  void Stop();

  // GaugeSource: AppendListenerFamilies() of every listener, gRPC's first.
  void AppendPrometheus(std::string& out) const override;

 private:
  ServerListeners(const ServerSettings& settings, size_t fd_budget,
                  std::vector<GrpcService*> services, Health& health);
  absl::Status StartGrpc();
  // Starts an HTTP listener at `address`, `what` being its setting ("--http").
  absl::Status StartHttp(const std::string& what, const std::string& address, int threads,
                         HttpServer::Handler handler);

  const ServerSettings& settings_;
  const size_t fd_budget_;
  Health& health_;
  GrpcServer grpc_;
  std::vector<std::unique_ptr<HttpServer>> http_;
  // For the gauges: "http", "debug", "prometheus", one per entry of `http_`.
  std::vector<std::string> http_names_;
  bool stopped_ = false;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_SERVER_LISTENERS_H_
