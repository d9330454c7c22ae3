// The rate limit service's request and response, free of protobuf.
//
// envoy.service.ratelimit.v3's RateLimitRequest and RateLimitResponse carry more than a decision
// needs, and in protobuf's types. These are what RateLimitService decides on:
// src/server/grpc/rls_proto.h converts at the gRPC and /json edges, so the Envoy semantics
// (rls_plan.h, rls_executor.h, rls_evaluate.h) are written and tested without protobuf.
//
// Example:
//   RlsRequest request{.domain = "edge",
//                      .descriptors = {{.entries = {{"remote_address", "10.0.0.1"}}}}};
//   service.Decide(request, [](absl::StatusOr<RlsResponse> r) { ... });
//
// Thread safety: value types.
#ifndef SLUICE_SERVER_RLS_RLS_TYPES_H_
#define SLUICE_SERVER_RLS_RLS_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/config.h"

namespace sluice::server {

// A request-level limit (RateLimitDescriptor.limit): bypasses the config for its descriptor.
struct LimitOverride {
  uint32_t requests_per_unit = 0;
  RateLimitUnit unit = RateLimitUnit::kSecond;
  // The window is this many units long (Envoy 1.40's unit_multiplier; >= 1).
  uint32_t unit_multiplier = 1;
};

// One descriptor of a request. Non-owning: the entries view the caller's strings.
struct RlsDescriptor {
  std::vector<DescriptorEntry> entries{};
  // The descriptor's own hits_addend, when set (it wins even when 0).
  std::optional<uint64_t> hits_addend{};
  std::optional<LimitOverride> limit{};
  // Envoy's is_negative_hits: the hits are given back to the matched limits (a credit, never
  // below empty), and the descriptor is answered OK.
  bool is_negative_hits = false;
};

// A request. Non-owning: `domain` and the entries view the caller's strings, which must outlive
// the call that takes the request (the service copies what it keeps).
struct RlsRequest {
  std::string_view domain{};
  std::vector<RlsDescriptor> descriptors{};
  // The request's hits_addend; 0 means 1.
  uint32_t hits_addend = 0;
};

enum class RlsCode : uint8_t { kOk, kOverLimit };

// The limit a descriptor status reports (RateLimitResponse.RateLimit).
struct RlsLimit {
  std::string name{};
  uint32_t requests_per_unit = 0;
  RateLimitUnit unit = RateLimitUnit::kSecond;
  // The window is `unit_multiplier` units long. Default: 1.
  uint32_t unit_multiplier = 1;
};

// One descriptor's answer (RateLimitResponse.DescriptorStatus).
struct RlsStatus {
  RlsCode code = RlsCode::kOk;
  // Empty when no limit applies (unmatched, unlimited, replaced).
  std::optional<RlsLimit> current_limit{};
  uint32_t limit_remaining = 0;
  // Whole seconds until the limit resets; set iff current_limit is.
  int64_t reset_seconds = 0;
};

// A response header to add (RateLimitResponse.response_headers_to_add).
struct RlsHeader {
  std::string name{};
  std::string value{};
};

struct RlsResponse {
  RlsCode overall_code = RlsCode::kOk;
  // One per request descriptor, in order.
  std::vector<RlsStatus> statuses{};
  std::vector<RlsHeader> headers{};
  // RateLimitResponse.dynamic_metadata as a JSON object (rls_metadata.h); empty when the service
  // does not return it (RESPONSE_DYNAMIC_METADATA off).
  std::string dynamic_metadata_json{};
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RLS_TYPES_H_
