// max_entries and the two overflow policies of the memory store.
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

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CheckOk;
using testing::ManualClock;
using testing::NewStore;
using testing::Peek;

// A limit whose one admitted request expires after `period`.
Limit OnePer(std::chrono::microseconds period) {
  return Limit{.algorithm = Algorithm::kTokenBucket, .limit = 1, .period = period};
}

// With max_entries below the sample size, the sample is the whole store, so the choice is exact.
TEST(MemoryStoreOverflow, EvictsTheEntryThatExpiresSoonest) {
  ManualClock clock;
  auto store = NewStore(clock, {.max_entries = 3, .sweep_interval = std::chrono::hours(1)});
  EXPECT_TRUE(CheckOk(*store, "a", OnePer(seconds(3))).allowed);
  EXPECT_TRUE(CheckOk(*store, "b", OnePer(seconds(1))).allowed);
  EXPECT_TRUE(CheckOk(*store, "c", OnePer(seconds(2))).allowed);
  EXPECT_TRUE(CheckOk(*store, "d", OnePer(seconds(4))).allowed);
  MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.evicted, 1u);
  EXPECT_EQ(Peek(*store, "b", OnePer(seconds(1))).remaining, 1);  // Evicted: starts from empty.
  EXPECT_EQ(Peek(*store, "a", OnePer(seconds(3))).remaining, 0);
  EXPECT_EQ(Peek(*store, "c", OnePer(seconds(2))).remaining, 0);
  EXPECT_EQ(Peek(*store, "d", OnePer(seconds(4))).remaining, 0);
  EXPECT_TRUE(CheckOk(*store, "b", OnePer(seconds(1))).allowed);  // Now c goes.
  EXPECT_EQ(Peek(*store, "c", OnePer(seconds(2))).remaining, 1);
  stats = store->Stats();
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.evicted, 2u);
  EXPECT_EQ(stats.denied_for_room, 0u);
}

TEST(MemoryStoreOverflow, DenyNewKeysTakesTheRoomOfAnExpiredEntry) {
  ManualClock clock;
  auto store = NewStore(clock, {.max_entries = 2,
                                .overflow_policy = OverflowPolicy::kDenyNewKeys,
                                .sweep_interval = std::chrono::hours(1)});
  EXPECT_TRUE(CheckOk(*store, "a", OnePer(seconds(1))).allowed);
  EXPECT_TRUE(CheckOk(*store, "b", OnePer(seconds(2))).allowed);
  clock.Advance(seconds(1) - std::chrono::microseconds(1));
  EXPECT_FALSE(CheckOk(*store, "c", OnePer(seconds(1))).allowed);
  clock.Advance(std::chrono::microseconds(1));
  EXPECT_TRUE(CheckOk(*store, "c", OnePer(seconds(1))).allowed);  // No sweep ran: a is reclaimed.
  const MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.expired, 1u);
  EXPECT_EQ(stats.denied_for_room, 1u);
}

TEST(MemoryStoreOverflow, ReclaimsAnExpiredEntryBeforeEvicting) {
  ManualClock clock;
  auto store = NewStore(clock, {.max_entries = 3, .sweep_interval = std::chrono::hours(1)});
  EXPECT_TRUE(CheckOk(*store, "a", OnePer(seconds(1))).allowed);
  EXPECT_TRUE(CheckOk(*store, "b", OnePer(seconds(2))).allowed);
  EXPECT_TRUE(CheckOk(*store, "c", OnePer(seconds(3))).allowed);
  clock.Advance(seconds(1));
  EXPECT_TRUE(CheckOk(*store, "d", OnePer(seconds(3))).allowed);
  const MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.expired, 1u);
  EXPECT_EQ(stats.evicted, 0u);
  EXPECT_EQ(Peek(*store, "b", OnePer(seconds(2))).remaining, 0);
}

TEST(MemoryStoreOverflow, DenyNewKeysRefusesNewKeysUntilRoomFreesUp) {
  ManualClock clock;
  auto store = NewStore(clock, {.max_entries = 2,
                                .overflow_policy = OverflowPolicy::kDenyNewKeys,
                                .sweep_interval = milliseconds(500)});
  EXPECT_TRUE(CheckOk(*store, "a", OnePer(seconds(1))).allowed);
  EXPECT_TRUE(CheckOk(*store, "b", OnePer(seconds(1))).allowed);
  EXPECT_EQ(CheckOk(*store, "c", OnePer(seconds(1))), (Decision{.allowed = false,
                                                                .limit = 1,
                                                                .remaining = 0,
                                                                .reset_after = milliseconds(500),
                                                                .retry_after = milliseconds(500),
                                                                .from_fallback = false}));
  EXPECT_EQ(store->Stats().denied_for_room, 1u);
  // Keys already present keep working; a peek needs no room; a cost above capacity is denied by
  // the algorithm, not for room.
  EXPECT_FALSE(CheckOk(*store, "a", OnePer(seconds(1))).allowed);
  EXPECT_EQ(Peek(*store, "c", OnePer(seconds(1))).remaining, 1);
  EXPECT_EQ(CheckOk(*store, "c", OnePer(seconds(1)), 2).retry_after, Decision::kNever);
  MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.denied_for_room, 1u);
  EXPECT_EQ(stats.evicted, 0u);

  clock.Advance(seconds(1));  // a and b expire; the sweep that c's check runs frees their room.
  EXPECT_TRUE(CheckOk(*store, "c", OnePer(seconds(1))).allowed);
  stats = store->Stats();
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.expired, 2u);
  EXPECT_EQ(stats.denied_for_room, 1u);
}

// Verifies that the per-shard shares add up to max_entries exactly: a full store of many shards
// holds max_entries, and every further new key costs an eviction (or a denial).
TEST(MemoryStoreOverflow, ShardSharesBoundTheWholeStore) {
  for (const OverflowPolicy policy :
       {OverflowPolicy::kEvictSoonestExpiring, OverflowPolicy::kDenyNewKeys}) {
    ManualClock clock;
    auto store = NewStore(clock, {.max_entries = 10'000, .overflow_policy = policy});
    const Limit limit{.limit = 1, .period = seconds(10)};
    for (int i = 0; i < 40'000; ++i) {
      ASSERT_TRUE(CheckOk(*store, absl::StrCat("k", i), limit).limit);
    }
    const MemoryStoreStats stats = store->Stats();
    EXPECT_EQ(stats.entries, 10'000u);
    if (policy == OverflowPolicy::kEvictSoonestExpiring) {
      EXPECT_EQ(stats.evicted, 30'000u);
    } else {
      EXPECT_EQ(stats.denied_for_room, 30'000u);
    }
  }
}

}  // namespace
}  // namespace sluice
