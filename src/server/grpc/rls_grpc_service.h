// RlsGrpcService: envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, the rate limit
// service as a GrpcService (grpc_service.h), on both gRPC engines.
//
// Each call is handed to the RateLimitService (through ShouldRateLimit(), rls_proto.h) and
// finished when the (possibly asynchronous) store answers, so no gRPC thread waits on Redis. A
// request the service rejects is INVALID_ARGUMENT; a store failure with no failure policy is
// UNAVAILABLE, so that Envoy's own failure_mode_deny decides. The method is registered raw and
// parsed here: bytes that are not a RateLimitRequest are INVALID_ARGUMENT, logged at most once a
// second. More than `max_in_flight` calls in flight, or a connection holding its share of them:
// RESOURCE_EXHAUSTED at once, before the request is parsed; while other connections' calls run or
// wait, a call waits for its connection's turn (fair_scheduler.h: a flood on some connections
// does not starve the others).
//
// Example:
//   RlsGrpcService rls(service, {.max_in_flight = 10'000});
//   GrpcServer server(GrpcServerOptions{.address = "127.0.0.1:8081"}, {&rls});
//
// Thread safety: thread-safe.
#ifndef SLUICE_SERVER_GRPC_RLS_GRPC_SERVICE_H_
#define SLUICE_SERVER_GRPC_RLS_GRPC_SERVICE_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

#include "src/server/grpc/grpc_service.h"
#include "src/server/rls/rate_limit_service.h"

namespace sluice::server {

struct RlsGrpcServiceOptions {
  // Calls in flight (waiting for their turn, deciding, or waiting for the store) beyond which a
  // call is answered RESOURCE_EXHAUSTED at once; each connection gets a share of them
  // (fair_scheduler.h). Default: 10,000.
  size_t max_in_flight = 10'000;
  // Threads that run the calls which wait for their connection's turn; 0: one per hardware
  // thread but one, at least 1 and at most 8 (FairSchedulerOptions). Default: 0.
  int threads = 0;
};

class RlsGrpcService final : public GrpcService {
 public:
  // `service` must outlive this object.
  RlsGrpcService(RateLimitService& service, RlsGrpcServiceOptions options);
  RlsGrpcService(const RlsGrpcService&) = delete;
  RlsGrpcService& operator=(const RlsGrpcService&) = delete;
  ~RlsGrpcService() override;

  // "ratelimit", the name the reference registers.
  std::string_view health_name() const override { return "ratelimit"; }
  grpc::Service& GrpcCppService() override;
  void AddH2Methods(absl::flat_hash_map<std::string, h2::UnaryMethod>& methods) override;
  bool WaitIdle(std::chrono::milliseconds bound) override;
  GrpcCallStats CallStats() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_RLS_GRPC_SERVICE_H_
