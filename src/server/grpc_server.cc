#include "src/server/grpc_server.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include <grpcpp/grpcpp.h>

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

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(RateLimitService& service) : callback_service(service) {}
  CallbackService callback_service;
  std::unique_ptr<grpc::Server> server;
};

GrpcServer::GrpcServer(std::string address, RateLimitService& service)
    : address_(std::move(address)), service_(service) {}

GrpcServer::~GrpcServer() { Stop(); }

absl::Status GrpcServer::Start() {
  impl_ = std::make_unique<Impl>(service_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address_, grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(&impl_->callback_service);
  // Bounded request size: a descriptor set is small.
  builder.SetMaxReceiveMessageSize(1 << 20);
  impl_->server = builder.BuildAndStart();
  if (impl_->server == nullptr || port_ == 0) {
    impl_.reset();
    return absl::UnavailableError(absl::StrCat("grpc: cannot listen on ", address_));
  }
  return absl::OkStatus();
}

void GrpcServer::Stop() {
  if (impl_ == nullptr || impl_->server == nullptr) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  impl_->server->Wait();
  impl_.reset();
}

}  // namespace sluice::server
