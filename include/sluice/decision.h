// Decision: the outcome of one rate limit check.
//
// A denial is a Decision with `allowed == false`, never an error: errors are for when no decision
// could be made (bad input, store unavailable). The fields carry what `Retry-After`, the IETF
// `RateLimit`/`RateLimit-Policy` headers and Envoy's `DescriptorStatus` need; docs/algorithms.md
// says what each means for each algorithm.
//
// Thread safety: a value type.
#ifndef SLUICE_DECISION_H_
#define SLUICE_DECISION_H_

#include <chrono>
#include <cstdint>

namespace sluice {

struct [[nodiscard]] Decision {
  // `retry_after` of a request whose cost exceeds the limit's capacity: it can never pass.
  static constexpr std::chrono::microseconds kNever{-1};

  // Whether the request was admitted (and its cost recorded).
  bool allowed = false;
  // The quota: `limit` for window algorithms, the burst capacity for the token bucket and GCRA.
  int64_t limit = 0;
  // Requests of cost 1 that would be admitted right after this decision. 0 <= remaining <= limit.
  int64_t remaining = 0;
  // Time until the state is back to full (remaining == limit); for the fixed window, time until the
  // window ends.
  std::chrono::microseconds reset_after{0};
  // 0 when allowed. When denied: the shortest wait after which the same request would be admitted
  // if nothing else happened meanwhile, or kNever when its cost exceeds the capacity.
  std::chrono::microseconds retry_after{0};
  // True when a store failure policy answered instead of the store (see failure_policy.h).
  bool from_fallback = false;
  // True when a decorator in front of the store answered from memory, without asking the store:
  // the over-limit cache's denial (sluiced's LOCAL_CACHE_SIZE_IN_BYTES).
  bool answered_locally = false;

  friend bool operator==(const Decision&, const Decision&) = default;
};

}  // namespace sluice

#endif  // SLUICE_DECISION_H_
