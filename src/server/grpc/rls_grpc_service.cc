#include "src/server/grpc/rls_grpc_service.h"

#include <atomic>
#include <cstdint>
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

#include "src/server/grpc/fair_scheduler.h"
#include "src/server/grpc/rls_proto.h"
#include "src/util/log_throttle.h"

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

// What a call keeps when it waits for its turn (FairScheduler): its bytes and its caller's name.
struct KeptCall {
  absl::AnyInvocable<bool(RateLimitRequest&)> parse;
  absl::AnyInvocable<std::string()> peer;
};

// What both engines do with one ShouldRateLimit call: the bounds of calls in flight (overall and
// per connection), the turn among connections, the parse, the service.
class ShouldRateLimitCalls {
 public:
  using Done = absl::AnyInvocable<void(absl::StatusOr<RateLimitResponse>) &&>;

  ShouldRateLimitCalls(RateLimitService& service, const RlsGrpcServiceOptions& options)
      : service_(service),
        max_in_flight_(options.max_in_flight),
        scheduler_({.max_in_flight = options.max_in_flight, .threads = options.threads}) {}

  // A call on `connection` (a name unique among the open connections). `parse` fills the request
  // from the call's `size` bytes and says whether they were one; `keep` makes what the call needs
  // when it runs later, on another thread; `peer` names the caller in the log line about bytes that
  // were not a request.
  void Call(std::string_view connection, size_t size,
            absl::FunctionRef<bool(RateLimitRequest&)> parse, absl::FunctionRef<KeptCall()> keep,
            absl::FunctionRef<std::string()> peer, Done done) {
    FairScheduler::Ticket ticket;
    // Before the request is read: a refused call costs no parse.
    if (const FairScheduler::Refusal refusal = scheduler_.Admit(connection, ticket);
        refusal != FairScheduler::Refusal::kNone) {
      return Refuse(refusal, std::move(done));
    }
    scheduler_.Run(
        ticket, size, [&] { Decide(ticket, parse, size, peer, std::move(done)); },
        [&]() -> FairScheduler::Task {
          return [this, ticket, size, kept = keep(), done = std::move(done)]() mutable {
            Decide(
                ticket, [&](RateLimitRequest& request) { return kept.parse(request); }, size,
                [&] { return kept.peer(); }, std::move(done));
          };
        });
  }

  // Waits up to `bound` until no call is in flight; false if some still are. After true, no
  // answer touches this object again (the nghttp2 engine's Stop() may return while the store still
  // holds calls whose clients went away).
  bool WaitIdle(std::chrono::milliseconds bound) { return scheduler_.WaitIdle(bound); }

  GrpcCallStats Stats() const {
    const FairSchedulerStats s = scheduler_.Stats();
    return GrpcCallStats{.in_flight = s.in_flight,
                         .rejected_in_flight = s.refused_budget,
                         .rejected_connection_share = s.refused_share,
                         .unparsable_requests = unparsable_.load(),
                         .queued = s.queued,
                         .ran_queued = s.ran_queued};
  }

 private:
  void Refuse(FairScheduler::Refusal refusal, Done done) {
    const GrpcCallStats stats = Stats();
    if (refusal == FairScheduler::Refusal::kBudget) {
      if (internal::LogPermit p = flood_log_.Acquire(); p.log) {
        spdlog::warn(
            "grpc: {} decisions in flight, the limit; answering RESOURCE_EXHAUSTED ({} so "
            "far){}",
            max_in_flight_, stats.rejected_in_flight, internal::SuppressedNote(p.suppressed));
      }
      std::move(done)(absl::ResourceExhaustedError(
          absl::StrCat("sluiced: ", max_in_flight_, " decisions in flight; try again")));
      return;
    }
    if (internal::LogPermit p = share_log_.Acquire(); p.log) {
      spdlog::warn(
          "grpc: a connection holds its share of the {} decisions in flight; answering its "
          "further calls RESOURCE_EXHAUSTED ({} so far){}",
          max_in_flight_, stats.rejected_connection_share, internal::SuppressedNote(p.suppressed));
    }
    std::move(done)(absl::ResourceExhaustedError(
        "sluiced: this connection holds its share of the decisions in flight; try again"));
  }

