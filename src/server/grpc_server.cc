#include "src/server/grpc_server.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

namespace sluice::server {
namespace {

using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;

grpc::Status ToGrpcStatus(const absl::Status& s) {
  return {static_cast<grpc::StatusCode>(s.code()), std::string(s.message())};
}

class CallbackService final
    : public envoy::service::ratelimit::v3::RateLimitService::CallbackService {
 public:
  explicit CallbackService(RateLimitService& service) : service_(service) {}

  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* context,
                                            const RateLimitRequest* request,
                                            RateLimitResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    service_.ShouldRateLimit(*request,
                             [reactor, response](absl::StatusOr<RateLimitResponse> result) mutable {
                               if (!result.ok()) {
                                 reactor->Finish(ToGrpcStatus(result.status()));
                                 return;
                               }
                               *response = *std::move(result);
                               reactor->Finish(grpc::Status::OK);
                             });
    return reactor;
  }

 private:
  RateLimitService& service_;
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(absl::StrCat("grpc tls: cannot read ", path));
  }
  if (out.empty())
    return absl::InvalidArgumentError(absl::StrCat("grpc tls: empty or missing ", path));
  return out;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const GrpcServerOptions& o) {
  if (o.tls_cert_file.empty() && o.tls_key_file.empty()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadFile(o.tls_cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(o.tls_key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!o.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(o.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(RateLimitService& service) : callback_service(service) {}
  CallbackService callback_service;
  std::unique_ptr<grpc::Server> server;
};

GrpcServer::GrpcServer(GrpcServerOptions options, RateLimitService& service)
    : options_(std::move(options)), service_(service) {}

GrpcServer::~GrpcServer() { Stop(); }

absl::Status GrpcServer::Start() {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = Credentials(options_);
  if (!credentials.ok()) return credentials.status();
  impl_ = std::make_unique<Impl>(service_);
  // Process-wide, and read when a server is built: every server then serves grpc.health.v1.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.address, *credentials, &port_);
  builder.RegisterService(&impl_->callback_service);
  // Bounded request size: a descriptor set is small.
  builder.SetMaxReceiveMessageSize(1 << 20);
  if (options_.max_connection_age.count() > 0) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        static_cast<int>(std::min<int64_t>(options_.max_connection_age.count(), INT32_MAX)));
  }
  if (options_.max_connection_age_grace.count() > 0) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
        static_cast<int>(std::min<int64_t>(options_.max_connection_age_grace.count(), INT32_MAX)));
  }
  impl_->server = builder.BuildAndStart();
  // A Unix socket reports no port; it is listening when the server built.
  const bool unix_socket = options_.address.rfind("unix:", 0) == 0;
  if (impl_->server == nullptr || (port_ == 0 && !unix_socket)) {
    impl_.reset();
    return absl::UnavailableError(absl::StrCat("grpc: cannot listen on ", options_.address));
  }
  SetServing(true);
  return absl::OkStatus();
}

void GrpcServer::SetServing(bool serving) {
  if (impl_ == nullptr || impl_->server == nullptr) return;
  grpc::HealthCheckServiceInterface* health = impl_->server->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  health->SetServingStatus("ratelimit", serving);
}

void GrpcServer::Stop() {
  if (impl_ == nullptr || impl_->server == nullptr) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  impl_->server->Wait();
  impl_.reset();
}

}  // namespace sluice::server
