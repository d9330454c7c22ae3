// The gRPC and /json edge of the rate limit service: envoy.service.ratelimit.v3 messages to and
// from the protobuf-free RlsRequest and RlsResponse (rls_types.h).
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(RlsRequest request, FromProto(proto_request));
//   ... RlsResponse response = ...;
//   RateLimitResponse proto_response = ToProto(response);
//
// Thread safety: pure functions.
#ifndef SLUICE_SERVER_RLS_PROTO_H_
#define SLUICE_SERVER_RLS_PROTO_H_

#include "absl/status/statusor.h"
#include "envoy/service/ratelimit/v3/rls.pb.h"

#include "src/server/rls_types.h"

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

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_PROTO_H_
