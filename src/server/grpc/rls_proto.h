// The gRPC and /json edge of the rate limit service: envoy.service.ratelimit.v3 messages to and
// from the protobuf-free RlsRequest and RlsResponse (src/server/rls/rls_types.h), and
// ShouldRateLimit(), RateLimitService::Decide() on the protobuf messages. The service itself knows
// no protobuf; both the gRPC engines and POST /json call it through here.
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(RlsRequest request, FromProto(proto_request));
//   ... RlsResponse response = ...;
//   RateLimitResponse proto_response = ToProto(response);
//   ShouldRateLimit(service, proto_request, [](absl::StatusOr<RateLimitResponse> r) { ... });
//
// Thread safety: FromProto() and ToProto() are pure functions; ShouldRateLimit() is as
// thread-safe as the service.
#ifndef SLUICE_SERVER_GRPC_RLS_PROTO_H_
#define SLUICE_SERVER_GRPC_RLS_PROTO_H_

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "envoy/service/ratelimit/v3/rls.pb.h"

#include "src/server/rls/rate_limit_service.h"
#include "src/server/rls/rls_types.h"

namespace sluice::server {

using RateLimitRequest = envoy::service::ratelimit::v3::RateLimitRequest;
using RateLimitResponse = envoy::service::ratelimit::v3::RateLimitResponse;

// FromProto()
//
// Returns the request `proto` describes, viewing its strings (`proto` must outlive the result),
// or InvalidArgument for a `limit` override with an unknown unit.
absl::StatusOr<RlsRequest> FromProto(const RateLimitRequest& proto);

// ToProto()
//
// Returns `response` as a RateLimitResponse.
RateLimitResponse ToProto(const RlsResponse& response);

using ShouldRateLimitCallback = absl::AnyInvocable<void(absl::StatusOr<RateLimitResponse>) &&>;

// ShouldRateLimit()
//
// Decides `request` on `service` (RateLimitService::Decide()) and completes `done` exactly once
// with the protobuf response, or InvalidArgument for a request FromProto() refuses (reported to
// the service's observer as a malformed request), or the error Decide() gives. `request` may go
// as soon as ShouldRateLimit() returns.
void ShouldRateLimit(RateLimitService& service, const RateLimitRequest& request,
                     ShouldRateLimitCallback done);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_RLS_PROTO_H_
