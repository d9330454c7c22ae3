// The rate limit service's response headers: envoyproxy/ratelimit's RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset (LIMIT_RESPONSE_HEADERS_ENABLED, names configurable as
// LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER), plus Retry-After when the
// request is over the limit. The seconds are computed by the arithmetic the HTTP middleware uses
// (src/core/wait_seconds.h), so both front ends round and cap the same way.
//
// Thread safety: pure functions.
#ifndef SLUICE_SERVER_RLS_RLS_HEADERS_H_
#define SLUICE_SERVER_RLS_RLS_HEADERS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/server/rls/rls_types.h"

namespace sluice::server {

struct RlsHeaderNames {
  // Default: the reference's names.
  std::string limit = "RateLimit-Limit";
  std::string remaining = "RateLimit-Remaining";
  std::string reset = "RateLimit-Reset";
};

// StatusResetSeconds()
//
// Returns the whole seconds a descriptor status reports until its limit resets: `reset_after`
// rounded up (the reference reports whole seconds).
int64_t StatusResetSeconds(std::chrono::microseconds reset_after);

// RetryAfterSeconds()
//
// Returns Retry-After for a denial by `limit`: its retry_after rounded up, at least 1 and at most
// the limit's horizon (the period; two for the sliding window); Decision::kNever gives the period.
int64_t RetryAfterSeconds(std::chrono::microseconds retry_after, const Limit& limit);

// ResponseHeaders()
//
// Returns the headers describing `closest` (a status with a current_limit), and Retry-After when
// `retry_after_seconds` > 0.
std::vector<RlsHeader> ResponseHeaders(const RlsHeaderNames& names, const RlsStatus& closest,
                                       int64_t retry_after_seconds);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RLS_HEADERS_H_
