// The re-subscription delay, as jpillora/backoff computes it for the reference
// (src/server/xds/xds_backoff.h).
#include "src/server/xds/xds_backoff.h"

#include "gtest/gtest.h"

namespace sluice::server {
namespace {

using std::chrono::milliseconds;

XdsSettings Backoff(int initial_ms, int max_ms, double factor, bool jitter) {
  return XdsSettings{.backoff_initial = milliseconds(initial_ms),
                     .backoff_max = milliseconds(max_ms),
                     .backoff_factor = factor,
                     .backoff_jitter = jitter};
}

TEST(XdsBackoff, GrowsByTheFactorUpToTheMax) {
  const XdsSettings s = Backoff(100, 1000, 2, false);
  EXPECT_EQ(XdsBackoffDelay(s, 0, 0.5), milliseconds(100));
  EXPECT_EQ(XdsBackoffDelay(s, 1, 0.5), milliseconds(200));
  EXPECT_EQ(XdsBackoffDelay(s, 3, 0.5), milliseconds(800));
  EXPECT_EQ(XdsBackoffDelay(s, 4, 0.5), milliseconds(1000));
  EXPECT_EQ(XdsBackoffDelay(s, 64, 0.5), milliseconds(1000));
}

TEST(XdsBackoff, JitterDrawsBetweenTheInitialIntervalAndTheGrownOne) {
  const XdsSettings s = Backoff(100, 10'000, 2, true);
  EXPECT_EQ(XdsBackoffDelay(s, 2, 0.0), milliseconds(100));
  EXPECT_EQ(XdsBackoffDelay(s, 2, 0.5), milliseconds(250));
  EXPECT_EQ(XdsBackoffDelay(s, 2, 0.999), milliseconds(399));
}

// Verifies the reference's defaults (10 s, 60 s, factor 0.5): the delay stays at 10 s.
TEST(XdsBackoff, TheReferencesDefaultFactorKeepsTheInitialInterval) {
  const XdsSettings s;
  for (int attempt : {0, 1, 5, 30}) {
    EXPECT_EQ(XdsBackoffDelay(s, attempt, 0.9), milliseconds(10'000)) << attempt;
  }
}

TEST(XdsBackoff, ZerosMeanJpillorasDefaults) {
  EXPECT_EQ(XdsBackoffDelay(Backoff(0, 0, 0, false), 0, 0), milliseconds(100));
  EXPECT_EQ(XdsBackoffDelay(Backoff(0, 0, 0, false), 1, 0), milliseconds(200));  // factor 2
  EXPECT_EQ(XdsBackoffDelay(Backoff(0, 0, 0, false), 10, 0), milliseconds(10'000));
  EXPECT_EQ(XdsBackoffDelay(Backoff(5000, 1000, 2, false), 0, 0), milliseconds(1000));
}

TEST(XdsBackoff, NextCountsAttemptsAndResetStartsOver) {
  XdsBackoff backoff(Backoff(100, 1000, 2, false));
  EXPECT_EQ(backoff.Next(), milliseconds(100));
  EXPECT_EQ(backoff.Next(), milliseconds(200));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), milliseconds(100));
}

}  // namespace
}  // namespace sluice::server
