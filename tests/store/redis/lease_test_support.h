// Helpers shared by the tests of leases against real Redis servers (redis_lease_*_test.cc): the
// algorithms, limits long enough that no boundary falls inside a test, Redis's own clock, and the
// names of algorithm-parameterised tests.
#ifndef SLUICE_TESTS_STORE_REDIS_LEASE_TEST_SUPPORT_H_
#define SLUICE_TESTS_STORE_REDIS_LEASE_TEST_SUPPORT_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/store.h"

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

// The keys of a failover test with leases: key k (one per kLeaseAlgorithms[k]) under
// LongLimit(kLeaseAlgorithms[k], limit), checked through one store, with what each admitted.
// Real time paces it (real processes, a real failover); no wait in it is a synchronisation.
class LeasedFailoverKeys {
 public:
  // What the checks made while the failover ran (CheckWhile()).
  struct During {
    std::vector<int64_t> local;   // per key, admissions from a lease
    int64_t unleased_errors = 0;  // failed checks of a key with no lease
  };

  LeasedFailoverKeys(Store& store, std::vector<std::string> keys, int64_t limit)
      : store_(store), keys_(std::move(keys)), limit_(limit), admitted_(keys_.size(), 0) {}

  const std::vector<std::string>& keys() const { return keys_; }
  const std::vector<int64_t>& admitted() const { return admitted_; }
  Limit LimitOf(size_t k) const { return LongLimit(kLeaseAlgorithms[k], limit_); }

  // Checks key k once.
  absl::StatusOr<Decision> Check(size_t k) {
    absl::StatusOr<Decision> d = store_.Check(keys_[k], LimitOf(k));
    if (d.ok() && d->allowed) ++admitted_[k];
    return d;
  }

  // Admits `n` on every key, mostly from leases: a key's first check leases nothing, and the
  // checks 20 ms later lease what that rate asks for. Fails the test on an error or a denial.
  void AdmitEach(int64_t n) {
    for (size_t k = 0; k < keys_.size(); ++k) {
      ASSERT_TRUE(Check(k).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a rate to size the lease by
      while (admitted_[k] < n) {
        absl::StatusOr<Decision> d = Check(k);
        ASSERT_TRUE(d.ok()) << d.status();
        ASSERT_TRUE(d->allowed);
      }
    }
  }

  // Runs `wait` (which returns when the failover is over) while a thread checks every key and
  // `unleased` (under the GCRA's limit) every 20 ms; returns what `wait` returned, and sets
  // `during`.
  template <typename Wait>
  auto CheckWhile(Wait wait, const std::string& unleased, During& during) {
    during = During{.local = std::vector<int64_t>(keys_.size(), 0)};
    std::atomic<bool> over{false};
    std::thread checker([&] {
      while (!over.load()) {
        for (size_t k = 0; k < keys_.size(); ++k) {
          absl::StatusOr<Decision> d = Check(k);
          if (d.ok() && d->allowed && d->answered_locally) ++during.local[k];
        }
        if (!store_.Check(unleased, LongLimit(Algorithm::kGcra, limit_)).ok()) {
          ++during.unleased_errors;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // paces the checks
      }
    });
    auto result = wait();
    over.store(true);
    checker.join();
    return result;
  }

  // Offers three times the limit on every key. Fails the test on an error.
  void OfferThreeLimits() {
    for (size_t k = 0; k < keys_.size(); ++k) {
      for (int64_t i = 0; i < 3 * limit_; ++i) {
        absl::StatusOr<Decision> d = Check(k);
        ASSERT_TRUE(d.ok()) << d.status();
      }
    }
  }

  // Returns the admissions beyond each key's exact bound (buckets: plus a unit of refill), summed
  // over the keys; expects each key to have admitted at least 98 % of its limit less one grant (a
  // leasing call whose answer a failover lost may have been granted, its units stranded until the
  // lease ends: at most an eighth of the limit).
  int64_t OverAdmitted() const {
    int64_t over = 0;
    for (size_t k = 0; k < keys_.size(); ++k) {
      EXPECT_GE(admitted_[k], limit_ * 98 / 100 - limit_ / 8) << keys_[k];
      over += std::max<int64_t>(0, admitted_[k] - limit_ - (IsBucket(kLeaseAlgorithms[k]) ? 1 : 0));
    }
    return over;
  }

 private:
  Store& store_;
  const std::vector<std::string> keys_;
  const int64_t limit_;
  std::vector<int64_t> admitted_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_STORE_REDIS_LEASE_TEST_SUPPORT_H_