  void Decide(FairScheduler::Ticket ticket, absl::FunctionRef<bool(RateLimitRequest&)> parse,
              size_t size, absl::FunctionRef<std::string()> peer, Done done) {
    RateLimitRequest request;
    if (!parse(request)) {
      unparsable_.fetch_add(1);
      if (internal::LogPermit p = parse_log_.Acquire(); p.log) {
        spdlog::warn("grpc: ShouldRateLimit from {}: {} bytes that are not a RateLimitRequest{}",
                     peer(), size, internal::SuppressedNote(p.suppressed));
      }
      std::move(done)(absl::InvalidArgumentError("request is not a valid RateLimitRequest"));
      scheduler_.Release(ticket);
      return;
    }
    ShouldRateLimit(
        service_, request,
        [this, ticket, done = std::move(done)](absl::StatusOr<RateLimitResponse> result) mutable {
          std::move(done)(std::move(result));
          scheduler_.Release(ticket);  // Last: Stop() may free this once none is in flight.
        });
  }

  RateLimitService& service_;
  const size_t max_in_flight_;
  FairScheduler scheduler_;
  std::atomic<uint64_t> unparsable_{0};
  internal::LogThrottle flood_log_;  // One line a second each.
  internal::LogThrottle share_log_;
  internal::LogThrottle parse_log_;
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
    // The request's bytes, the context and the response buffer stay valid until the reactor
    // finishes, so a call that waits for its turn keeps only pointers. Deserialize() consumes its
    // buffer; a copy shares the slices.
    auto parse = [request_bytes](RateLimitRequest& request) {
      grpc::ByteBuffer copy(*request_bytes);
      return grpc::SerializationTraits<RateLimitRequest>::Deserialize(&copy, &request).ok();
    };
    auto peer = [context] { return PeerOf(*context); };
    // gRPC names each connection by its peer: "ipv4:10.0.0.1:5000", or "fd:N" for one sluiced
    // accepted and handed over (a descriptor is one connection's while it is open).
    calls_.Call(
        context->peer(), request_bytes->Length(), parse,
        [&] { return KeptCall{.parse = parse, .peer = peer}; }, peer,
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
  Impl(RateLimitService& service, const RlsGrpcServiceOptions& options)
      : calls(service, options), callback_service(calls) {}
  ShouldRateLimitCalls calls;
  CallbackService callback_service;
};

RlsGrpcService::RlsGrpcService(RateLimitService& service, RlsGrpcServiceOptions options)
    : impl_(std::make_unique<Impl>(service, options)) {}

RlsGrpcService::~RlsGrpcService() = default;

grpc::Service& RlsGrpcService::GrpcCppService() { return impl_->callback_service; }

void RlsGrpcService::AddH2Methods(absl::flat_hash_map<std::string, h2::UnaryMethod>& methods) {
  ShouldRateLimitCalls& calls = impl_->calls;
  methods["/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"] =
      [&calls](std::string_view bytes, const std::string& peer, h2::Responder respond) {
        // The engine names each connection by its peer address, one per connection.
        calls.Call(
            peer, bytes.size(),
            [bytes](RateLimitRequest& request) {
              return request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
            },
            [&] {
              // The bytes are the engine's only during this call.
              return KeptCall{
                  .parse = [kept = std::string(bytes)](
                               RateLimitRequest& request) { return request.ParseFromString(kept); },
                  .peer = [peer] { return peer; }};
            },
            [&peer] { return peer; },
            [respond = std::move(respond)](absl::StatusOr<RateLimitResponse> result) mutable {
              if (!result.ok()) return std::move(respond)(result.status());
              std::move(respond)(result->SerializeAsString());
            });
      };
}

bool RlsGrpcService::WaitIdle(std::chrono::milliseconds bound) {
  return impl_->calls.WaitIdle(bound);
}

GrpcCallStats RlsGrpcService::CallStats() const { return impl_->calls.Stats(); }

}  // namespace sluice::server
