// gRPC calls the server tests make as Envoy would: a ShouldRateLimit decision reduced to an
// HTTP-like status, and grpc.health.v1.Health/Check. Header-only; a test using it links
// sluice_proto (and through it gRPC).
#ifndef SLUICE_TESTS_TESTING_GRPC_PROBES_H_
#define SLUICE_TESTS_TESTING_GRPC_PROBES_H_

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

namespace sluice::testing {

// An insecure channel to 127.0.0.1:`port`.
inline std::shared_ptr<grpc::Channel> LoopbackChannel(int port) {
  return grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                             grpc::InsecureChannelCredentials());
}

// ShouldRateLimit for one descriptor {key: value} of `domain` on 127.0.0.1:`port`, as Envoy asks:
// 200 for OK, 429 for OVER_LIMIT, -1 on a gRPC error.
inline int GrpcDecisionStatus(int port, const std::string& domain, const std::string& key,
                              const std::string& value) {
  auto stub = envoy::service::ratelimit::v3::RateLimitService::NewStub(LoopbackChannel(port));
  envoy::service::ratelimit::v3::RateLimitRequest request;
  request.set_domain(domain);
  auto* entry = request.add_descriptors()->add_entries();
  entry->set_key(key);
  entry->set_value(value);
  envoy::service::ratelimit::v3::RateLimitResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!stub->ShouldRateLimit(&context, request, &response).ok()) return -1;
  return response.overall_code() == envoy::service::ratelimit::v3::RateLimitResponse::OVER_LIMIT
             ? 429
             : 200;
}

// grpc.health.v1.Health/Check for `service` ("" for the server), encoded by hand, since Debian's
// gRPC ships no health client stubs (HealthCheckRequest: 1 = service; HealthCheckResponse:
// 1 = status, SERVING 1, NOT_SERVING 2). Returns the status, or -(gRPC code) when the call fails.
inline int GrpcHealthStatus(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& service,
                            std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  std::string request_bytes;
  if (!service.empty()) {
    request_bytes.push_back(0x0a);
    request_bytes.push_back(static_cast<char>(service.size()));
    request_bytes += service;
  }
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  grpc::GenericStub stub(channel);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(status); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) return -static_cast<int>(status.error_code());
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return -100;
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes.size() == 2 && bytes[0] == 0x08 ? bytes[1] : 0;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_GRPC_PROBES_H_
