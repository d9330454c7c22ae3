// Limit: what a rate limit allows, independent of where its state lives.
//
// A Limit names an algorithm, a quota (`limit` requests per `period`) and, for the token bucket
// and GCRA, a `burst` capacity. docs/algorithms.md specifies each algorithm exactly; the C++ and
// Lua implementations both follow it. ValidateLimit() bounds every field so that all arithmetic of
// every algorithm stays exact in 64-bit integers and in Lua's doubles (below 2^53).
//
// Example:
//   Limit per_user{.algorithm = Algorithm::kGcra, .limit = 100, .period = std::chrono::minutes(1),
//                  .burst = 20};
//   SLUICE_RETURN_IF_ERROR(ValidateLimit(per_user));
//
// Thread safety: a value type; const methods are safe to call concurrently.
#ifndef SLUICE_LIMIT_H_
#define SLUICE_LIMIT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice {

enum class Algorithm : uint8_t {
  kFixedWindow = 0,
  kSlidingWindow = 1,
  kSlidingLog = 2,
  kTokenBucket = 3,
  kGcra = 4,
};

inline constexpr int kAlgorithmCount = 5;

// AlgorithmName()
//
// Returns the configuration name: "fixed_window", "sliding_window", "sliding_log", "token_bucket"
// or "gcra".
std::string_view AlgorithmName(Algorithm algorithm);

// ParseAlgorithm()
//
// Returns the algorithm named `name` (as AlgorithmName() spells it), or InvalidArgument.
absl::StatusOr<Algorithm> ParseAlgorithm(std::string_view name);

struct Limit {
  // How the quota is enforced. Default: fixed window, as envoyproxy/ratelimit does.
  Algorithm algorithm = Algorithm::kFixedWindow;
  // Requests (units of cost) admitted per period. REQUIRES: 1 <= limit <= kMaxLimit.
  int64_t limit = 1;
  // The window length, or the time in which the token bucket / GCRA refills `limit`.
  // REQUIRES: a whole number of milliseconds in [1 ms, kMaxPeriod].
  std::chrono::microseconds period = std::chrono::seconds(1);
  // Token bucket capacity / GCRA burst: the most requests admitted at once from a rested state.
  // Only for kTokenBucket and kGcra (InvalidArgument elsewhere). Default: `limit`.
  std::optional<int64_t> burst{};

  // Returns `burst` for the token bucket and GCRA, else `limit`: the largest cost that can ever
  // pass.
  int64_t Capacity() const;

  friend bool operator==(const Limit&, const Limit&) = default;
};

inline constexpr int64_t kMaxLimit = (int64_t{1} << 32) - 1;
inline constexpr int64_t kMaxCost = int64_t{1} << 32;
inline constexpr std::chrono::microseconds kMaxPeriod = std::chrono::hours(24 * 366);
// The sliding log keeps one entry per admitted unit of cost, so its quota is capped.
inline constexpr int64_t kMaxSlidingLogLimit = 100'000;
// Bound on products of a period and a quota (see docs/algorithms.md, "Exact arithmetic").
inline constexpr int64_t kMaxRateProduct = int64_t{1} << 50;

// ValidateLimit()
//
// Returns OK when `limit` is within the bounds documented on its fields and in
// docs/algorithms.md, else InvalidArgument naming the field.
absl::Status ValidateLimit(const Limit& limit);

// ValidateCost()
//
// Returns OK for 0 <= cost <= kMaxCost, else InvalidArgument. A cost above the limit's capacity is
// valid and always denied; a cost of 0 is a peek that records nothing.
absl::Status ValidateCost(int64_t cost);

// Describe()
//
// Returns a short human form such as "gcra 100/60s burst 20", for logs and errors.
std::string Describe(const Limit& limit);

}  // namespace sluice

#endif  // SLUICE_LIMIT_H_
