// The admin HTTP listeners' routing: a table from a request's path (its target without the query)
// to the handler that answers it, and the routes more than one listener serves (/rlconfig on the
// main and the debug listener; the Prometheus text on the main and the Prometheus listener).
//
// A route answers any method; a route that takes only some says so itself (POST /json answers
// 405). A path with no route goes to the table's not-found answer.
//
// Example:
//   RouteTable routes({RlConfigRoute(service), MetricsRoute(metrics, "/metrics")},
//                     [](std::string_view path) { return HttpResponse{.status = 404}; });
//   HttpServer server(options, [&routes](HttpRequest r, HttpServer::Respond respond) {
//     routes.Handle(r, std::move(respond));
//   });
//
// Thread safety: a RouteTable is immutable once built; Handle() is thread-safe when its handlers
// are. What the routes reference must outlive the table.
#ifndef SLUICE_SERVER_ADMIN_ROUTES_H_
#define SLUICE_SERVER_ADMIN_ROUTES_H_

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "src/server/admin/http_server.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"

namespace sluice::server {

// One route: requests for `path` go to `handler`.
struct Route {
  std::string path;
  std::function<void(const HttpRequest&, HttpServer::Respond)> handler;
};

class RouteTable {
 public:
  using NotFound = std::function<HttpResponse(std::string_view path)>;

  // Routes with an empty path are left out (a listener that does not serve one, as /metrics
  // with DISABLE_STATS); of two routes for one path, the first is kept. `more` (the dashboard's)
  // come after `routes`.
  RouteTable(const std::vector<Route>& routes, NotFound not_found,
             const std::vector<Route>& more = {});

  // Answers `request` with the route of its path, or with the not-found answer.
  void Handle(const HttpRequest& request, HttpServer::Respond respond) const;

 private:
  absl::flat_hash_map<std::string, std::function<void(const HttpRequest&, HttpServer::Respond)>>
      routes_;
  NotFound not_found_;
};

// PathOf()
//
// Returns `target` without its query string.
inline std::string_view PathOf(std::string_view target) {
  return target.substr(0, target.find('?'));
}

// RlConfigRoute()
//
// GET /rlconfig: "# config: <origin>" when the service knows where its config came from, then the
// loaded rules, one per line (empty before a config is loaded).
Route RlConfigRoute(const RateLimitService& service);

// MetricsRoute()
//
// GET `path`: the metrics in the Prometheus text format. An empty `path` gives a route the table
// leaves out.
Route MetricsRoute(const Metrics& metrics, std::string path);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_ADMIN_ROUTES_H_
