// ValidateLimit(), ValidateCost(), ParseAlgorithm(), AlgorithmName(), Describe() and
// Limit::Capacity(): every bound of docs/algorithms.md ("Inputs", "Exact arithmetic"), on both
// sides of each boundary.
#include "sluice/limit.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// The message as a std::string, so that gtest prints it as text.
std::string MessageOf(const absl::Status& status) { return std::string(status.message()); }

constexpr std::array<Algorithm, 5> kAllAlgorithms = {
    Algorithm::kFixedWindow, Algorithm::kSlidingWindow, Algorithm::kSlidingLog,
    Algorithm::kTokenBucket, Algorithm::kGcra};
constexpr std::array<Algorithm, 3> kWindowAlgorithms = {
    Algorithm::kFixedWindow, Algorithm::kSlidingWindow, Algorithm::kSlidingLog};
constexpr std::array<Algorithm, 2> kRateAlgorithms = {Algorithm::kTokenBucket, Algorithm::kGcra};

Limit Make(Algorithm algorithm, int64_t limit, microseconds period,
           std::optional<int64_t> burst = std::nullopt) {
  return Limit{.algorithm = algorithm, .limit = limit, .period = period, .burst = burst};
}

// Expects InvalidArgument whose message names `field`.
void ExpectInvalid(const Limit& limit, std::string_view field) {
  const absl::Status status = ValidateLimit(limit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(MessageOf(status), HasSubstr(field));
}

TEST(ValidateLimit, AcceptsDefaultLimit) { EXPECT_TRUE(ValidateLimit(Limit{}).ok()); }

TEST(ValidateLimit, LimitBounds) {
  for (const Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    EXPECT_TRUE(ValidateLimit(Make(algorithm, 1, milliseconds(1))).ok());
    ExpectInvalid(Make(algorithm, 0, milliseconds(1)), "limit.limit");
    ExpectInvalid(Make(algorithm, -1, milliseconds(1)), "limit.limit");
    ExpectInvalid(Make(algorithm, kMaxLimit + 1, milliseconds(1)), "limit.limit");
  }
  // Only the fixed window has no product bound, so only it reaches kMaxLimit with any period.
  EXPECT_TRUE(ValidateLimit(Make(Algorithm::kFixedWindow, kMaxLimit, kMaxPeriod)).ok());
  EXPECT_TRUE(ValidateLimit(Make(Algorithm::kTokenBucket, kMaxLimit, milliseconds(1))).ok());
  EXPECT_TRUE(ValidateLimit(Make(Algorithm::kGcra, kMaxLimit, milliseconds(1))).ok());
}

TEST(ValidateLimit, PeriodBounds) {
  for (const Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    EXPECT_TRUE(ValidateLimit(Make(algorithm, 1, microseconds(1000))).ok());
    EXPECT_TRUE(ValidateLimit(Make(algorithm, 1, kMaxPeriod)).ok());
    ExpectInvalid(Make(algorithm, 1, microseconds(999)), "limit.period");
    ExpectInvalid(Make(algorithm, 1, microseconds(0)), "limit.period");
    ExpectInvalid(Make(algorithm, 1, microseconds(-1000)), "limit.period");
    ExpectInvalid(Make(algorithm, 1, kMaxPeriod + milliseconds(1)), "limit.period");
    // Whole milliseconds only: the sliding window weighs by whole ms and Redis expires in ms.
    ExpectInvalid(Make(algorithm, 1, microseconds(1001)), "limit.period");
    ExpectInvalid(Make(algorithm, 1, microseconds(1500)), "limit.period");
  }
}

TEST(ValidateLimit, BurstOnWindowAlgorithmIsRejected) {
  for (const Algorithm algorithm : kWindowAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    // Even a burst equal to the limit: it would mean nothing, and silently ignoring it would hide
    // a configuration mistake.
    ExpectInvalid(Make(algorithm, 10, std::chrono::seconds(1), 10), "limit.burst");
    ExpectInvalid(Make(algorithm, 10, std::chrono::seconds(1), 1), "limit.burst");
  }
}

TEST(ValidateLimit, BurstBounds) {
  for (const Algorithm algorithm : kRateAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    EXPECT_TRUE(ValidateLimit(Make(algorithm, 10, milliseconds(1), 1)).ok());
    EXPECT_TRUE(ValidateLimit(Make(algorithm, 10, milliseconds(1), kMaxLimit)).ok());
    ExpectInvalid(Make(algorithm, 10, milliseconds(1), 0), "limit.burst");
    ExpectInvalid(Make(algorithm, 10, milliseconds(1), -1), "limit.burst");
    ExpectInvalid(Make(algorithm, 10, milliseconds(1), kMaxLimit + 1), "limit.burst");
  }
}

TEST(ValidateLimit, SlidingLogLimitBound) {
  EXPECT_TRUE(
      ValidateLimit(Make(Algorithm::kSlidingLog, kMaxSlidingLogLimit, std::chrono::hours(1))).ok());
  ExpectInvalid(Make(Algorithm::kSlidingLog, kMaxSlidingLogLimit + 1, std::chrono::hours(1)),
                "sliding_log");
}

// Verifies L * P_ms <= 2^50: with P = 2^20 ms the largest limit is exactly 2^30.
TEST(ValidateLimit, SlidingWindowProductBound) {
  const milliseconds period(int64_t{1} << 20);
  EXPECT_TRUE(ValidateLimit(Make(Algorithm::kSlidingWindow, int64_t{1} << 30, period)).ok());
  ExpectInvalid(Make(Algorithm::kSlidingWindow, (int64_t{1} << 30) + 1, period), "sliding_window");
}

// Verifies max(L, B) * P_us <= 2^50 on both factors: with P = 2^20 ms = 1048576000 us the largest
// quota is floor(2^50 / 1048576000) = floor(1073741.824) = 1073741.
TEST(ValidateLimit, RateProductBoundOnLimitAndBurst) {
  const milliseconds period(int64_t{1} << 20);
  for (const Algorithm algorithm : kRateAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    EXPECT_TRUE(ValidateLimit(Make(algorithm, 1'073'741, period)).ok());
    ExpectInvalid(Make(algorithm, 1'073'742, period), AlgorithmName(algorithm));
    EXPECT_TRUE(ValidateLimit(Make(algorithm, 1, period, 1'073'741)).ok());
    ExpectInvalid(Make(algorithm, 1, period, 1'073'742), AlgorithmName(algorithm));
    // A small burst does not excuse a large limit: the refill rate is a product too.
    ExpectInvalid(Make(algorithm, 1'073'742, period, 1), AlgorithmName(algorithm));
  }
}

TEST(ValidateLimit, RejectsUnknownAlgorithm) {
  ExpectInvalid(Make(static_cast<Algorithm>(kAlgorithmCount), 1, std::chrono::seconds(1)),
                "limit.algorithm");
}

TEST(ValidateCost, Bounds) {
  EXPECT_TRUE(ValidateCost(0).ok());
  EXPECT_TRUE(ValidateCost(1).ok());
  EXPECT_TRUE(ValidateCost(kMaxCost).ok());
  EXPECT_EQ(ValidateCost(-1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateCost(kMaxCost + 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(ValidateCost(-1)), HasSubstr("cost"));
}

TEST(ParseAlgorithm, RoundTripsEveryName) {
  for (const Algorithm algorithm : kAllAlgorithms) {
    const absl::StatusOr<Algorithm> parsed = ParseAlgorithm(AlgorithmName(algorithm));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, algorithm);
  }
}

TEST(ParseAlgorithm, RejectsOtherSpellings) {
  for (const std::string_view name :
       {"", "GCRA", "Gcra", "token-bucket", "tokenbucket", " gcra", "gcra ", "leaky_bucket"}) {
    SCOPED_TRACE(name);
    const absl::StatusOr<Algorithm> parsed = ParseAlgorithm(name);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(AlgorithmName, NamesEveryAlgorithm) {
  EXPECT_EQ(AlgorithmName(Algorithm::kFixedWindow), "fixed_window");
  EXPECT_EQ(AlgorithmName(Algorithm::kSlidingWindow), "sliding_window");
  EXPECT_EQ(AlgorithmName(Algorithm::kSlidingLog), "sliding_log");
  EXPECT_EQ(AlgorithmName(Algorithm::kTokenBucket), "token_bucket");
  EXPECT_EQ(AlgorithmName(Algorithm::kGcra), "gcra");
}

TEST(Describe, UsesSecondsWhenWholeAndShowsBurst) {
  EXPECT_EQ(Describe(Make(Algorithm::kGcra, 100, std::chrono::minutes(1), 20)),
            "gcra 100/60s burst 20");
  EXPECT_EQ(Describe(Make(Algorithm::kFixedWindow, 10, std::chrono::seconds(1))),
            "fixed_window 10/1s");
  EXPECT_EQ(Describe(Make(Algorithm::kSlidingWindow, 5, milliseconds(1500))),
            "sliding_window 5/1500ms");
  EXPECT_EQ(Describe(Make(Algorithm::kTokenBucket, 1, milliseconds(1))), "token_bucket 1/1ms");
}

TEST(LimitCapacity, IsBurstForRateAlgorithmsElseLimit) {
  EXPECT_EQ(Make(Algorithm::kGcra, 10, std::chrono::seconds(1), 3).Capacity(), 3);
  EXPECT_EQ(Make(Algorithm::kTokenBucket, 10, std::chrono::seconds(1), 30).Capacity(), 30);
  EXPECT_EQ(Make(Algorithm::kGcra, 10, std::chrono::seconds(1)).Capacity(), 10);
  for (const Algorithm algorithm : kWindowAlgorithms) {
    EXPECT_EQ(Make(algorithm, 10, std::chrono::seconds(1), 3).Capacity(), 10)
        << AlgorithmName(algorithm);
  }
}

}  // namespace
}  // namespace sluice
