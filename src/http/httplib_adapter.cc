#include <string_view>
#include <vector>

#include "sluice/http/httplib.h"

namespace sluice::http {

httplib::Server::HandlerWithResponse RateLimitPreRouting(Middleware& middleware) {
  return [&middleware](const httplib::Request& req, httplib::Response& res) {
    std::vector<HeaderField> headers;
    headers.reserve(req.headers.size());
    for (const auto& [name, value] : req.headers) headers.push_back({name, value});
    const RequestView view{.method = req.method,
                           .path = req.path,
                           .route_template = {},
                           .headers = headers,
                           .peer_address = req.remote_addr};
    const Verdict verdict = middleware.Decide(view);
    for (const ResponseHeader& header : verdict.headers) res.set_header(header.name, header.value);
    if (verdict.passed()) return httplib::Server::HandlerResponse::Unhandled;
    res.status = verdict.status;
    res.set_content(verdict.body, verdict.content_type.c_str());
    return httplib::Server::HandlerResponse::Handled;
  };
}

void InstallRateLimit(httplib::Server& server, Middleware& middleware) {
  server.set_pre_routing_handler(RateLimitPreRouting(middleware));
}

}  // namespace sluice::http
