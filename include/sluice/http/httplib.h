// cpp-httplib adapter of the HTTP middleware: a pre-routing handler.
//
// cpp-httplib serves each connection on a thread of its pool, so the handler decides
// synchronously (Middleware::Decide()). A rejected request is answered before routing; a passed
// one carries the RateLimit headers into the route handler's response.
//
// Example:
//   httplib::Server server;
//   sluice::http::InstallRateLimit(server, *middleware);
//   server.Get("/api/items", [](const httplib::Request&, httplib::Response& res) {
//     res.set_content("[]", "application/json");
//   });
//
// Note: a server error handler (Server::set_error_handler) also runs on rejections (status >= 400)
// and may replace their body; leave rejections alone in it (their Content-Type is
// application/problem+json).
//
// Thread safety: as Middleware::Decide().
#ifndef SLUICE_HTTP_HTTPLIB_H_
#define SLUICE_HTTP_HTTPLIB_H_

#include <httplib.h>

#include "sluice/http/middleware.h"

namespace sluice::http {

// RateLimitPreRouting()
//
// Returns a pre-routing handler that rate limits with `middleware`, for servers that compose their
// own pre-routing handler. `middleware` must outlive the server.
httplib::Server::HandlerWithResponse RateLimitPreRouting(Middleware& middleware);

// InstallRateLimit()
//
// Sets RateLimitPreRouting(middleware) as `server`'s pre-routing handler.
void InstallRateLimit(httplib::Server& server, Middleware& middleware);

}  // namespace sluice::http

#endif  // SLUICE_HTTP_HTTPLIB_H_
