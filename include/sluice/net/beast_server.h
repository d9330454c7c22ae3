// BeastServer: an asynchronous HTTP/1.1 server on Boost.Beast, the one under both sluiced's JSON
// API and the example API server (examples/api_server) with the middleware in front of its routes.
//
// - Each I/O thread runs its own io_context and owns the connections accepted onto it, so a
//   connection's handlers never run concurrently and need no strand; one more thread accepts.
// - Limits: request headers over `max_header_bytes` get 431 and a body over `max_body_bytes` 413
//   (then the connection closes: the rest of the request is unread); a connection idle for
//   `idle_timeout` is closed; at `max_connections` open ones a new connection replaces the
//   longest-idle one (`close_idle_at_cap`), or is closed at once when none is idle, and counted;
//   an accept that fails for lack of descriptors waits (accept_backoff.h) instead of
//   spinning.
// - The handler answers each request exactly once through its Responder, from any thread: it may
//   wait on an asynchronous store without blocking an I/O thread. The server sets the answer's
//   HTTP version, keep-alive (the request's, unless the answer says close) and Content-Length.
//
// Example (the middleware in front of an application's `Route()`):
//   BeastServer server({.port = 8080}, [&middleware](BeastServer::Request& req,
//                                                    const boost::asio::ip::tcp::endpoint& peer,
//                                                    BeastServer::Responder respond) {
//     const BeastServer::Executor executor = respond.executor();
//     CheckBeastRequest(
//         middleware, executor, req, peer,
//         [&req, respond = std::move(respond)](const Verdict& verdict) mutable {
//           if (!verdict.passed()) {
//             return std::move(respond)(MakeRejection(verdict, req.version(), req.keep_alive()));
//           }
//           BeastServer::Response res = Route(req);
//           ApplyVerdictHeaders(verdict, res);
//           std::move(respond)(std::move(res));
//         });
//   });
//   SLUICE_RETURN_IF_ERROR(server.Start());
//
// Thread safety: Start() and Stop() from one thread; the handler runs on the I/O threads; the
// accessors are thread-safe.
#ifndef SLUICE_NET_BEAST_SERVER_H_
#define SLUICE_NET_BEAST_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "sluice/net/accept_backoff.h"

namespace sluice::net {

namespace internal {
class BeastSession;
}  // namespace internal

struct BeastServerOptions {
  // Names the listener in log lines and errors. Default: "http".
  std::string name = "http";
  // Listen address, an IP literal. Default: loopback only.
  std::string address = "127.0.0.1";
  // Listen port; 0 picks a free one (see BeastServer::port()).
  uint16_t port = 8080;
  // I/O threads, each with the connections it accepted. Default: 1.
  int threads = 1;
  // Largest request line and header fields; larger requests get 431. Default: 16 KiB.
  uint32_t max_header_bytes = 16 * 1024;
  // Largest request body; larger requests get 413. Default: 64 KiB.
  uint64_t max_body_bytes = uint64_t{64} * 1024;
  // A connection idle this long (or this slow to send a request) is closed. Default: 30 s.
  std::chrono::seconds idle_timeout{30};
  // Open connections beyond which new ones are closed at once and counted. Default: 10,000.
  size_t max_connections = 10'000;
  // Open connections from one IP address beyond which its new ones are closed at once and
  // counted; 0: no such cap. Default: 0.
  size_t max_connections_per_address = 0;
  // At `max_connections`, a new connection closes the connection that has waited longest for a
  // request (new, or kept alive between requests) and takes its place; only when none is waiting
  // is the new one closed. Connections held open without requests (an idle flood, slowloris)
  // then cannot keep new clients out. Default: true.
  bool close_idle_at_cap = true;
  // The Server field of every answer; empty: none. Default: none.
  std::string server_header{};
  // Receives the accept loop's warnings and errors (out of descriptors, over the cap, a listening
  // socket that failed), at most one line a second. Default (empty): standard error.
  std::function<void(std::string_view line)> log{};
};

class BeastServer {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using Executor = boost::asio::io_context::executor_type;

  // Responder: answers one request, once, from any thread. Cheap to move (a shared pointer).
  class Responder {
   public:
    Responder(Responder&&) noexcept = default;
    Responder& operator=(Responder&&) noexcept = default;
    Responder(const Responder&) = delete;
    Responder& operator=(const Responder&) = delete;
    ~Responder() = default;

    // Writes `response` on the connection: at once when called on the connection's thread, else
    // dispatched to it.
    void operator()(Response response) &&;

    // The connection's executor: the one its handlers run on.
    Executor executor() const;

   private:
    friend class internal::BeastSession;
    explicit Responder(std::shared_ptr<internal::BeastSession> session)
        : session_(std::move(session)) {}
    std::shared_ptr<internal::BeastSession> session_;
  };

  // Called on the connection's thread for each request read. `request` stays valid (and the
  // handler may move from it) until `respond` is called; `peer` is the client's address.
  using Handler = std::function<void(Request& request, const boost::asio::ip::tcp::endpoint& peer,
                                     Responder respond)>;

  BeastServer(BeastServerOptions options, Handler handler);
  BeastServer(const BeastServer&) = delete;
  BeastServer& operator=(const BeastServer&) = delete;
  ~BeastServer();

  // BeastServer::Start()
  //
  // Binds and starts the threads. Returns InvalidArgument for an address that is not an IP
  // literal, Unavailable (with the address) when it cannot bind.
  absl::Status Start();

  // BeastServer::Stop()
  //
  // Stops accepting, closes connections and joins the threads. Idempotent.
  void Stop();

  // The bound port (useful with port 0). Valid after Start().
  uint16_t port() const;

  // BeastServer::ListenerHealth()
  //
  // OK while the listener accepts connections; Unavailable when its socket failed for good, when it
  // is not started, or when accepts have failed for lack of descriptors for 5 s.
  absl::Status ListenerHealth() const;

  // Accept counters: connections accepted, closed over the cap, idle ones closed at the cap,
  // failed accepts.
  ListenerStats listener_stats() const;

  // Connections open now.
  size_t open_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::net

#endif  // SLUICE_NET_BEAST_SERVER_H_
