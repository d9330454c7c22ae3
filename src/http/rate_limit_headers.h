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

// CeilSeconds()
//
// Returns `d` rounded up to whole seconds (0 for d <= 0).
int64_t CeilSeconds(std::chrono::microseconds d);

// The time bounds of one policy, in whole seconds.
struct PolicyWindow {
  // `w` of RateLimit-Policy.
  int64_t window_seconds = 1;
  // The longest wait the policy's algorithm can report for a cost it can ever admit: `w`, except
  // for the sliding window counter, whose weighted count remembers the previous window and so can
  // hold a request back for up to two periods (docs/algorithms.md), e.g. always about 2 periods
  // for a limit of 1. Retry-After is capped here rather than at `w`, so that waiting it out always
  // admits the request.
  int64_t horizon_seconds = 1;
};

// RetryAfterSeconds()
//
// Returns the Retry-After of a denial by a policy: `retry_after` rounded up to whole seconds, at
// least 1 and at most the policy's horizon; Decision::kNever (a cost above the capacity, which no
// wait admits) gives the window.
int64_t RetryAfterSeconds(std::chrono::microseconds retry_after, const PolicyWindow& window);

// ResetSeconds()
//
// Returns the `t` of one policy: for a denied decision its Retry-After, so that Retry-After never
// names a point earlier than the reset of a policy that refused the request; otherwise
// reset_after rounded up and capped at the horizon.
int64_t ResetSeconds(const Decision& decision, const PolicyWindow& window);

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
