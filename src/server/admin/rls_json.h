// The proto3 JSON codec of POST /json: RateLimitRequest in, RateLimitResponse out.
//
// Both directions give exactly what protobuf's JSON util (google::protobuf::util::
// JsonStringToMessage / MessageToJsonString, default options) gives, only faster: that util goes
// through a TypeResolver and a binary round trip and was ~15% of sluiced's CPU under /json load.
//
// Parsing has a fast path, a Boost.JSON SAX handler that builds the message directly, and a
// fallback, protobuf's own parser on the whole input. The fast path accepts only shapes whose
// protobuf reading is certain (field names in either spelling, exact enum names, plain integer
// literals, ...); anything else, including every input protobuf would reject, goes to the fallback,
// so the result (the message, or the rejection and its message) is protobuf's by construction.
// tests/server/rls_json_test.cc checks this differentially on thousands of generated inputs.
//
// Writing is direct, except for a response that carries `dynamic_metadata` (a Struct), a string
// that is not valid UTF-8, or a Duration that protobuf refuses or writes oddly: those responses go
// to MessageToJsonString whole.
//
// Example:
//   RateLimitRequest request;
//   if (absl::Status s = ParseRateLimitRequestJson(body, &request); !s.ok()) return s;
//   ...
//   std::string json = RateLimitResponseToJson(response);
//
// Thread safety: the functions are thread-safe (no shared state).
#ifndef SLUICE_SERVER_ADMIN_RLS_JSON_H_
#define SLUICE_SERVER_ADMIN_RLS_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

#include "src/server/grpc/rls_proto.h"

namespace sluice::server {

// ParseRateLimitRequestJson()
//
// Parses the proto3 JSON form of a RateLimitRequest into `*out` (cleared first), with protobuf's
// semantics and unknown fields rejected. Returns OK on success, or InvalidArgument with the
// message "bad RateLimitRequest JSON: <protobuf's reason>"; `*out` is then unspecified.
// REQUIRES: out != nullptr.
[[nodiscard]] absl::Status ParseRateLimitRequestJson(std::string_view json, RateLimitRequest* out);

// RateLimitResponseToJson()
//
// Returns the JSON that MessageToJsonString(r) writes with default options (lowerCamelCase names,
// default values omitted, enums by name, 64-bit integers and durations as strings, bytes in
// base64), byte for byte where the fast writer applies. Like HttpApi before it, it returns
// whatever MessageToJsonString wrote even when that reports an error (an out-of-range duration).
std::string RateLimitResponseToJson(const RateLimitResponse& r);

}  // namespace sluice::server

namespace sluice::internal {

// The two fast paths alone, for tests and benchmarks; production code calls the functions above.

// Returns true when the fast parser accepted `json`, with `*out` then equal to what protobuf would
// parse; false when the input needs protobuf's parser (`*out` is then partly filled).
[[nodiscard]] bool ParseRateLimitRequestJsonFast(std::string_view json,
                                                 server::RateLimitRequest* out);

// Returns true when the direct writer could write `r`, appending its JSON to `*out`; false when
// MessageToJsonString must (`*out` then holds a partial document).
[[nodiscard]] bool RateLimitResponseToJsonFast(const server::RateLimitResponse& r,
                                               std::string* out);

}  // namespace sluice::internal

#endif  // SLUICE_SERVER_ADMIN_RLS_JSON_H_
