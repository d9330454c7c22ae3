// The whole seconds a client is told to wait: Retry-After, the `t` and `w` of the RateLimit
// fields, and the reset of envoyproxy/ratelimit's headers. One arithmetic for both front ends that
// speak them, the HTTP middleware (src/http/rate_limit_headers.h) and sluiced (its RLS headers), so
// that both round and cap the same way.
//
// Thread safety: pure functions.
#ifndef SLUICE_CORE_WAIT_SECONDS_H_
#define SLUICE_CORE_WAIT_SECONDS_H_

#include <chrono>
#include <cstdint>

#include "sluice/decision.h"
#include "sluice/limit.h"

namespace sluice::internal {

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

// PolicyWindowSeconds()
//
// Returns the `w` of a limit: its period for the window algorithms; for the token bucket and GCRA
// the time to refill the whole capacity, ceil(capacity * period / limit). REQUIRES: a valid limit.
int64_t PolicyWindowSeconds(const Limit& limit);

// PolicyHorizonSeconds()
//
// Returns the horizon of a limit (see PolicyWindow): twice `w` for the sliding window, else `w`.
int64_t PolicyHorizonSeconds(const Limit& limit);

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

}  // namespace sluice::internal

#endif  // SLUICE_CORE_WAIT_SECONDS_H_
