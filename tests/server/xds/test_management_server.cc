#include "tests/server/xds/test_management_server.h"

#include <fstream>
#include <iterator>
#include <thread>
#include <utility>

namespace sluice::testing {
namespace {

namespace discovery = ::envoy::service::discovery::v3;
namespace rlc = ::ratelimit::config::ratelimit::v3;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

class TestManagementServer::Service final : public discovery::AggregatedDiscoveryService::Service {
 public:
  grpc::Status StreamAggregatedResources(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<discovery::DiscoveryResponse, discovery::DiscoveryRequest>* stream)
      override {
    std::multimap<std::string, std::string> metadata;
    for (const auto& [key, value] : context->client_metadata()) {
      metadata.emplace(std::string(key.data(), key.size()),
                       std::string(value.data(), value.size()));
    }
    int id = 0;
    {
      std::lock_guard lock(mu_);
      id = ++streams_;
    }
    bool reader_done = false;
    bool first_request = false;
    // One thread reads (and records), this one writes: a sync stream allows one of each.
    std::thread reader([&] {
      discovery::DiscoveryRequest request;
      while (stream->Read(&request)) {
        std::lock_guard lock(mu_);
        requests_.push_back(
            RecordedRequest{.stream = id, .request = request, .metadata = metadata});
        first_request = true;
        changed_.notify_all();
      }
      std::lock_guard lock(mu_);
      reader_done = true;
      changed_.notify_all();
    });
    uint64_t sent = 0;
    for (;;) {
      discovery::DiscoveryResponse response;
      {
        std::unique_lock lock(mu_);
        changed_.wait(
            lock, [&] { return stopping_ || reader_done || (first_request && pushed_ > sent); });
        if (stopping_ || reader_done) break;
        sent = pushed_;
        response = latest_;
        response.set_nonce("n" + std::to_string(++nonces_));
      }
      if (!stream->Write(response)) break;
    }
    context->TryCancel();
    reader.join();
    return grpc::Status::OK;
  }

  void Push(discovery::DiscoveryResponse response) {
    std::lock_guard lock(mu_);
    latest_ = std::move(response);
    ++pushed_;
    changed_.notify_all();
  }
  void SetStopping(bool stopping) {
    std::lock_guard lock(mu_);
    stopping_ = stopping;
    changed_.notify_all();
  }
  std::vector<RecordedRequest> Requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  bool WaitFor(const std::function<bool(const std::vector<RecordedRequest>&)>& done,
               std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return done(requests_); });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  bool stopping_ = false;
  int streams_ = 0;
  uint64_t pushed_ = 0;
  uint64_t nonces_ = 0;
  discovery::DiscoveryResponse latest_;
  std::vector<RecordedRequest> requests_;
};

TestManagementServer::TestManagementServer(std::optional<ManagementServerTls> tls)
    : tls_(std::move(tls)), service_(std::make_unique<Service>()) {}

TestManagementServer::~TestManagementServer() { Stop(); }

absl::Status TestManagementServer::Start() {
  service_->SetStopping(false);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls_.has_value()) {
    grpc::SslServerCredentialsOptions ssl(
        tls_->client_ca_file.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                     : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_key_cert_pairs.push_back({ReadAll(tls_->key_file), ReadAll(tls_->cert_file)});
    if (!tls_->client_ca_file.empty()) ssl.pem_root_certs = ReadAll(tls_->client_ca_file);
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port_), credentials, &bound);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || bound == 0) {
    return absl::UnavailableError("the management server could not listen on port " +
                                  std::to_string(port_));
  }
  port_ = bound;
  return absl::OkStatus();
}

void TestManagementServer::Stop() {
  if (server_ == nullptr) return;
  service_->SetStopping(true);
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  server_->Wait();
  server_.reset();
}

int TestManagementServer::port() const { return port_; }

void TestManagementServer::Push(discovery::DiscoveryResponse response) {
  service_->Push(std::move(response));
}

std::vector<RecordedRequest> TestManagementServer::Requests() const { return service_->Requests(); }

bool TestManagementServer::WaitFor(
    const std::function<bool(const std::vector<RecordedRequest>&)>& done,
    std::chrono::milliseconds timeout) const {
  return service_->WaitFor(done, timeout);
}

rlc::RateLimitConfig RateLimitResource(const std::string& name, const std::string& domain,
                                       std::vector<rlc::RateLimitDescriptor> descriptors) {
  rlc::RateLimitConfig config;
  config.set_name(name);
  config.set_domain(domain);
  for (auto& d : descriptors) *config.add_descriptors() = std::move(d);
  return config;
}

rlc::RateLimitDescriptor LimitedDescriptor(const std::string& key, uint32_t requests,
                                           rlc::RateLimitUnit unit) {
  rlc::RateLimitDescriptor d;
  d.set_key(key);
  d.mutable_rate_limit()->set_unit(unit);
  d.mutable_rate_limit()->set_requests_per_unit(requests);
  return d;
}

discovery::DiscoveryResponse XdsResponse(const std::string& version,
                                         const std::vector<rlc::RateLimitConfig>& resources) {
  discovery::DiscoveryResponse response;
  response.set_version_info(version);
  response.set_type_url("type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig");
  for (const auto& r : resources) response.add_resources()->PackFrom(r);
  return response;
}

}  // namespace sluice::testing
