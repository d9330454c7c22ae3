#include "src/server/grpc/rls_grpc_service.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "spdlog/spdlog.h"
#include <boost/asio/ip/tcp.hpp>
#include <grpcpp/grpcpp.h>
#include <sys/socket.h>

#include "src/server/grpc/rls_proto.h"
#include "src/util/log_throttle.h"
#include "src/util/mutex.h"

namespace sluice::server {
namespace {

using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;

grpc::Status ToGrpcStatus(const absl::Status& s) {
  return {static_cast<grpc::StatusCode>(s.code()), std::string(s.message())};
}

// The caller as gRPC names it ("ipv4:10.0.0.1:5000"), except that a connection sluiced accepted
// and handed over by descriptor is named "fd:N" by gRPC: its address is then read from the socket,
// which is open while one of its calls runs.
std::string PeerOf(const grpc::CallbackServerContext& context) {
  std::string peer = context.peer();
  int fd = -1;
  if (!peer.starts_with("fd:") || !absl::SimpleAtoi(absl::string_view(peer).substr(3), &fd)) {
    return peer;
  }
  boost::asio::ip::tcp::endpoint endpoint;
  auto size = static_cast<socklen_t>(endpoint.capacity());
  if (::getpeername(fd, endpoint.data(), &size) != 0) return peer;
  endpoint.resize(size);
  return absl::StrCat(endpoint.address().is_v4() ? "ipv4:" : "ipv6:[",
                      endpoint.address().to_string(),
                      endpoint.address().is_v4() ? ":" : "]:", endpoint.port());
}

// What both engines do with one ShouldRateLimit call: the in-flight bound, the parse, the service.
class ShouldRateLimitCalls {
 public:
  using Done = absl::AnyInvocable<void(absl::StatusOr<RateLimitResponse>) &&>;

  ShouldRateLimitCalls(RateLimitService& service, size_t max_in_flight)
      : service_(service), max_in_flight_(max_in_flight) {}

  // `parse` fills the request from the call's `size` bytes and says whether they were one;
  // `peer` names the caller in the log line about bytes that were not.
  void Call(absl::FunctionRef<bool(RateLimitRequest&)> parse, size_t size,
            absl::FunctionRef<std::string()> peer, Done done) {
    // Counted before anything else, so that the bound holds however many calls arrive at once.
    if (in_flight_.fetch_add(1) >= max_in_flight_) {
      Release();
      const uint64_t rejected = rejected_in_flight_.fetch_add(1) + 1;
      if (internal::LogPermit p = flood_log_.Acquire(); p.log) {
        spdlog::warn(
            "grpc: {} decisions in flight, the limit; answering RESOURCE_EXHAUSTED ({} so "
            "far){}",
            max_in_flight_, rejected, internal::SuppressedNote(p.suppressed));
      }
      std::move(done)(absl::ResourceExhaustedError(
          absl::StrCat("sluiced: ", max_in_flight_, " decisions in flight; try again")));
      return;
    }
    RateLimitRequest request;
    if (!parse(request)) {
      Release();
      unparsable_.fetch_add(1);
      if (internal::LogPermit p = parse_log_.Acquire(); p.log) {
        spdlog::warn("grpc: ShouldRateLimit from {}: {} bytes that are not a RateLimitRequest{}",
                     peer(), size, internal::SuppressedNote(p.suppressed));
      }
      std::move(done)(absl::InvalidArgumentError("request is not a valid RateLimitRequest"));
      return;
    }
    ShouldRateLimit(
        service_, request,
        [this, done = std::move(done)](absl::StatusOr<RateLimitResponse> result) mutable {
          std::move(done)(std::move(result));
          Release();  // Last: Stop() may free this once none is in flight.
        });
  }

  // Waits up to `bound` until no decision is in flight; false if some still are. After true, no
  // answer touches this object again (the nghttp2 engine's Stop() may return while the store still
  // holds calls whose clients went away).
  bool WaitIdle(std::chrono::milliseconds bound) {
    std::unique_lock lock(idle_mu_);
    return idle_.wait_for(
        lock, bound, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_.load() == 0; });
  }

