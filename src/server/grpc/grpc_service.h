// GrpcService: one gRPC service that GrpcServer (grpc_server.h) serves, on either engine. The
// server owns the listener, TLS, the connection bounds and grpc.health.v1; a service brings its
// methods. GrpcServer takes a list of them, so a second service (RLQS, a bidirectional stream)
// is added beside the rate limit service (rls_grpc_service.h) without touching it.
//
// Example:
//   RlsGrpcService rls(service, {.max_in_flight = 10'000});
//   GrpcServer server(GrpcServerOptions{.address = "127.0.0.1:8081"}, {&rls});
//
// Thread safety: implementations are thread-safe; GrpcServer calls them from its start and stop
// thread and from the engines' threads.
#ifndef SLUICE_SERVER_GRPC_GRPC_SERVICE_H_
#define SLUICE_SERVER_GRPC_GRPC_SERVICE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

#include "src/server/grpc/h2/grpc_h2_server.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace sluice::server {

// A service's call counters, as GrpcServer::Stats() reports them (summed over its services).
struct GrpcCallStats {
  // Calls waiting for their answer now.
  size_t in_flight = 0;
  // Calls answered RESOURCE_EXHAUSTED because the service's bound of calls in flight was reached.
  uint64_t rejected_in_flight = 0;
  // Calls answered RESOURCE_EXHAUSTED because their connection held its share of that bound.
  uint64_t rejected_connection_share = 0;
  // Calls whose bytes were not the request message.
  uint64_t unparsable_requests = 0;
  // Calls waiting for their connection's turn now, and calls that ran after such a wait.
  size_t queued = 0;
  uint64_t ran_queued = 0;
};

class GrpcService {
 public:
  GrpcService() = default;
  GrpcService(const GrpcService&) = delete;
  GrpcService& operator=(const GrpcService&) = delete;
  virtual ~GrpcService() = default;

  // The name grpc.health.v1.Health also answers for, beside the server's ""; empty for none.
  virtual std::string_view health_name() const = 0;
  // The service as gRPC C++ registers it (GrpcEngine::kGrpc); owned by this object, which must
  // outlive the server that registers it.
  virtual grpc::Service& GrpcCppService() = 0;
  // Adds its methods, by path ("/package.Service/Method"), to the nghttp2 engine's table
  // (GrpcEngine::kNghttp2).
  virtual void AddH2Methods(absl::flat_hash_map<std::string, h2::UnaryMethod>& methods) = 0;
  // Waits up to `bound` until none of its calls is in flight; false if some still are. After
  // true, no answer touches the service's call state again.
  virtual bool WaitIdle(std::chrono::milliseconds bound) = 0;
  virtual GrpcCallStats CallStats() const = 0;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_GRPC_SERVICE_H_
