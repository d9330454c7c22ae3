// Integer helpers shared by the five algorithms.
//
// docs/algorithms.md keeps every intermediate value below 2^53 (see "Exact arithmetic"), so the
// algorithms never need wider types; these helpers only spell out the rounding the spec asks for:
// waits round up, counts round down, and every count is clamped at 0.
//
// Thread safety: pure functions.
#ifndef SLUICE_ALGORITHM_MATH_INTERNAL_H_
#define SLUICE_ALGORITHM_MATH_INTERNAL_H_

#include <chrono>
#include <cstdint>

#include "sluice/decision.h"

namespace sluice::algorithm::internal {

// CeilDiv()
//
// Returns ceil(a / b). REQUIRES: a >= 0, b > 0. Written as a quotient plus a remainder test rather
// than (a + b - 1) / b, whose sum could overflow for large a.
constexpr int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// AlignDown()
//
// Returns the start of the period-aligned window holding `t`: t - (t mod period).
// REQUIRES: t >= 0, period > 0.
constexpr int64_t AlignDown(int64_t t, int64_t period) { return t - t % period; }

// FloorDivNonNegative()
//
// Returns max(0, a) / b: the count formulas clamp at 0 before dividing (a state written under
// another limit or before a backward time step may exceed the capacity). REQUIRES: b > 0.
constexpr int64_t FloorDivNonNegative(int64_t a, int64_t b) { return a > 0 ? a / b : 0; }

// Admitted(), Denied(), Never()
//
// Build the three kinds of Decision. `capacity` is Decision::limit (the limit's Capacity()); all
// times are microseconds.
inline Decision Admitted(int64_t capacity, int64_t remaining, int64_t reset_after_us) {
  return Decision{.allowed = true,
                  .limit = capacity,
                  .remaining = remaining,
                  .reset_after = std::chrono::microseconds(reset_after_us),
                  .retry_after = std::chrono::microseconds(0)};
}

inline Decision Denied(int64_t capacity, int64_t remaining, int64_t reset_after_us,
                       int64_t retry_after_us) {
  return Decision{.allowed = false,
                  .limit = capacity,
                  .remaining = remaining,
                  .reset_after = std::chrono::microseconds(reset_after_us),
                  .retry_after = std::chrono::microseconds(retry_after_us)};
}

inline Decision Never(int64_t capacity, int64_t remaining, int64_t reset_after_us) {
  return Decision{.allowed = false,
                  .limit = capacity,
                  .remaining = remaining,
                  .reset_after = std::chrono::microseconds(reset_after_us),
                  .retry_after = Decision::kNever};
}

}  // namespace sluice::algorithm::internal

#endif  // SLUICE_ALGORITHM_MATH_INTERNAL_H_
