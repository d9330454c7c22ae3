#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "sluice/http/httplib.h"
#include "sluice/http/middleware_config.h"

namespace sluice::http {
namespace {

// Decides `req`, as routed by cpp-httplib (the decoded path), by `policy` when not empty, with
// `principal` as its identity when not null.
Verdict DecideHttplib(Middleware& middleware, const httplib::Request& req, std::string_view policy,
                      const Principal* principal) {
  std::vector<HeaderField> headers;
  headers.reserve(req.headers.size());
  for (const auto& [name, value] : req.headers) headers.push_back({name, value});
  const RequestView view{.method = req.method,
                         .path = req.path,
                         .route_template = {},
                         .headers = headers,
                         .peer_address = req.remote_addr,
                         .refuse_ambiguous_path = false,
                         .policy = policy,
                         .principal = principal};
  return middleware.Decide(view);
}

// Adds the verdict's headers to `res` and, for a rejection, its status and body. Returns whether
// the request passed.
bool Apply(const Verdict& verdict, httplib::Response& res) {
  for (const ResponseHeader& header : verdict.headers) res.set_header(header.name, header.value);
  if (verdict.passed()) return true;
  res.status = verdict.status;
  res.set_content(verdict.body, verdict.content_type.c_str());
  return false;
}

httplib::Server::HandlerResponse Finish(const Verdict& verdict, httplib::Response& res) {
  return Apply(verdict, res) ? httplib::Server::HandlerResponse::Unhandled
                             : httplib::Server::HandlerResponse::Handled;
}

}  // namespace

httplib::Server::HandlerWithResponse RateLimitPreRouting(Middleware& middleware) {
  return [&middleware](const httplib::Request& req, httplib::Response& res) {
    return Finish(DecideHttplib(middleware, req, {}, nullptr), res);
  };
}

httplib::Server::HandlerWithResponse RateLimitPreRouting(Middleware& middleware,
                                                         PreRoutingWithPrincipal app) {
  return [&middleware, app = std::move(app)](const httplib::Request& req, httplib::Response& res) {
    Principal principal;
    if (app && app(req, res, principal) == httplib::Server::HandlerResponse::Handled) {
      return httplib::Server::HandlerResponse::Handled;
    }
    // An empty id means the application named no one: the middleware's own chain decides.
    return Finish(DecideHttplib(middleware, req, {}, principal.id.empty() ? nullptr : &principal),
                  res);
  };
}

void InstallRateLimit(httplib::Server& server, Middleware& middleware) {
  server.set_pre_routing_handler(RateLimitPreRouting(middleware));
}

void InstallRateLimit(httplib::Server& server, Middleware& middleware,
                      httplib::Server::HandlerWithResponse app) {
  PreRoutingWithPrincipal with_principal;
  if (app) {
    with_principal = [app = std::move(app)](const httplib::Request& req, httplib::Response& res,
                                            Principal&) { return app(req, res); };
  }
  server.set_pre_routing_handler(RateLimitPreRouting(middleware, std::move(with_principal)));
}

void InstallRateLimit(httplib::Server& server, Middleware& middleware,
                      PreRoutingWithPrincipal app) {
  server.set_pre_routing_handler(RateLimitPreRouting(middleware, std::move(app)));
}

absl::StatusOr<httplib::Server::Handler> Limited(Middleware& middleware, std::string_view policy,
                                                 httplib::Server::Handler handler) {
  const std::shared_ptr<const MiddlewareConfig> config = middleware.config();
  if (!config->HasPolicy(policy)) {
    std::vector<std::string> names;
    for (const RuleSpec& p : config->spec().policies) names.push_back(p.name);
    return absl::NotFoundError(absl::StrCat(
        "rate limit policy '", std::string(policy), "' is not defined",
        config->spec().source.empty() ? "" : absl::StrCat(" in ", config->spec().source),
        names.empty() ? std::string(" (the config has no policies: section)")
                      : absl::StrCat(" (policies: ", absl::StrJoin(names, ", "), ")")));
  }
  if (!handler) return absl::InvalidArgumentError("Limited(): the handler is empty");
  return [&middleware, name = std::string(policy), handler = std::move(handler)](
             const httplib::Request& req, httplib::Response& res) {
    if (!middleware.config()->HasPolicy(name)) {
      // A reload dropped the policy this route names: refuse loudly rather than serve unlimited.
      res.status = 500;
      res.set_content(
          absl::StrCat(R"({"type":"about:blank","title":"Internal Server Error","status":500,)",
                       R"("detail":"The rate limit policy of this route is not configured."})"),
          "application/problem+json");
      return;
    }
    if (Apply(DecideHttplib(middleware, req, name, nullptr), res)) handler(req, res);
  };
}

}  // namespace sluice::http
