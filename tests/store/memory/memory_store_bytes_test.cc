// max_bytes: the memory store bounded in bytes (issue 13, point 3), with the overflow policies of
// max_entries applied to bytes too.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include <malloc.h>
#include <unistd.h>

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"

#include "tests/store/memory/memory_store_test_util.h"
#include "tests/testing/manual_clock.h"

namespace sluice {
namespace {

using std::chrono::seconds;
using testing::CheckOk;
using testing::ManualClock;
using testing::NewStore;

constexpr Limit kTenPerHour{.limit = 10, .period = std::chrono::hours(1)};

// Sanitizer allocators keep freed blocks in quarantine (ASan: 256 MB) and report no glibc heap, so
// the process-memory checks only mean something in a plain build.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kPlainAllocator = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kPlainAllocator = false;
#else
constexpr bool kPlainAllocator = true;
#endif
#else
constexpr bool kPlainAllocator = true;
#endif

// A key of `size` bytes, unique per `i`.
std::string LongKey(size_t size, uint64_t i) {
  std::string key = absl::StrCat("descriptor:", i, ":");
  key.resize(size, 'v');
  return key;
}

// Bytes of heap in use (glibc: in the arenas plus mmapped blocks). Sanitizer builds have their
// own allocator and may report nothing, which only weakens the test.
size_t HeapBytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Resident set size of this process, from /proc/self/statm.
size_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Verifies the accounting rule and its boundary pairs: 15 bytes is inline (slot only), 16 is on
// the heap in glibc's smallest chunk, and a 4 KB descriptor costs its chunk.
TEST(MemoryStoreBytes, EntryBytesCountsTheSlotAndTheKeysHeapChunk) {
  EXPECT_EQ(MemoryStore::EntryBytes(0), 72u);
  EXPECT_EQ(MemoryStore::EntryBytes(15), 72u);
  EXPECT_EQ(MemoryStore::EntryBytes(16), 72u + 32u);
  EXPECT_EQ(MemoryStore::EntryBytes(24), 72u + 32u);
  EXPECT_EQ(MemoryStore::EntryBytes(25), 72u + 48u);
  EXPECT_EQ(MemoryStore::EntryBytes(4096), 72u + 4112u);
}

TEST(MemoryStoreBytes, StatsCountEveryEntrysBytes) {
  ManualClock clock;
  auto store = NewStore(clock);
  ASSERT_TRUE(CheckOk(*store, "short", kTenPerHour).allowed);
  ASSERT_TRUE(CheckOk(*store, LongKey(100, 1), kTenPerHour).allowed);
  ASSERT_TRUE(CheckOk(*store, LongKey(4096, 2), kTenPerHour).allowed);
  EXPECT_EQ(store->Stats().bytes, MemoryStore::EntryBytes(5) + MemoryStore::EntryBytes(100) +
                                      MemoryStore::EntryBytes(4096));
  clock.Advance(std::chrono::hours(1));
  EXPECT_EQ(store->SweepExpired(), 3u);
  EXPECT_EQ(store->Stats().bytes, 0u);
}

// Verifies issue 13's attack: unique 4 KB descriptor values, each a new key. At 16 MiB the store
// keeps evicting; its accounted bytes never pass the bound, and the heap and the process's RSS
// grow by about the bound, not by the 400 MB offered.
TEST(MemoryStoreBytes, FloodOfUniqueLongKeysStaysUnderMaxBytes) {
  constexpr size_t kMaxBytes = size_t{16} << 20;
  constexpr size_t kKeySize = 4096;
  constexpr uint64_t kKeys = 100'000;  // 400 MB of keys offered.
  ManualClock clock;
  auto store = NewStore(clock, {.max_bytes = kMaxBytes});
  const size_t heap_before = HeapBytesInUse();
  const size_t rss_before = RssBytes();
  std::string key;
  size_t max_seen = 0;
  for (uint64_t i = 0; i < kKeys; ++i) {
    key = LongKey(kKeySize, i);
    ASSERT_TRUE(CheckOk(*store, key, kTenPerHour).allowed) << i;
    if (i % 1000 == 0) max_seen = std::max(max_seen, store->Stats().bytes);
  }
  const MemoryStoreStats stats = store->Stats();
  const size_t heap_growth = HeapBytesInUse() - std::min(HeapBytesInUse(), heap_before);
  const size_t rss_growth = RssBytes() - std::min(RssBytes(), rss_before);
  EXPECT_LE(stats.bytes, kMaxBytes);
  EXPECT_LE(max_seen, kMaxBytes);
  // Nearly full: the last shard to fill is within one entry of its share.
  EXPECT_GE(stats.bytes, kMaxBytes - 64 * MemoryStore::EntryBytes(kKeySize));
  EXPECT_EQ(stats.entries + stats.evicted, kKeys);
  EXPECT_EQ(stats.denied_for_room, 0u);
  if (kPlainAllocator) {
    EXPECT_LE(heap_growth, kMaxBytes + (size_t{2} << 20)) << "heap grew by " << heap_growth;
    // Loosely: RSS also holds freed chunks malloc keeps, and the test's own pages.
    EXPECT_LE(rss_growth, 2 * kMaxBytes) << "RSS grew by " << rss_growth;
  }
  RecordProperty("entries", static_cast<int>(stats.entries));
  RecordProperty("heap_growth_bytes", static_cast<int>(heap_growth));
  RecordProperty("rss_growth_bytes", static_cast<int>(rss_growth));
}

TEST(MemoryStoreBytes, DenyNewKeysRefusesKeysThatWouldPassMaxBytes) {
  constexpr size_t kMaxBytes = 10 * 1024;  // One shard: the bound is exact.
  ManualClock clock;
  auto store = NewStore(clock, {.max_bytes = kMaxBytes,
                                .overflow_policy = OverflowPolicy::kDenyNewKeys,
                                .sweep_interval = std::chrono::hours(1)});
  // Each 1000-byte key counts 72 + 1008 = 1080 bytes: 9 fit in 10240.
  int admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += CheckOk(*store, LongKey(1000, i), kTenPerHour).allowed;
  EXPECT_EQ(admitted, 9);
  MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.bytes, 9 * MemoryStore::EntryBytes(1000));
  EXPECT_EQ(stats.denied_for_room, 11u);
  EXPECT_EQ(stats.evicted, 0u);
  // Keys already present keep working; a short key still fits in what is left (10240 - 9720).
  EXPECT_TRUE(CheckOk(*store, LongKey(1000, 0), kTenPerHour).allowed);
  EXPECT_TRUE(CheckOk(*store, "short", kTenPerHour).allowed);
  EXPECT_LE(store->Stats().bytes, kMaxBytes);
}

// Verifies that a long key takes the room of as many short entries as it needs.
TEST(MemoryStoreBytes, LongKeyEvictsAsManyEntriesAsItNeeds) {
  constexpr size_t kMaxBytes = 100 * MemoryStore::kEntryOverheadBytes;
  ManualClock clock;
  auto store = NewStore(clock, {.max_bytes = kMaxBytes, .sweep_interval = std::chrono::hours(1)});
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(CheckOk(*store, absl::StrCat("k", i), kTenPerHour).allowed);
  EXPECT_EQ(store->Stats().bytes, kMaxBytes);
  ASSERT_TRUE(CheckOk(*store, LongKey(1000, 0), kTenPerHour).allowed);
  const MemoryStoreStats stats = store->Stats();
  EXPECT_LE(stats.bytes, kMaxBytes);
  // 1080 bytes need 15 slots' worth of 72.
  EXPECT_EQ(stats.evicted, 15u);
  EXPECT_EQ(stats.entries, 86u);
}

TEST(MemoryStoreBytes, KeyLongerThanTheBoundIsDeniedWithoutEvictingAnything) {
  ManualClock clock;
  auto store = NewStore(clock, {.max_bytes = 4096});
  ASSERT_TRUE(CheckOk(*store, "a", kTenPerHour).allowed);
  const Decision d = CheckOk(*store, LongKey(5000, 1), kTenPerHour);
  EXPECT_FALSE(d.allowed);
  const MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.evicted, 0u);
  EXPECT_EQ(stats.denied_for_room, 1u);
}

