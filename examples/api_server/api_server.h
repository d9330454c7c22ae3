// ApiServer: a small asynchronous HTTP API on sluice's Beast server (sluice/net/beast_server.h)
// with the sluice middleware in front of its routes, the example of docs/middleware.md.
//
// Routes: GET /api/items, GET /api/orders/{id}, POST /api/orders, GET /healthz (not limited).
// Toy authentication: "Authorization: Bearer <user>:<tier>" identifies <user> in <tier>; anything
// else is anonymous. Each request is decided asynchronously, so an I/O thread never waits for
// Redis; the verdict comes back on the connection's thread.
//
// Thread safety: Start() and Stop() from one thread; requests are served on the I/O threads.
#ifndef SLUICE_EXAMPLES_API_SERVER_API_SERVER_H_
#define SLUICE_EXAMPLES_API_SERVER_API_SERVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"

#include "sluice/http/middleware.h"

namespace sluice::examples {

struct ApiServerOptions {
  // Listen address. Default: loopback.
  std::string address = "127.0.0.1";
  // Listen port; 0 picks a free one (see ApiServer::port()).
  uint16_t port = 8080;
  // I/O threads. Default: 1.
  int threads = 1;
  // The rate limiting middleware, or nullptr to serve without limits (--no-limits). Not owned.
  http::Middleware* middleware = nullptr;
};

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions options);
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;
  ~ApiServer();

  // Binds and starts the I/O threads; Unavailable when the address cannot be bound.
  absl::Status Start();
  // Stops accepting, closes connections and joins the threads. Idempotent.
  void Stop();
  uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ToyAuthenticate()
//
// Returns the principal of "Authorization: Bearer <user>:<tier>" ("Bearer <user>" gives the
// default authenticated tier), or nullopt. Not authentication: any client can claim any tier.
std::optional<http::Principal> ToyAuthenticate(const http::RequestView& request);

}  // namespace sluice::examples

#endif  // SLUICE_EXAMPLES_API_SERVER_API_SERVER_H_
