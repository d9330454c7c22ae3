// HttpServer: sluiced's HTTP server for its JSON API, health check and metrics, on the one Beast
// server of the project (sluice/net/beast_server.h), with requests and answers as plain structs.
//
// Each connection is read with a size limit and an idle timeout (headers over 16 KiB get 431, a
// body over `max_body_bytes` 413); the handler answers each request exactly once through its
// `Respond` callback, from any thread, which lets the handler wait on an asynchronous store
// without blocking an I/O thread. Keep-alive is honoured. Every answer says "Server: sluiced".
//
// Example:
//   HttpServer server({.address = "127.0.0.1", .port = 8080},
//                     [](HttpRequest req, HttpServer::Respond respond) {
//                       respond(HttpResponse{.status = 200, .body = "ok"});
//                     });
//   SLUICE_RETURN_IF_ERROR(server.Start());
//
// Thread safety: Start() and Stop() from one thread; the handler runs on I/O threads.
#ifndef SLUICE_SERVER_ADMIN_HTTP_SERVER_H_
#define SLUICE_SERVER_ADMIN_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"

#include "sluice/net/accept_backoff.h"

namespace sluice::server {

struct HttpRequest {
  std::string method{};
  std::string target{};
  std::string body{};
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body{};
  std::vector<std::pair<std::string, std::string>> headers{};
};

struct HttpServerOptions {
  // Listen address. Default: loopback only.
  std::string address = "127.0.0.1";
  // Listen port; 0 picks a free one (see HttpServer::port()).
  uint16_t port = 8080;
  // I/O threads, each with the connections it accepted; one more thread accepts. Default: 1.
  int threads = 1;
  // Largest request body accepted; larger requests get 413. Default: 64 KiB.
  size_t max_body_bytes = size_t{64} * 1024;
  // A connection idle this long is closed. Default: 30 s.
  std::chrono::seconds idle_timeout{30};
  // Open connections beyond which new ones are closed at once and counted
  // (sluice/net/beast_server.h). Default: 10,000; sluiced derives its default from the descriptor
  // limit (fd_limit.h).
  size_t max_connections = 10'000;
  // Open connections from one IP address beyond which its new ones are closed at once; 0: no such
  // cap. Default: 0.
  size_t max_connections_per_address = 0;
};

class HttpServer {
 public:
  using Respond = absl::AnyInvocable<void(HttpResponse) &&>;
  using Handler = std::function<void(HttpRequest, Respond)>;

  HttpServer(HttpServerOptions options, Handler handler);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();

  // HttpServer::Start()
  //
  // Binds and starts the I/O threads; returns Unavailable (with the address) when it cannot bind.
  absl::Status Start();

  // HttpServer::Stop()
  //
  // Stops accepting, closes connections and joins the I/O threads. Idempotent.
  void Stop();

  // The bound port (useful with port 0). Valid after Start().
  uint16_t port() const;

  // HttpServer::ListenerHealth()
  //
  // OK while the listener accepts connections; Unavailable when it stopped for good, is not
  // started, or has been out of descriptors for 5 s (BeastServer::ListenerHealth()). Thread-safe.
  absl::Status ListenerHealth() const;

  // Accept counters (connections accepted, closed over the cap, failed accepts). Thread-safe.
  ::sluice::net::ListenerStats ListenerStats() const;

  // Connections open now. Thread-safe.
  size_t open_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_ADMIN_HTTP_SERVER_H_
