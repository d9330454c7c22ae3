// The response header fields of rate limiting, formatted once here:
//   RateLimit-Policy: "burst";q=100;w=60, "daily";q=1000;w=86400
//   RateLimit: "burst";r=50;t=30, "daily";r=990;t=51000
//   Retry-After: 30
//   X-RateLimit-Limit / -Remaining / -Reset (legacy, optional)
// RateLimit and RateLimit-Policy are Structured Field Lists (RFC 8941) as
// draft-ietf-httpapi-ratelimit-headers defines them: each item is the policy name as an sf-string
// with integer parameters, items separated by ", " (RFC 8941 §4.1.1 serialization).
//
// Thread safety: pure functions.
#ifndef SLUICE_HTTP_RATE_LIMIT_HEADERS_H_
#define SLUICE_HTTP_RATE_LIMIT_HEADERS_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "sluice/decision.h"

#include "src/core/wait_seconds.h"

namespace sluice::http::internal {

// What the headers say about one policy after one decision.
struct PolicyState {
  std::string_view name;
  // `name` as an sf-string ("\"burst\""), when precomputed; else it is quoted on each use.
  std::string_view quoted_name = {};
  int64_t quota = 0;           // q
  int64_t window_seconds = 1;  // w
  int64_t remaining = 0;       // r
  int64_t reset_seconds = 0;   // t
};

// SfString()
//
// Returns `text` as an RFC 8941 sf-string: quoted, with '"' and '\' escaped. Bytes outside
// printable ASCII are not representable and are replaced by '?'.
std::string SfString(std::string_view text);

// The arithmetic of the seconds the fields speak, shared with sluiced (src/core/wait_seconds.h).
using ::sluice::internal::CeilSeconds;
using ::sluice::internal::PolicyWindow;
using ::sluice::internal::ResetSeconds;
using ::sluice::internal::RetryAfterSeconds;

// PolicyItem()
//
// Returns one RateLimit-Policy item: "\"burst\";q=100;w=60".
std::string PolicyItem(std::string_view name, int64_t quota, int64_t window_seconds);

// FormatRateLimitPolicy()
//
// Returns the RateLimit-Policy value for `states` (only name, quota and window are used).
std::string FormatRateLimitPolicy(std::span<const PolicyState> states);

// FormatRateLimit()
//
// Returns the RateLimit value: "\"burst\";r=50;t=30, ...".
std::string FormatRateLimit(std::span<const PolicyState> states);

// MostConstrained()
//
// Returns the index of the policy the legacy X-RateLimit-* headers describe: the lowest remaining,
// then the longest wait. REQUIRES: !states.empty().
size_t MostConstrained(std::span<const PolicyState> states);

}  // namespace sluice::http::internal

#endif  // SLUICE_HTTP_RATE_LIMIT_HEADERS_H_
