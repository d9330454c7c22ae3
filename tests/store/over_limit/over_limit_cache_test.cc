// OverLimitCache: bounded in entries and in bytes (issue 13, point 3).
#include "src/store/over_limit/over_limit_cache.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace sluice::internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using TimePoint = std::chrono::steady_clock::time_point;

std::string LongKey(size_t size, int i) {
  std::string key = absl::StrCat("k", i, ":");
  key.resize(size, 'v');
  return key;
}

TEST(OverLimitCache, AnswersForTheDeniedCostUntilRetryAfter) {
  OverLimitCache cache(100, OverLimitCache::kDefaultMaxBytes, seconds(10));
  const TimePoint t0{seconds(1000)};
  cache.Add("k", 10, 1, t0, seconds(2));
  EXPECT_TRUE(cache.IsOver("k", 10, 1, t0 + milliseconds(1999)));
  EXPECT_FALSE(cache.IsOver("k", 10, 1, t0 + seconds(2)));
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

// Verifies the default bound on an entry's life (a credit through another instance is seen within
// it) and that a cached answer still reports the denial's own retry_after; Forget() drops an entry.
TEST(OverLimitCache, EntriesLiveAtMostOneSecondAndReportTheirRetryAfter) {
  OverLimitCache cache(100);
  const TimePoint t0{seconds(1000)};
  cache.Add("k", 10, 1, t0, seconds(60));
  std::optional<OverLimitCache::Over> over = cache.Lookup("k", 10, 1, t0 + milliseconds(999));
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->retry_after, std::chrono::microseconds(seconds(60) - milliseconds(999)));
  EXPECT_FALSE(cache.IsOver("k", 10, 1, t0 + seconds(1)));
  cache.Add("k", 10, 1, t0, seconds(60));
  cache.Forget("k");
  EXPECT_FALSE(cache.IsOver("k", 10, 1, t0));
  EXPECT_EQ(cache.bytes(), 0u);
}

// Verifies the byte bound with 4 KB keys: the cache stops at max_bytes although max_entries
// would allow far more, and counts exactly what it holds.
TEST(OverLimitCache, UniqueLongKeysStopAtMaxBytes) {
  constexpr size_t kMaxBytes = 1 << 20;
  OverLimitCache cache(1'000'000, kMaxBytes);
  const TimePoint t0{seconds(1000)};
  for (int i = 0; i < 10'000; ++i) cache.Add(LongKey(4096, i), 10, 1, t0, seconds(60));
  const size_t per_entry = OverLimitCache::EntryBytes(LongKey(4096, 0));
  EXPECT_EQ(per_entry, 4096u + OverLimitCache::kEntryOverheadBytes);
  EXPECT_EQ(cache.entries(), kMaxBytes / per_entry);
  EXPECT_EQ(cache.bytes(), cache.entries() * per_entry);
  EXPECT_LE(cache.bytes(), kMaxBytes);
  // Entries in the cache still answer; one that did not fit was never cached.
  EXPECT_TRUE(cache.IsOver(LongKey(4096, 0), 10, 1, t0));
  EXPECT_FALSE(cache.IsOver(LongKey(4096, 9'999), 10, 1, t0));
}

// Verifies a full cache reclaims expired entries, but sweeps at most once per
// kFullSweepInterval.
TEST(OverLimitCache, FullCacheSweepsExpiredEntriesAtMostOncePerInterval) {
  OverLimitCache cache(2);
  const TimePoint t0{seconds(1000)};
  cache.Add("a", 10, 1, t0, milliseconds(10));
  cache.Add("b", 10, 1, t0, seconds(60));
  cache.Add("c", 10, 1, t0 + milliseconds(5), seconds(60));  // Full; sweeps, a is live: dropped.
  EXPECT_FALSE(cache.IsOver("c", 10, 1, t0 + milliseconds(5)));
  // a has expired, but the last sweep was 15 ms ago: dropped again without a sweep.
  cache.Add("c", 10, 1, t0 + milliseconds(20), seconds(60));
  EXPECT_FALSE(cache.IsOver("c", 10, 1, t0 + milliseconds(20)));
  cache.Add("c", 10, 1, t0 + milliseconds(105), seconds(60));
  EXPECT_TRUE(cache.IsOver("c", 10, 1, t0 + milliseconds(105)));
  EXPECT_EQ(cache.entries(), 2u);
}

TEST(OverLimitCache, KeyLongerThanMaxBytesIsNeverCached) {
  OverLimitCache cache(10, 1000);
  const TimePoint t0{seconds(1000)};
  cache.Add(LongKey(2000, 1), 10, 1, t0, seconds(60));
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

}  // namespace
}  // namespace sluice::internal
