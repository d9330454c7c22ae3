#include "src/server/admin/listeners.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "src/server/admin/routes.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

using ::sluice::internal::AbslView;

HttpResponse NotFound(std::string_view path) {
  return HttpResponse{.status = 404,
                      .content_type = "text/plain",
                      .body = absl::StrCat("404 page not found: ", AbslView(path), "\n")};
}

}  // namespace

absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view what, std::string_view text) {
  const size_t colon = text.rfind(':');
  int port = -1;
  if (colon == std::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(AbslView(text.substr(colon + 1)), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(what), ": expected host:port, got '", AbslView(text), "'"));
  }
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return ListenAddress{.host = std::move(host), .port = static_cast<uint16_t>(port)};
}

HttpServer::Handler DebugHandler(const RateLimitService& service,
                                 const std::vector<Route>& extra_routes) {
  auto routes = std::make_shared<const RouteTable>(
      std::vector<Route>{
          RlConfigRoute(service),
          Route{.path = "/",
                .handler =
                    [](const HttpRequest& /*request*/, HttpServer::Respond respond) {
                      std::move(respond)(HttpResponse{
                          .status = 200,
                          .content_type = "text/plain",
                          .body = "/rlconfig: print out the currently loaded configuration for "
                                  "debugging\n"});
                    }},
      },
      NotFound, extra_routes);
  return [routes](const HttpRequest& request, HttpServer::Respond respond) {
    routes->Handle(request, std::move(respond));
  };
}

HttpServer::Handler PrometheusHandler(const Metrics& metrics, std::string path) {
  auto routes = std::make_shared<const RouteTable>(
      std::vector<Route>{MetricsRoute(metrics, std::move(path))}, NotFound);
  return [routes](const HttpRequest& request, HttpServer::Respond respond) {
    routes->Handle(request, std::move(respond));
  };
}

}  // namespace sluice::server