// Verifies CheckAll() reserves bytes for all its new keys at once: all-or-nothing under
// kDenyNewKeys, and evicting for every new key under kEvictSoonestExpiring.
TEST(MemoryStoreBytes, CheckAllReservesBytesForItsNewKeys) {
  constexpr size_t kMaxBytes = 3 * MemoryStore::EntryBytes(1000);
  for (OverflowPolicy policy :
       {OverflowPolicy::kDenyNewKeys, OverflowPolicy::kEvictSoonestExpiring}) {
    ManualClock clock;
    auto store = NewStore(clock, {.max_bytes = kMaxBytes,
                                  .overflow_policy = policy,
                                  .sweep_interval = std::chrono::hours(1)});
    ASSERT_TRUE(CheckOk(*store, LongKey(1000, 1), kTenPerHour).allowed);
    ASSERT_TRUE(CheckOk(*store, LongKey(1000, 2), kTenPerHour).allowed);
    const std::string a = LongKey(1000, 3);
    const std::string b = LongKey(1000, 4);
    const std::vector<LimitCheck> checks = {{.key = a, .limit = kTenPerHour, .cost = 1},
                                            {.key = b, .limit = kTenPerHour, .cost = 1}};
    absl::StatusOr<MultiDecision> result = store->CheckAll(checks);
    ASSERT_TRUE(result.ok()) << result.status();
    const MemoryStoreStats stats = store->Stats();
    EXPECT_LE(stats.bytes, kMaxBytes);
    if (policy == OverflowPolicy::kDenyNewKeys) {
      EXPECT_FALSE(result->allowed);  // Only one of the two fits: nothing is recorded.
      EXPECT_EQ(stats.entries, 2u);
    } else {
      EXPECT_TRUE(result->allowed);
      EXPECT_EQ(stats.entries, 3u);
      EXPECT_EQ(stats.evicted, 1u);
    }
  }
}

TEST(MemoryStoreBytes, RefusesMaxBytesBelowOneEntry) {
  absl::StatusOr<std::unique_ptr<MemoryStore>> store = MemoryStore::Create({.max_bytes = 71});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.status().message(), "max_bytes: must be at least 72, got 71");
  EXPECT_TRUE(MemoryStore::Create({.max_bytes = 72}).ok());
}

}  // namespace
}  // namespace sluice
