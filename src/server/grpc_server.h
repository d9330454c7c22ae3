// GrpcServer: envoy.service.ratelimit.v3.RateLimitService over gRPC's callback API.
//
// Each ShouldRateLimit call is handed to the RateLimitService and finished when the (possibly
// asynchronous) store answers, so no gRPC thread waits on Redis. A request the service rejects is
// INVALID_ARGUMENT; a store failure with no failure policy is UNAVAILABLE, so that Envoy's own
// failure_mode_deny decides.
//
// Thread safety: Start() and Stop() from one thread.
#ifndef SLUICE_SERVER_GRPC_SERVER_H_
#define SLUICE_SERVER_GRPC_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"

#include "src/server/rate_limit_service.h"

namespace sluice::server {

class GrpcServer {
 public:
  // `service` must outlive the server.
  GrpcServer(std::string address, RateLimitService& service);
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;
  ~GrpcServer();

  // Binds `address` ("host:port"; port 0 picks one) and starts serving; Unavailable when it cannot.
  absl::Status Start();
  // Stops accepting and waits (bounded) for calls in flight. Idempotent.
  void Stop();
  int port() const { return port_; }

 private:
  struct Impl;
  std::string address_;
  RateLimitService& service_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_SERVER_H_
