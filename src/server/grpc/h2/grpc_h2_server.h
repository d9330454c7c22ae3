// GrpcH2Server: unary gRPC methods over HTTP/2 with nghttp2 (libnghttp2) and Boost.Asio, plain
// TCP only: sluiced's opt-in lean engine (--grpc-engine nghttp2), because gRPC C++ cost sluiced
// 2-3x the CPU per decision (docs/PERFORMANCE.md, "gRPC engines"). GrpcServer (grpc_server.h)
// drives it; it knows nothing of rate limiting.
//
// What it serves: the unary methods it is given, by path ("/pkg.Service/Method"), and
// grpc.health.v1.Health/Check for `health_services` (another name: NOT_FOUND; Watch, a streaming
// method: UNIMPLEMENTED, like every other path). Errors are trailers-only responses with a
// percent-encoded grpc-message.
//
// What a client meets (each bound answers, never grows):
// - SETTINGS_MAX_CONCURRENT_STREAMS `max_concurrent_streams`; header block over
//   `max_header_bytes`: the stream is reset; a request message over `max_message_bytes`, or
//   request bytes buffered on one connection over `max_connection_buffer_bytes` (or on all over
//   `max_buffered_bytes`):
//   RESOURCE_EXHAUSTED, and the rest of that request is dropped unread.
// - grpc-timeout: an answer due after it is DEADLINE_EXCEEDED instead.
// - Connections: TcpListener's cap and descriptor backoff; GOAWAY after `max_connection_idle`
//   without a call, and after `max_connection_age` (+-10%), then `max_connection_age_grace` for
//   its calls. Stop() sends GOAWAY everywhere and waits up to `stop_grace` for calls in flight.
//
// Threads: `threads` I/O threads, one io_context each; connections are spread over them and each
// lives on one. A method's Responder may be called from any thread: the answer is written on the
// connection's. An answer for a call whose stream or connection is gone is dropped.
//
// Thread safety: Start() and Stop() from one thread; SetServing(), ListenerHealth(), Stats() from
// any.
#ifndef SLUICE_SERVER_GRPC_H2_GRPC_H2_SERVER_H_
#define SLUICE_SERVER_GRPC_H2_GRPC_H2_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "sluice/net/accept_backoff.h"

namespace sluice::server::h2 {

class Connection;
struct GrpcH2ServerRuntime;

struct GrpcH2ServerOptions {
  // An IP literal and a port (0 picks one, see port()).
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  int threads = 2;
  size_t max_connections = 10'000;
  // Open connections from one IP address beyond which its new ones are closed; 0: no such cap.
  size_t max_connections_per_address = 0;
  // At the cap, a new connection closes the oldest one that has not sent a byte yet, as
  // GrpcServerOptions::close_idle_at_cap says.
  bool close_idle_at_cap = true;
  uint32_t max_concurrent_streams = 100;
  // gRPC's default receive limit.
  size_t max_message_bytes = size_t{4} << 20;
  size_t max_header_bytes = 16 << 10;
  // Enough for two maximal messages at once; the many small ones Envoy sends never come close.
  size_t max_connection_buffer_bytes = size_t{8} << 20;
  // The same over all connections, as gRPC C++'s memory quota bounds its buffers.
  size_t max_buffered_bytes = size_t{256} << 20;
  std::chrono::milliseconds max_connection_idle = std::chrono::minutes(5);  // 0: never
  std::chrono::milliseconds max_connection_age{0};                          // 0: never
  std::chrono::milliseconds max_connection_age_grace{0};                    // 0: unlimited
  // A connection that sends no byte for this long is closed and counted. 0: never.
  std::chrono::milliseconds first_bytes_timeout{0};
  std::chrono::milliseconds stop_grace = std::chrono::seconds(5);
  std::vector<std::string> health_services = {""};
  // Warnings (throttled by the caller where they can repeat); empty: standard error.
  std::function<void(std::string_view line)> log{};
};

// Answers one call, once, from any thread. OK with the serialized response, or a status.
class Responder {
 public:
  Responder(std::weak_ptr<Connection> connection, int32_t stream_id)
      : connection_(std::move(connection)), stream_id_(stream_id) {}
  void operator()(absl::StatusOr<std::string> response) &&;

 private:
  std::weak_ptr<Connection> connection_;
  int32_t stream_id_;
};

// `request` (the message's bytes) is valid only during the call; `peer` is "ipv4:a.b.c.d:port" or
// "ipv6:[..]:port", as gRPC names callers.
using UnaryMethod =
    std::function<void(std::string_view request, const std::string& peer, Responder respond)>;

struct GrpcH2ServerStats {
  size_t open_connections = 0;
  // Request bytes held over all connections (bounded by `max_buffered_bytes`).
  size_t buffered_request_bytes = 0;
  // Connections closed for sending nothing within `first_bytes_timeout`.
  uint64_t silent_closed = 0;
  ::sluice::net::ListenerStats listener{};
};

class GrpcH2Server {
 public:
  GrpcH2Server(GrpcH2ServerOptions options, absl::flat_hash_map<std::string, UnaryMethod> methods);
  GrpcH2Server(const GrpcH2Server&) = delete;
  GrpcH2Server& operator=(const GrpcH2Server&) = delete;
  ~GrpcH2Server();

  // Listens and starts the threads (health SERVING); Unavailable when it cannot bind,
  // InvalidArgument for an address that is not an IP literal.
  absl::Status Start();
  // GOAWAY to every connection, then waits up to `stop_grace` for their calls; then closes what is
  // left and joins the threads. Idempotent.
  void Stop();
  void SetServing(bool serving);
  uint16_t port() const;
  absl::Status ListenerHealth() const;
  GrpcH2ServerStats Stats() const;

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<GrpcH2ServerRuntime> runtime_;  // Between Start() and Stop().
};

}  // namespace sluice::server::h2

#endif  // SLUICE_SERVER_GRPC_H2_GRPC_H2_SERVER_H_
