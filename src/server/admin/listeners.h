// The small HTTP listeners beside sluiced's main one, and the address form they all take.
//
//   debug listener (DEBUG_HOST:DEBUG_PORT, --debug): GET /rlconfig, the loaded rules, and GET /,
//     the list of endpoints, as the reference's debug port answers them (without Go's pprof).
//   Prometheus listener (PROMETHEUS_ADDR, --prometheus): GET <path>, the metrics text.
//
// Thread safety: the handlers are thread-safe; what they reference must outlive the servers.
#ifndef SLUICE_SERVER_ADMIN_LISTENERS_H_
#define SLUICE_SERVER_ADMIN_LISTENERS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "src/server/admin/http_server.h"
#include "src/server/admin/routes.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"

namespace sluice::server {

struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};

// ParseListenAddress()
//
// Returns "host:port" ("[v6]:port" too; port 0 picks one) split, or InvalidArgument naming `what`
// (the flag) and the text.
absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view what, std::string_view text);

// Answers the debug listener's requests, and `extra_routes` (the dashboard's) beside them.
HttpServer::Handler DebugHandler(const RateLimitService& service,
                                 const std::vector<Route>& extra_routes = {});

// Answers GET `path` with the metrics, anything else with 404.
HttpServer::Handler PrometheusHandler(const Metrics& metrics, std::string path);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_ADMIN_LISTENERS_H_
