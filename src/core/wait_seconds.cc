#include "src/core/wait_seconds.h"

#include <algorithm>

namespace sluice::internal {

int64_t CeilSeconds(std::chrono::microseconds d) {
  if (d.count() <= 0) return 0;
  return (d.count() + 999'999) / 1'000'000;
}

int64_t PolicyWindowSeconds(const Limit& limit) {
  const int64_t period_us = limit.period.count();
  if (limit.algorithm != Algorithm::kTokenBucket && limit.algorithm != Algorithm::kGcra) {
    return std::max<int64_t>(1, period_us / 1'000'000);
  }
  // Time to refill the whole capacity: capacity * period / limit, rounded up. ValidateLimit()
  // bounds max(limit, burst) * period_us by 2^50, so the product cannot overflow.
  const int64_t refill_us = (limit.Capacity() * period_us + limit.limit - 1) / limit.limit;
  return std::max<int64_t>(1, (refill_us + 999'999) / 1'000'000);
}

int64_t PolicyHorizonSeconds(const Limit& limit) {
  const int64_t window = PolicyWindowSeconds(limit);
  return limit.algorithm == Algorithm::kSlidingWindow ? 2 * window : window;
}

int64_t RetryAfterSeconds(std::chrono::microseconds retry_after, const PolicyWindow& window) {
  const int64_t w = std::max<int64_t>(1, window.window_seconds);
  if (retry_after == Decision::kNever) return w;
  return std::clamp<int64_t>(CeilSeconds(retry_after), 1, std::max(w, window.horizon_seconds));
}

int64_t ResetSeconds(const Decision& decision, const PolicyWindow& window) {
  if (!decision.allowed) return RetryAfterSeconds(decision.retry_after, window);
  return std::clamp<int64_t>(CeilSeconds(decision.reset_after), 0,
                             std::max<int64_t>({1, window.window_seconds, window.horizon_seconds}));
}

}  // namespace sluice::internal
