// HttpApi: sluiced's HTTP endpoints, on top of HttpServer.
//
//   POST /json        the proto3 JSON form of RateLimitRequest -> RateLimitResponse; 200 when OK,
//                     429 when OVER_LIMIT, 400 for a bad request, 503 (with an error body) when the
//                     store fails (envoyproxy/ratelimit answers 400 there, which hides outages).
//   GET /healthcheck  200 only when Health (health.h) says healthy: no SIGTERM, a config loaded,
//                     every listener accepting, and the store answering a real check (a peek
//                     through the store's script path, not a PING); else 500, as the reference
//                     answers.
//   GET /metrics      Prometheus text format (at HttpApiOptions::metrics_path).
//   GET /rlconfig     the loaded rules, one per line.
//
// The paths are a route table (routes.h); /rlconfig and the metrics are the routes the other
// listeners serve too (listeners.h).
//
// Thread safety: thread-safe; the referenced objects must outlive it.
#ifndef SLUICE_SERVER_ADMIN_HTTP_API_H_
#define SLUICE_SERVER_ADMIN_HTTP_API_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sluice/store.h"

#include "src/server/admin/health.h"
#include "src/server/admin/http_server.h"
#include "src/server/admin/routes.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"
#include "src/util/mutex.h"

namespace sluice::server {

struct HttpApiOptions {
  // Where GET serves the Prometheus text; empty: not served (DISABLE_STATS). Default: "/metrics".
  std::string metrics_path = "/metrics";
  // More routes, served beside the ones above (the dashboard's). Default: none.
  std::vector<Route> extra_routes{};
};

class HttpApi {
 public:
  // `health` answers /healthcheck.
  HttpApi(RateLimitService& service, Metrics& metrics, Health& health, HttpApiOptions options = {})
      : service_(service),
        metrics_(metrics),
        health_(health),
        options_(std::move(options)),
        routes_(MakeRoutes()) {}
  // As above with a Health of its own that probes `health_store`: the store itself, not its
  // failure-policy wrapper, whose fallback would always answer.
  HttpApi(RateLimitService& service, Metrics& metrics, Store& health_store)
      : service_(service),
        metrics_(metrics),
        owned_health_(std::make_unique<Health>(service, std::vector<Store*>{&health_store})),
        health_(*owned_health_),
        routes_(MakeRoutes()) {}

  // Turns /healthcheck unhealthy for good (on SIGTERM, before the listeners close).
  void MarkTerminating() { health_.MarkTerminating(); }

  // Makes /healthcheck unhealthy while `check` returns an error (Health::SetListenerHealth()).
  void SetListenerHealth(Health::ListenerCheck check) {
    health_.SetListenerHealth(std::move(check));
  }

  // Answers one request; usable as an HttpServer::Handler.
  void Handle(const HttpRequest& request, HttpServer::Respond respond) const {
    routes_.Handle(request, std::move(respond));
  }

 private:
  RouteTable MakeRoutes();
  void HandleJson(const HttpRequest& request, HttpServer::Respond respond);
  void HandleHealth(HttpServer::Respond respond);

  RateLimitService& service_;
  Metrics& metrics_;
  std::unique_ptr<Health> owned_health_;
  Health& health_;
  const HttpApiOptions options_{};
  const RouteTable routes_;  // Last: its routes reference the members above.
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_ADMIN_HTTP_API_H_
