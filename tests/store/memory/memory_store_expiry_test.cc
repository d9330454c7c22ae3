// Expiry in the memory store: lazy on access, by the incremental sweep, and by SweepExpired().
#include <chrono>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"

#include "tests/store/memory/memory_store_test_util.h"
#include "tests/testing/manual_clock.h"

namespace sluice {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CheckOk;
using testing::ManualClock;
using testing::NewStore;
using testing::Peek;

constexpr auto kNoSweep = std::chrono::hours(1);

TEST(MemoryStoreExpiry, LazyExpiryRemovesAnEntryExactlyAtItsExpiry) {
  ManualClock clock;
  auto store = NewStore(clock, {.sweep_interval = kNoSweep});
  const Limit limit{.limit = 1, .period = seconds(1)};
  EXPECT_TRUE(CheckOk(*store, "k", limit).allowed);
  clock.Advance(milliseconds(999));
  EXPECT_EQ(Peek(*store, "k", limit).remaining, 0);
  EXPECT_EQ(store->Stats().entries, 1u);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(Peek(*store, "k", limit).remaining, 1);
  const MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 0u);
  EXPECT_EQ(stats.expired, 1u);
}

// Verifies that each algorithm's entry lives exactly until now + reset_after of the check that
// last recorded on it (docs/algorithms.md: it is equivalent to no state from then on).
TEST(MemoryStoreExpiry, EntryExpiresAtNowPlusResetAfterForEveryAlgorithm) {
  for (int a = 0; a < kAlgorithmCount; ++a) {
    const auto algorithm = static_cast<Algorithm>(a);
    ManualClock clock;
    auto store = NewStore(clock, {.sweep_interval = kNoSweep});
    Limit limit{.algorithm = algorithm, .limit = 3, .period = milliseconds(700)};
    if (algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) limit.burst = 2;
    clock.Advance(microseconds(123'457));
    const Decision first = CheckOk(*store, "k", limit);
    clock.Advance(milliseconds(50));
    const Decision last = CheckOk(*store, "k", limit);
    ASSERT_TRUE(first.allowed && last.allowed) << Describe(limit);
    clock.Advance(last.reset_after - microseconds(1));
    EXPECT_EQ(store->SweepExpired(), 0u) << Describe(limit);
    clock.Advance(microseconds(1));
    EXPECT_EQ(store->SweepExpired(), 1u) << Describe(limit);
    EXPECT_EQ(store->Stats().entries, 0u);
  }
}

// Verifies that a check sweeps its shard once sweep_interval has passed since the store was made
// (999 ms: not yet; 1000 ms: swept), without touching the expired keys themselves.
TEST(MemoryStoreExpiry, CheckSweepsItsShardOnceTheIntervalHasPassed) {
  ManualClock clock;
  auto store = NewStore(clock, {.sweep_interval = seconds(1), .shards = 1});
  const Limit short_lived{.limit = 5, .period = milliseconds(100)};
  const Limit long_lived{.limit = 5, .period = seconds(100)};
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(CheckOk(*store, absl::StrCat("k", i), short_lived).allowed);
  }
  EXPECT_TRUE(CheckOk(*store, "anchor", long_lived).allowed);
  clock.Advance(milliseconds(999));
  EXPECT_TRUE(CheckOk(*store, "anchor", long_lived).allowed);
  EXPECT_EQ(store->Stats().entries, 11u);
  clock.Advance(milliseconds(1));
  EXPECT_TRUE(CheckOk(*store, "anchor", long_lived).allowed);
  const MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.expired, 10u);
}

// Verifies that a due sweep is spread over several checks (each examines a bounded number of slots)
// and that the next pass waits for another sweep_interval.
TEST(MemoryStoreExpiry, SweepIsIncrementalAndThenWaitsForTheNextInterval) {
  ManualClock clock;
  auto store = NewStore(clock, {.sweep_interval = seconds(1), .shards = 1});
  const Limit short_lived{.limit = 5, .period = milliseconds(100)};
  const Limit long_lived{.limit = 1'000'000, .period = seconds(100)};
  constexpr size_t kKeys = 5000;
  for (size_t i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(CheckOk(*store, absl::StrCat("k", i), short_lived).allowed);
  }
  ASSERT_TRUE(CheckOk(*store, "anchor", long_lived).allowed);
  clock.Advance(seconds(1));
  ASSERT_TRUE(CheckOk(*store, "anchor", long_lived).allowed);
  const size_t after_one = store->Stats().entries;
  EXPECT_LT(after_one, kKeys + 1);  // Some swept...
  EXPECT_GT(after_one, 1u);         // ...but not all by one check.
  int checks = 1;
  while (store->Stats().entries > 1 && checks < 1000) {
    ASSERT_TRUE(CheckOk(*store, "anchor", long_lived).allowed);
    ++checks;
  }
  EXPECT_EQ(store->Stats().entries, 1u);
  EXPECT_EQ(store->Stats().expired, kKeys);
  EXPECT_LE(checks, 100);

  // The pass is complete: new expired keys wait for the next interval.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(CheckOk(*store, absl::StrCat("late", i), short_lived).allowed);
  }
  clock.Advance(milliseconds(999));
  ASSERT_TRUE(CheckOk(*store, "anchor", long_lived).allowed);
  EXPECT_EQ(store->Stats().entries, 11u);
  clock.Advance(milliseconds(1));
  ASSERT_TRUE(CheckOk(*store, "anchor", long_lived).allowed);
  EXPECT_EQ(store->Stats().entries, 1u);
}

TEST(MemoryStoreExpiry, SweepExpiredRemovesExpiredEntriesOfEveryShard) {
  ManualClock clock;
  auto store = NewStore(clock, {.sweep_interval = kNoSweep});
  const Limit short_lived{.limit = 5, .period = seconds(1)};
  const Limit long_lived{.limit = 5, .period = seconds(100)};
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(CheckOk(*store, absl::StrCat("short", i), short_lived).allowed);
    ASSERT_TRUE(CheckOk(*store, absl::StrCat("long", i), long_lived).allowed);
  }
  clock.Advance(milliseconds(999));
  EXPECT_EQ(store->SweepExpired(), 0u);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(store->SweepExpired(), 1000u);
  const MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 1000u);
  EXPECT_EQ(stats.expired, 1000u);
  EXPECT_EQ(store->SweepExpired(), 0u);
}

// Verifies that entries owning memory (long keys, sliding logs) release it on every path out of the
// store: lazy expiry, the sweep, and the store's destruction. LeakSanitizer checks this in the
// sanitizer build.
TEST(MemoryStoreExpiry, ExpiryReleasesLongKeysAndSlidingLogs) {
  ManualClock clock;
  auto store = NewStore(clock, {.sweep_interval = seconds(1), .shards = 1});
  const Limit log{.algorithm = Algorithm::kSlidingLog, .limit = 10, .period = milliseconds(100)};
  const std::string prefix = "a-key-longer-than-fifteen-bytes:";
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(CheckOk(*store, absl::StrCat(prefix, i), log, 3).allowed);
  }
  clock.Advance(milliseconds(100));
  EXPECT_EQ(Peek(*store, absl::StrCat(prefix, 0), log).remaining, 10);  // Lazy.
  clock.Advance(milliseconds(900));
  ASSERT_TRUE(CheckOk(*store, absl::StrCat(prefix, "kept"), log).allowed);  // Sweeps.
  EXPECT_EQ(store->Stats().entries, 1u);
  EXPECT_EQ(store->Stats().expired, 100u);
}

}  // namespace
}  // namespace sluice
