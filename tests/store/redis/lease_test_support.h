// Helpers shared by the tests of leases against real Redis servers (redis_lease_*_test.cc): the
// algorithms, limits long enough that no boundary falls inside a test, Redis's own clock, and the
// names of algorithm-parameterised tests.
#ifndef SLUICE_TESTS_STORE_REDIS_LEASE_TEST_SUPPORT_H_
#define SLUICE_TESTS_STORE_REDIS_LEASE_TEST_SUPPORT_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"

#include "tests/testing/redis_server.h"

namespace sluice::testing {

inline const std::vector<Algorithm> kLeaseAlgorithms = {
    Algorithm::kFixedWindow, Algorithm::kSlidingWindow, Algorithm::kSlidingLog,
    Algorithm::kTokenBucket, Algorithm::kGcra};

inline bool IsBucket(Algorithm a) { return a == Algorithm::kTokenBucket || a == Algorithm::kGcra; }

// `limit` per year for the windows (no boundary inside a test) and per day for the buckets (under
// one unit of refill in the seconds a test takes, for limits up to a few thousand).
inline Limit LongLimit(Algorithm a, int64_t limit) {
  return Limit{.algorithm = a,
               .limit = limit,
               .period = IsBucket(a) ? std::chrono::microseconds(std::chrono::hours(24))
                                     : std::chrono::microseconds(std::chrono::hours(24 * 366))};
}

// Redis's clock, in microseconds since the epoch (0 when it cannot say).
inline int64_t RedisNowUs(const RedisServer& server) {
  absl::StatusOr<std::string> time = server.Command({"TIME"});
  if (!time.ok()) return 0;
  const std::vector<std::string> parts = absl::StrSplit(*time, ' ');
  int64_t s = 0;
  int64_t us = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &s) || !absl::SimpleAtoi(parts[1], &us)) {
    return 0;
  }
  return s * 1'000'000 + us;
}

// The name of a test instantiated with ::testing::ValuesIn(kLeaseAlgorithms).
inline std::string AlgorithmParamName(const ::testing::TestParamInfo<Algorithm>& info) {
  return std::string(AlgorithmName(info.param));
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_STORE_REDIS_LEASE_TEST_SUPPORT_H_
