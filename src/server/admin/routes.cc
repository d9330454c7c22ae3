#include "src/server/admin/routes.h"

#include <memory>
#include <utility>

#include "src/util/strings.h"

namespace sluice::server {

RouteTable::RouteTable(const std::vector<Route>& routes, NotFound not_found,
                       const std::vector<Route>& more)
    : not_found_(std::move(not_found)) {
  for (const std::vector<Route>* list : {&routes, &more}) {
    for (const Route& r : *list) {
      if (!r.path.empty()) routes_.try_emplace(r.path, r.handler);
    }
  }
}

void RouteTable::Handle(const HttpRequest& request, HttpServer::Respond respond) const {
  const std::string_view path = PathOf(request.target);
  if (auto it = routes_.find(internal::AbslView(path)); it != routes_.end()) {
    it->second(request, std::move(respond));
    return;
  }
  std::move(respond)(not_found_(path));
}

Route RlConfigRoute(const RateLimitService& service) {
  return Route{.path = "/rlconfig",
               .handler = [&service](const HttpRequest& /*request*/, HttpServer::Respond respond) {
                 std::shared_ptr<const RateLimitConfig> config = service.config();
                 std::string body;
                 if (config != nullptr) {
                   // A comment line first, so that the rules below stay the reference's Dump().
                   const std::string origin = service.config_origin();
                   if (!origin.empty()) body = "# config: " + origin + "\n";
                   body += config->Dump();
                 }
                 std::move(respond)(HttpResponse{
                     .status = 200, .content_type = "text/plain", .body = std::move(body)});
               }};
}

Route MetricsRoute(const Metrics& metrics, std::string path) {
  return Route{
      .path = std::move(path),
      .handler = [&metrics](const HttpRequest& /*request*/, HttpServer::Respond respond) {
        std::move(respond)(HttpResponse{
            .status = 200, .content_type = "text/plain; version=0.0.4", .body = metrics.Render()});
      }};
}

}  // namespace sluice::server
