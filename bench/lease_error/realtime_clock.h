// RealtimeClock: the harness's one clock, CLOCK_REALTIME in microseconds, as a sluice::Clock.
//
// Redis's TIME reads the same clock on the same host, so the decisions every worker records, the
// Redis store's windows and the windows of the memory stores the harness makes (which take this
// clock instead of Clock::Real(), whose epoch time is anchored once and then runs on the monotonic
// clock) all line up. A wall-clock step during a run would move them all alike.
//
// Example:
//   RealtimeClock clock;
//   int64_t now_us = RealtimeClock::NowMicros();
//   absl::StatusOr<OpenedStore> memory = OpenStore("memory", {.policy = {.clock = &clock}});
//
// Thread safety: thread-safe.
#ifndef SLUICE_BENCH_LEASE_ERROR_REALTIME_CLOCK_H_
#define SLUICE_BENCH_LEASE_ERROR_REALTIME_CLOCK_H_

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ctime>

#include "sluice/clock.h"

namespace sluice::lease_error {

class RealtimeClock final : public Clock {
 public:
  // RealtimeClock::NowMicros()
  //
  // Returns CLOCK_REALTIME in microseconds since the epoch.
  static int64_t NowMicros() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
  }

  // RealtimeClock::SleepUntil()
  //
  // Sleeps until CLOCK_REALTIME reaches `epoch_us` (at once if it has).
  static void SleepUntil(int64_t epoch_us) {
    const timespec at{.tv_sec = static_cast<time_t>(epoch_us / 1'000'000),
                      .tv_nsec = static_cast<long>(epoch_us % 1'000'000 * 1000)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, nullptr) == EINTR) {
    }
  }

  // Monotonic time for deadlines and the breaker, as the real clock has it.
  std::chrono::steady_clock::time_point Now() override { return Clock::Real().Now(); }
  std::chrono::microseconds EpochNow() override { return std::chrono::microseconds(NowMicros()); }
};

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_REALTIME_CLOCK_H_
