// GrpcServer: the gRPC services it is given (grpc_service.h; sluiced gives it the rate limit
// service, rls_grpc_service.h) on gRPC's callback API or the nghttp2 engine, plus
// grpc.health.v1.Health.
//
// Health answers for the server ("") and for each service's health name ("ratelimit", the name
// the reference registers); SetServing() follows /healthcheck.
//
// What a flood meets (docs/reliability.md):
// - Bytes that are not a RateLimitRequest, or more than `max_in_flight` decisions waiting for the
//   store: see rls_grpc_service.h.
// - Memory: a grpc::ResourceQuota of `memory_quota_bytes`; streams per connection, idle
//   connections and message sizes are bounded by the options below.
// - Connections: on "host:port" with an IP literal and without TLS, sluiced accepts the
//   connections itself (TcpListener: a cap, a backoff when descriptors run out, a health answer)
//   and hands each to gRPC; gRPC 1.51's own listener stops for good after one failed accept
//   (EMFILE), and nothing outside it can see that. A new connection is handed over once it sends
//   its first bytes (grpc_preface_gate.h), so that silent ones can make room at the cap. With
//   TLS, a Unix socket or a host name, gRPC listens itself: no cap, and ListenerHealth() cannot
//   notice a dead listener.
//
// Thread safety: Start() and Stop() from one thread; SetServing(), ListenerHealth() and Stats()
// from any.
#ifndef SLUICE_SERVER_GRPC_GRPC_SERVER_H_
#define SLUICE_SERVER_GRPC_GRPC_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"

#include "sluice/net/accept_backoff.h"

#include "src/server/grpc/grpc_service.h"
#include "src/server/grpc/rls_grpc_service.h"
#include "src/server/rls/rate_limit_service.h"

namespace sluice::server {

// What serves the gRPC API: gRPC C++ (everything), or the lean HTTP/2 engine on nghttp2
// (h2/grpc_h2_server.h: plain TCP on an IP literal only; 0.33-0.45x sluiced's CPU per decision).
enum class GrpcEngine { kGrpc, kNghttp2 };

struct GrpcServerOptions {
  GrpcEngine engine = GrpcEngine::kGrpc;
  // I/O threads of the nghttp2 engine (gRPC C++ sizes its own pools).
  int engine_threads = 2;
  // "host:port" (port 0 picks one) or "unix:/path".
  std::string address = "127.0.0.1:0";
  // A connection is closed (GOAWAY) after this long, +-10%; then gets `max_connection_age_grace`
  // to finish its calls. 0: no limit. The reference's GRPC_MAX_CONNECTION_AGE(_GRACE).
  std::chrono::milliseconds max_connection_age{0};
  std::chrono::milliseconds max_connection_age_grace{0};
  // TLS when both are set (PEM files); with `tls_client_ca`, clients must present a certificate
  // it signed (mTLS).
  std::string tls_cert_file{};
  std::string tls_key_file{};
  std::string tls_client_ca_file{};
  // Calls in flight beyond which a call is answered RESOURCE_EXHAUSTED at once, each connection
  // with its share of them (fair_scheduler.h), for the rate limit service the server makes itself
  // (the constructors taking a RateLimitService); a GrpcService given to it carries its own bound.
  // Default: 10,000.
  size_t max_in_flight = 10'000;
  // Open connections beyond which new ones are closed at once (only where sluiced accepts them
  // itself, see above). Default: 10,000; sluiced derives its default from the descriptor limit.
  size_t max_connections = 10'000;
  // Open connections from one IP address beyond which its new ones are closed at once (only where
  // sluiced accepts them itself, as `max_connections`); 0: no such cap. Default: 0.
  size_t max_connections_per_address = 0;
  // At `max_connections`, a new connection closes the one that has waited longest without
  // sending a byte and takes its place; only when every connection has spoken is the new one
  // closed. Connections held open without a byte (an idle flood) then cannot keep new clients
  // out. Where sluiced accepts the connections itself. Default: true.
  bool close_idle_at_cap = true;
  // Where sluiced accepts the connections itself, a connection that sends nothing for this long
  // (or for `max_connection_idle`, when shorter) is closed. Default: 10 s.
  std::chrono::milliseconds first_bytes_timeout = std::chrono::seconds(10);
  // Concurrent calls (HTTP/2 streams) per connection: the client queues the rest on its side (an
  // Envoy opens another connection). With 1,000, 20 flooding connections held 20,000 calls inside
  // gRPC's transport, ahead of every other client's; 100 is RFC 9113's recommended minimum.
  // Default: 100.
  int max_concurrent_streams = 100;
  // A connection with no call for this long is closed (GOAWAY); this also closes connections
  // that never send anything. 0: never. Default: 5 minutes.
  std::chrono::milliseconds max_connection_idle = std::chrono::minutes(5);
  // Memory gRPC may use for its buffers (grpc::ResourceQuota); under pressure it reads less and,
  // on its own listener, drops new connections. Default: 256 MiB.
  size_t memory_quota_bytes = size_t{256} << 20;
};

struct GrpcServerStats {
  // Over its services (GrpcService::CallStats()): calls in flight now (waiting for their turn,
  // deciding, or waiting for the store).
  size_t in_flight = 0;
  // Calls answered RESOURCE_EXHAUSTED because `max_in_flight` were in flight.
  uint64_t rejected_in_flight = 0;
  // Calls answered RESOURCE_EXHAUSTED because their connection held its share of them.
  uint64_t rejected_connection_share = 0;
  // Calls whose bytes were not a RateLimitRequest.
  uint64_t unparsable_requests = 0;
  // The listener's counters, when sluiced accepts the connections itself; else zeros.
  ::sluice::net::ListenerStats listener{};
  // Connections closed for sending nothing within `first_bytes_timeout`.
  uint64_t silent_closed = 0;
};

class GrpcServer {
 public:
  // Serves `services` (at least one), which must outlive the server.
  GrpcServer(GrpcServerOptions options, std::vector<GrpcService*> services);
  // Serves `service` alone, through an RlsGrpcService of its own bounded by
  // `options.max_in_flight`. `service` must outlive the server.
  GrpcServer(GrpcServerOptions options, RateLimitService& service);
  GrpcServer(std::string address, RateLimitService& service)
      : GrpcServer(GrpcServerOptions{.address = std::move(address)}, service) {}
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;
  ~GrpcServer();

  // Binds the address and starts serving (health SERVING); Unavailable when it cannot listen,
  // InvalidArgument when a TLS file cannot be read.
  absl::Status Start();
  // Stops accepting and waits (bounded) for calls in flight. Idempotent.
  void Stop();
  // Sets grpc.health.v1.Health's answer. No-op before Start().
  void SetServing(bool serving);
  int port() const { return port_; }

  // GrpcServer::ListenerHealth()
  //
  // Unavailable before Start() and after Stop(), and when the listener sluiced runs stopped
  // accepting (TcpListener::Health()); OK otherwise, including whenever gRPC listens itself
  // (then a dead listener goes unnoticed, see above).
  absl::Status ListenerHealth() const;

  GrpcServerStats Stats() const;

 private:
  struct Impl;
  absl::Status StartNghttp2();
  GrpcServerOptions options_;
  std::unique_ptr<RlsGrpcService> owned_rls_;  // Only for the RateLimitService constructors.
  const std::vector<GrpcService*> services_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_GRPC_SERVER_H_
