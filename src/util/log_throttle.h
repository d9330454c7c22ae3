// LogThrottle: at most `max_lines` log lines per `interval` from one log site; the lines refused
// in between are counted, and the next line let through says how many there were.
//
// A failing store fails every request: thousands of identical errors a second. Logging each one
// floods the log (and the disk), logging none leaves an outage silent. A throttle per site keeps
// the first lines of each burst, which carry the cause, plus a count of what was dropped.
//
// Windows are fixed and start at the first line: the lines of [start, start + interval) beyond
// `max_lines` are suppressed, and the first line of a later window starts a new one. Time comes
// from the injected Clock, so a ManualClock makes it exact in tests.
//
// Example:
//   LogThrottle throttle_{{.max_lines = 1, .interval = std::chrono::seconds(1)}};
//   ...
//   if (LogPermit p = throttle_.Acquire(); p.log) {
//     spdlog::warn("redis store: check failed: {}{}", message, SuppressedNote(p.suppressed));
//   }
//
// Thread safety: thread-safe; Acquire() takes a short lock.
#ifndef SLUICE_UTIL_LOG_THROTTLE_H_
#define SLUICE_UTIL_LOG_THROTTLE_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"

#include "sluice/clock.h"

#include "src/util/mutex.h"

namespace sluice::internal {

struct LogThrottleOptions {
  // Lines let through per window. 0 suppresses everything (the count still grows). Default: 1.
  uint32_t max_lines = 1;
  // Length of a window. Default: 1 s.
  std::chrono::microseconds interval = std::chrono::seconds(1);
  // Time source. Not owned; must outlive the throttle. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
};

// What Acquire() decided.
struct LogPermit {
  // Whether to write this line.
  bool log = false;
  // When `log`: the lines suppressed since the last line let through, to be mentioned in this one
  // (SuppressedNote()). 0 otherwise.
  uint64_t suppressed = 0;
};

class LogThrottle {
 public:
  explicit LogThrottle(const LogThrottleOptions& options = {})
      : options_(options), clock_(options.clock != nullptr ? *options.clock : Clock::Real()) {}
  LogThrottle(const LogThrottle&) = delete;
  LogThrottle& operator=(const LogThrottle&) = delete;
  ~LogThrottle() = default;

  // LogThrottle::Acquire()
  //
  // Returns whether the caller may write its line now, and if so how many lines were suppressed
  // since the last one written. A refused call is counted as suppressed.
  LogPermit Acquire() {
    const std::chrono::steady_clock::time_point now = clock_.Now();
    MutexLock lock(&mu_);
    if (!started_ || now >= window_end_) {
      started_ = true;
      window_end_ = now + options_.interval;
      lines_in_window_ = 0;
    }
    if (lines_in_window_ >= options_.max_lines) {
      ++pending_suppressed_;
      ++total_suppressed_;
      return {};
    }
    ++lines_in_window_;
    const LogPermit permit{.log = true, .suppressed = pending_suppressed_};
    pending_suppressed_ = 0;
    return permit;
  }

  // LogThrottle::total_suppressed()
  //
  // Returns every line suppressed since the throttle was made.
  uint64_t total_suppressed() const {
    MutexLock lock(&mu_);
    return total_suppressed_;
  }

 private:
  const LogThrottleOptions options_;
  Clock& clock_;
  mutable Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point window_end_ ABSL_GUARDED_BY(mu_);
  uint32_t lines_in_window_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t pending_suppressed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t total_suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

// SuppressedNote()
//
// Returns "" for 0, else " (K similar lines suppressed)": the tail of a throttled line.
inline std::string SuppressedNote(uint64_t suppressed) {
  if (suppressed == 0) return {};
  return " (" + std::to_string(suppressed) +
         (suppressed == 1 ? " similar line" : " similar lines") + " suppressed)";
}

}  // namespace sluice::internal

#endif  // SLUICE_UTIL_LOG_THROTTLE_H_