  size_t in_flight() const { return in_flight_.load(); }
  uint64_t rejected_in_flight() const { return rejected_in_flight_.load(); }
  uint64_t unparsable() const { return unparsable_.load(); }

 private:
  RateLimitService& service_;
  const size_t max_in_flight_;
  std::atomic<size_t> in_flight_{0};
  std::atomic<uint64_t> rejected_in_flight_{0};
  std::atomic<uint64_t> unparsable_{0};
  internal::LogThrottle flood_log_;  // One line a second each.
  internal::LogThrottle parse_log_;
  // Under the lock, so that WaitIdle(), once it sees none in flight, is the last to touch this.
  void Release() {
    internal::MutexLock lock(&idle_mu_);
    if (in_flight_.fetch_sub(1) == 1) idle_.notify_all();
  }
  internal::Mutex idle_mu_;
  std::condition_variable_any idle_;
};

// ShouldRateLimit registered raw: the request arrives as bytes and is parsed here, so bytes that
// are not a RateLimitRequest are the caller's error (INVALID_ARGUMENT); gRPC 1.51's generated
// handler answers a failed parse UNIMPLEMENTED, with no message.
class CallbackService final
    : public envoy::service::ratelimit::v3::RateLimitService::WithRawCallbackMethod_ShouldRateLimit<
          envoy::service::ratelimit::v3::RateLimitService::Service> {
 public:
  explicit CallbackService(ShouldRateLimitCalls& calls) : calls_(calls) {}

  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request_bytes,
                                            grpc::ByteBuffer* response_bytes) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    // Deserialize() consumes its buffer; a copy shares the slices.
    grpc::ByteBuffer copy(*request_bytes);
    calls_.Call(
        [&copy](RateLimitRequest& request) {
          return grpc::SerializationTraits<RateLimitRequest>::Deserialize(&copy, &request).ok();
        },
        copy.Length(), [context] { return PeerOf(*context); },
        [reactor, response_bytes](absl::StatusOr<RateLimitResponse> result) {
          if (!result.ok()) {
            reactor->Finish(ToGrpcStatus(result.status()));
            return;
          }
          bool own_buffer = false;
          reactor->Finish(grpc::SerializationTraits<RateLimitResponse>::Serialize(
              *result, response_bytes, &own_buffer));
        });
    return reactor;
  }

 private:
  ShouldRateLimitCalls& calls_;
};

}  // namespace

struct RlsGrpcService::Impl {
  Impl(RateLimitService& service, size_t max_in_flight)
      : calls(service, max_in_flight), callback_service(calls) {}
  ShouldRateLimitCalls calls;
  CallbackService callback_service;
};

RlsGrpcService::RlsGrpcService(RateLimitService& service, RlsGrpcServiceOptions options)
    : impl_(std::make_unique<Impl>(service, options.max_in_flight)) {}

RlsGrpcService::~RlsGrpcService() = default;

grpc::Service& RlsGrpcService::GrpcCppService() { return impl_->callback_service; }

void RlsGrpcService::AddH2Methods(absl::flat_hash_map<std::string, h2::UnaryMethod>& methods) {
  ShouldRateLimitCalls& calls = impl_->calls;
  methods["/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"] =
      [&calls](std::string_view bytes, const std::string& peer, h2::Responder respond) {
        calls.Call(
            [bytes](RateLimitRequest& request) {
              return request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
            },
            bytes.size(), [&peer] { return peer; },
            [respond = std::move(respond)](absl::StatusOr<RateLimitResponse> result) mutable {
              if (!result.ok()) return std::move(respond)(result.status());
              std::move(respond)(result->SerializeAsString());
            });
      };
}

bool RlsGrpcService::WaitIdle(std::chrono::milliseconds bound) {
  return impl_->calls.WaitIdle(bound);
}

GrpcCallStats RlsGrpcService::CallStats() const {
  return GrpcCallStats{.in_flight = impl_->calls.in_flight(),
                       .rejected_in_flight = impl_->calls.rejected_in_flight(),
                       .unparsable_requests = impl_->calls.unparsable()};
}

}  // namespace sluice::server
