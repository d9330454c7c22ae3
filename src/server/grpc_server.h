// GrpcServer: envoy.service.ratelimit.v3.RateLimitService over gRPC's callback API, plus
// grpc.health.v1.Health.
//
// Each ShouldRateLimit call is handed to the RateLimitService and finished when the (possibly
// asynchronous) store answers, so no gRPC thread waits on Redis. A request the service rejects is
// INVALID_ARGUMENT; a store failure with no failure policy is UNAVAILABLE, so that Envoy's own
// failure_mode_deny decides. Health answers for the server ("") and for "ratelimit", the name the
// reference registers; SetServing() follows /healthcheck.
//
// Thread safety: Start() and Stop() from one thread; SetServing() from any.
#ifndef SLUICE_SERVER_GRPC_SERVER_H_
#define SLUICE_SERVER_GRPC_SERVER_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"

#include "src/server/rate_limit_service.h"

namespace sluice::server {

struct GrpcServerOptions {
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
};

class GrpcServer {
 public:
  // `service` must outlive the server.
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

 private:
  struct Impl;
  GrpcServerOptions options_;
  RateLimitService& service_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_SERVER_H_
