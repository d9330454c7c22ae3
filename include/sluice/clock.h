// Clock: the only source of time in sluice outside Redis.
//
// Every component that needs time takes a `Clock&` instead of calling std::chrono clocks directly,
// so tests drive time with a manual clock and never sleep. Limit decisions need an epoch time
// (fixed windows are aligned to multiples of the period since the Unix epoch, as
// envoyproxy/ratelimit aligns them); `EpochNow()` gives one that is nevertheless monotonic: the
// wall clock is read once, when the clock is made, and monotonic time is added to it, so a
// wall-clock step (NTP, an operator) neither resets nor locks out a limit.
//
// Example:
//   Clock& clock = Clock::Real();
//   std::chrono::microseconds now = clock.EpochNow();
//
// Thread safety: implementations must be thread-safe.
#ifndef SLUICE_CLOCK_H_
#define SLUICE_CLOCK_H_

#include <chrono>

namespace sluice {

class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  virtual ~Clock() = default;

  // Clock::Now()
  //
  // Returns monotonic time; it never goes backwards.
  virtual std::chrono::steady_clock::time_point Now() = 0;

  // Clock::EpochNow()
  //
  // Returns microseconds since the Unix epoch, anchored once to the wall clock and advanced by
  // monotonic time; it never goes backwards.
  virtual std::chrono::microseconds EpochNow() = 0;

  // Clock::Real()
  //
  // Returns the process-wide real clock. It belongs to sluice and must never be deleted.
  static Clock& Real();
};

}  // namespace sluice

#endif  // SLUICE_CLOCK_H_
