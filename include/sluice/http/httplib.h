// cpp-httplib adapter of the HTTP middleware: a pre-routing handler, and handlers wrapped with a
// named policy.
//
// cpp-httplib serves each connection on a thread of its pool, so the adapter decides
// synchronously (Middleware::Decide()). InstallRateLimit() sets a pre-routing handler that
// applies the route rules and the global rule to every request: a rejected request is answered
// before routing; a passed one carries the RateLimit headers into the route handler's response.
// Limited() attaches a policy (MiddlewareSpec::policies) to one handler, in code, so the rule
// cannot drift from the route: only requests that reach that handler are counted against it.
//
// Example:
//   httplib::Server server;
//   sluice::http::InstallRateLimit(server, *middleware);
//   server.Get("/api/items", [](const httplib::Request&, httplib::Response& res) {
//     res.set_content("[]", "application/json");
//   });
//   auto get_order = sluice::http::Limited(*middleware, "orders-read", GetOrder);
//   if (!get_order.ok()) return get_order.status();  // NotFound: no policy of that name
//   server.Get("/api/orders/(\\d+)", *std::move(get_order));
//
// cpp-httplib holds one pre-routing handler: calling Server::set_pre_routing_handler() after
// InstallRateLimit() replaces the rate limit (and calling InstallRateLimit() after it replaces
// the application's). To keep a pre-routing handler of the application's own (authentication,
// logging), pass it to InstallRateLimit(), which runs it first.
//
// Note: a server error handler (Server::set_error_handler) also runs on rejections (status >= 400)
// and may replace their body; leave rejections alone in it (their Content-Type is
// application/problem+json).
//
// Thread safety: as Middleware::Decide().
#ifndef SLUICE_HTTP_HTTPLIB_H_
#define SLUICE_HTTP_HTTPLIB_H_

#include <functional>
#include <string_view>

#include "absl/status/statusor.h"
#include <httplib.h>

#include "sluice/http/middleware.h"
#include "sluice/http/request.h"

namespace sluice::http {

// An application's pre-routing handler that may also name who the request is from. It runs
// before the rate limit. It may answer the request itself (return Handled: the rate limit does
// not run, nor does routing), or return Unhandled, after setting `principal` to the identity it
// verified (then the middleware counts the request as that principal and does not call
// MiddlewareOptions::authenticate) or leaving it empty (`id` empty: the middleware resolves the
// identity as usual, authenticate included). Answering a request before the limit runs means it
// is not limited: reject unauthenticated requests in the handlers, or leave `principal` empty and
// let the limit count them by address.
using PreRoutingWithPrincipal = std::function<httplib::Server::HandlerResponse(
    const httplib::Request&, httplib::Response&, Principal& principal)>;

// RateLimitPreRouting()
//
// Returns a pre-routing handler that rate limits with `middleware`, for servers that compose their
// own pre-routing handler. `middleware` must outlive the server.
httplib::Server::HandlerWithResponse RateLimitPreRouting(Middleware& middleware);

// RateLimitPreRouting()
//
// Returns a pre-routing handler that runs `app` first (see PreRoutingWithPrincipal), then, unless
// `app` answered, rate limits with `middleware` using the principal `app` named.
httplib::Server::HandlerWithResponse RateLimitPreRouting(Middleware& middleware,
                                                         PreRoutingWithPrincipal app);

// InstallRateLimit()
//
// Sets RateLimitPreRouting(middleware) as `server`'s pre-routing handler, replacing any that was
// set (cpp-httplib has one, and no getter for it): use the overloads below to keep one.
void InstallRateLimit(httplib::Server& server, Middleware& middleware);

// InstallRateLimit()
//
// Sets a pre-routing handler that runs the application's `app` first and then, unless `app`
// answered the request (returned Handled), the rate limit. With a PreRoutingWithPrincipal, the
// principal `app` names is the request's identity (MiddlewareOptions::authenticate is not called).
void InstallRateLimit(httplib::Server& server, Middleware& middleware,
                      httplib::Server::HandlerWithResponse app);
void InstallRateLimit(httplib::Server& server, Middleware& middleware, PreRoutingWithPrincipal app);

// Limited()
//
// Returns `handler` wrapped with the policy named `policy` (MiddlewareSpec::policies): each
// request it handles is first decided by that policy's limits for the request's tier (and by
// nothing else of the config: the global rule and the route rules are the pre-routing handler's,
// InstallRateLimit()). Over the limit it answers the rejection (429, Retry-After, problem+json)
// and the handler does not run; otherwise the handler runs and the response carries the policy's
// RateLimit headers (beside the pre-routing handler's, if any). The identity comes from the
// middleware's chain (MiddlewareOptions::authenticate, the API key, the client IP).
// Returns NotFound, naming the policies defined, when the running config has no policy
// `policy`: a typo fails when the server is wired, not by leaving the route unlimited. Should a
// later reload drop the policy, the handler answers 500 (problem+json) until it is back.
// `middleware` must outlive the server.
absl::StatusOr<httplib::Server::Handler> Limited(Middleware& middleware, std::string_view policy,
                                                 httplib::Server::Handler handler);

}  // namespace sluice::http

#endif  // SLUICE_HTTP_HTTPLIB_H_
