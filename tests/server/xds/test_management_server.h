// TestManagementServer: an xDS management server of our own for the xDS client's tests, on gRPC
// C++ (AggregatedDiscoveryService, State of the World), started in-process on a loopback port.
//
// Push() sets the state of the world: every open stream is sent it, and each new stream is sent
// the latest one after its first request. Every request received is recorded with its stream's
// number and gRPC metadata, so tests can see the node, ACKs and NACKs. Stop() ends every stream
// (as a management server going away does); Start() again listens on the same port.
//
// Example:
//   TestManagementServer server;
//   ASSERT_TRUE(server.Start().ok());
//   server.Push(XdsResponse("v1", {Resource("a", "edge", ...)}));
//   ASSERT_TRUE(server.WaitFor([](const auto& r) { return r.size() >= 2; }, 10s));
//
// Thread safety: thread-safe.
#ifndef SLUICE_TESTS_SERVER_XDS_TEST_MANAGEMENT_SERVER_H_
#define SLUICE_TESTS_SERVER_XDS_TEST_MANAGEMENT_SERVER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "envoy/service/discovery/v3/discovery.grpc.pb.h"
#include "ratelimit/config/ratelimit/v3/rls_conf.pb.h"
#include <grpcpp/grpcpp.h>

namespace sluice::testing {

struct RecordedRequest {
  int stream = 0;  // 1 for the first stream the server saw, then 2, ...
  ::envoy::service::discovery::v3::DiscoveryRequest request;
  std::multimap<std::string, std::string> metadata;  // the stream's gRPC metadata
};

struct ManagementServerTls {
  std::string cert_file;
  std::string key_file;
  // Set: client certificates signed by this CA are required.
  std::string client_ca_file;
};

class TestManagementServer {
 public:
  explicit TestManagementServer(std::optional<ManagementServerTls> tls = std::nullopt);
  TestManagementServer(const TestManagementServer&) = delete;
  TestManagementServer& operator=(const TestManagementServer&) = delete;
  ~TestManagementServer();

  // Listens on 127.0.0.1: the port of the last Start(), else a free one.
  absl::Status Start();
  // Ends every stream and stops listening; the recorded requests and the last push stay.
  void Stop();
  int port() const;
  std::string address() const { return "127.0.0.1:" + std::to_string(port()); }

  // Sends `response` (its nonce set here, "n1", "n2", ...) to every stream, now and later.
  void Push(::envoy::service::discovery::v3::DiscoveryResponse response);
  std::vector<RecordedRequest> Requests() const;
  // Waits until `done(Requests())` holds; false after `timeout`.
  bool WaitFor(const std::function<bool(const std::vector<RecordedRequest>&)>& done,
               std::chrono::milliseconds timeout) const;

 private:
  class Service;
  const std::optional<ManagementServerTls> tls_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// A resource: `name`, `domain` and `descriptors`.
::ratelimit::config::ratelimit::v3::RateLimitConfig RateLimitResource(
    const std::string& name, const std::string& domain,
    std::vector<::ratelimit::config::ratelimit::v3::RateLimitDescriptor> descriptors);
// A descriptor `key` limited to `requests` per `unit`.
::ratelimit::config::ratelimit::v3::RateLimitDescriptor LimitedDescriptor(
    const std::string& key, uint32_t requests,
    ::ratelimit::config::ratelimit::v3::RateLimitUnit unit =
        ::ratelimit::config::ratelimit::v3::SECOND);
// A response of `version` holding `resources`.
::envoy::service::discovery::v3::DiscoveryResponse XdsResponse(
    const std::string& version,
    const std::vector<::ratelimit::config::ratelimit::v3::RateLimitConfig>& resources);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SERVER_XDS_TEST_MANAGEMENT_SERVER_H_
