// ManualClock: a Clock that only moves when told to, so tests never sleep.
//
// Example:
//   ManualClock clock(std::chrono::seconds(1'700'000'000));
//   clock.Advance(std::chrono::milliseconds(999));
//
// Thread safety: thread-safe.
#ifndef SLUICE_TESTS_TESTING_MANUAL_CLOCK_H_
#define SLUICE_TESTS_TESTING_MANUAL_CLOCK_H_

#include <chrono>

#include "sluice/clock.h"

#include "src/util/mutex.h"

namespace sluice::testing {

class ManualClock final : public Clock {
 public:
  // Starts at `epoch_now` microseconds since the Unix epoch.
  explicit ManualClock(std::chrono::microseconds epoch_now = std::chrono::seconds(1'700'000'000))
      : now_(epoch_now) {}

  std::chrono::steady_clock::time_point Now() override {
    internal::MutexLock lock(&mu_);
    return std::chrono::steady_clock::time_point(now_);
  }

  std::chrono::microseconds EpochNow() override {
    internal::MutexLock lock(&mu_);
    return now_;
  }

  // Moves time forward by `d`. REQUIRES: d >= 0.
  void Advance(std::chrono::microseconds d) {
    internal::MutexLock lock(&mu_);
    now_ += d;
  }

  // Sets the time; unlike a real monotonic clock it may go backwards, for tests of that case.
  void Set(std::chrono::microseconds epoch_now) {
    internal::MutexLock lock(&mu_);
    now_ = epoch_now;
  }

 private:
  internal::Mutex mu_;
  std::chrono::microseconds now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_MANUAL_CLOCK_H_
