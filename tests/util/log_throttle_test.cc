#include "src/util/log_throttle.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "tests/testing/manual_clock.h"

namespace sluice::internal {
namespace {

using std::chrono::milliseconds;
using testing::ManualClock;

TEST(LogThrottle, LetsMaxLinesThroughPerWindowAndSuppressesTheRest) {
  ManualClock clock;
  LogThrottle throttle({.max_lines = 3, .interval = std::chrono::seconds(1), .clock = &clock});
  for (int i = 0; i < 3; ++i) {
    const LogPermit p = throttle.Acquire();
    EXPECT_TRUE(p.log) << i;
    EXPECT_EQ(p.suppressed, 0u) << i;
  }
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(throttle.Acquire().log) << i;
  EXPECT_EQ(throttle.total_suppressed(), 10u);
}

// Verifies the window boundary pair: 999 ms after the first line is still the same window, 1000 ms
// starts the next one, and its first line reports what was suppressed.
TEST(LogThrottle, NextWindowStartsExactlyAfterIntervalAndReportsSuppressedCount) {
  ManualClock clock;
  LogThrottle throttle({.max_lines = 1, .interval = std::chrono::seconds(1), .clock = &clock});
  EXPECT_TRUE(throttle.Acquire().log);
  clock.Advance(milliseconds(500));
  EXPECT_FALSE(throttle.Acquire().log);
  clock.Advance(milliseconds(499));  // 999 ms after the first line.
  EXPECT_FALSE(throttle.Acquire().log);
  clock.Advance(milliseconds(1));  // 1000 ms.
  const LogPermit p = throttle.Acquire();
  EXPECT_TRUE(p.log);
  EXPECT_EQ(p.suppressed, 2u);
  // The count is reported once.
  clock.Advance(std::chrono::seconds(1));
  const LogPermit q = throttle.Acquire();
  EXPECT_TRUE(q.log);
  EXPECT_EQ(q.suppressed, 0u);
  EXPECT_EQ(throttle.total_suppressed(), 2u);
}

TEST(LogThrottle, WindowStartsAtTheFirstLineAfterAQuietSpell) {
  ManualClock clock;
  LogThrottle throttle({.max_lines = 2, .interval = std::chrono::seconds(10), .clock = &clock});
  EXPECT_TRUE(throttle.Acquire().log);
  clock.Advance(std::chrono::seconds(25));  // Quiet: the next window starts now, not at 20 s.
  EXPECT_TRUE(throttle.Acquire().log);
  EXPECT_TRUE(throttle.Acquire().log);
  EXPECT_FALSE(throttle.Acquire().log);
  clock.Advance(std::chrono::milliseconds(9'999));
  EXPECT_FALSE(throttle.Acquire().log);
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(throttle.Acquire().suppressed, 2u);
}

TEST(LogThrottle, ZeroMaxLinesSuppressesEverything) {
  ManualClock clock;
  LogThrottle throttle({.max_lines = 0, .interval = std::chrono::seconds(1), .clock = &clock});
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(throttle.Acquire().log);
    clock.Advance(std::chrono::seconds(2));
  }
  EXPECT_EQ(throttle.total_suppressed(), 5u);
}

// Verifies exact totals under contention: with time frozen, 8 threads x 1000 calls let exactly
// max_lines through and count every other call as suppressed.
TEST(LogThrottle, ConcurrentCallersGetExactlyMaxLines) {
  ManualClock clock;
  LogThrottle throttle({.max_lines = 5, .interval = std::chrono::seconds(1), .clock = &clock});
  std::atomic<int> logged{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (throttle.Acquire().log) logged.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(logged.load(), 5);
  EXPECT_EQ(throttle.total_suppressed(), 7995u);
}

TEST(SuppressedNote, SaysNothingForZeroAndCountsOtherwise) {
  EXPECT_EQ(SuppressedNote(0), "");
  EXPECT_EQ(SuppressedNote(1), " (1 similar line suppressed)");
  EXPECT_EQ(SuppressedNote(4245), " (4245 similar lines suppressed)");
}

}  // namespace
}  // namespace sluice::internal
