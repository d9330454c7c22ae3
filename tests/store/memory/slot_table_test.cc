#include "src/store/memory/slot_table.h"

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "src/store/memory/key_probe.h"
#include "src/store/memory/slot.h"

namespace sluice::internal {
namespace {

constexpr uint64_t kSeed = 0x1234'5678'9abc'def0;

KeyProbe Probe(std::string_view key) { return MakeKeyProbe(key, kSeed); }

TEST(KeyProbe, InlineUpToFifteenBytes) {
  EXPECT_TRUE(Probe(std::string(15, 'k')).is_inline());
  EXPECT_FALSE(Probe(std::string(16, 'k')).is_inline());
}

// Verifies that the overlapping loads put every byte of every inline length where SlotKey() reads
// it back, and that no length is mistaken for another.
TEST(KeyProbe, InlineFormRoundTripsEveryLength) {
  const std::string source = "abcdefghijklmnopqrstuvwxyz";
  for (size_t n = 1; n <= kMaxInlineKeySize; ++n) {
    const std::string key = source.substr(n, n);
    const KeyProbe probe = Probe(key);
    Slot slot{};
    AssignKey(slot, probe);
    EXPECT_EQ(SlotKey(slot), key) << n;
    EXPECT_TRUE(KeyEquals(slot, probe)) << n;
    EXPECT_EQ(SlotHash(slot, kSeed), probe.hash) << n;
    EXPECT_FALSE(KeyEquals(slot, Probe(key + "x"))) << n;
    ReleaseSlot(slot);
  }
}

TEST(KeyProbe, TrailingZeroByteMakesADifferentKey) {
  const std::string with_zero("a\0", 2);
  Slot slot{};
  AssignKey(slot, Probe("a"));
  EXPECT_FALSE(KeyEquals(slot, Probe(with_zero)));
  EXPECT_NE(Probe("a").hash, Probe(with_zero).hash);
  ReleaseSlot(slot);
}

TEST(KeyProbe, LongKeyIsCopiedAndCompared) {
  std::string key = "tenant:acme:user:1234567890";
  Slot slot{};
  AssignKey(slot, Probe(key));
  const std::string original = key;
  key[0] = 'X';  // The slot owns its copy.
  EXPECT_EQ(SlotKey(slot), original);
  EXPECT_TRUE(KeyEquals(slot, Probe(original)));
  EXPECT_FALSE(KeyEquals(slot, Probe(key)));
  EXPECT_EQ(SlotHash(slot, kSeed), Probe(original).hash);
  ReleaseSlot(slot);
}

TEST(SlotTable, EmptyTableFindsNothing) {
  SlotTable table(kSeed, 100);
  EXPECT_EQ(table.Find(Probe("a")), nullptr);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.capacity(), 0u);
}

TEST(SlotTable, InsertThenFind) {
  SlotTable table(kSeed, 100);
  Slot* slot = table.Insert(Probe("user:1"));
  slot->state0 = 7;
  ASSERT_NE(table.Find(Probe("user:1")), nullptr);
  EXPECT_EQ(table.Find(Probe("user:1"))->state0, 7);
  EXPECT_EQ(table.Find(Probe("user:2")), nullptr);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.capacity(), SlotTable::kMinCapacity);
}

// Verifies the table against a std::unordered_map over random inserts and erases of short and long
// keys, through growth, deleted markers and compaction.
TEST(SlotTable, MatchesAModelUnderRandomOperations) {
  SlotTable table(kSeed, 1 << 20);
  std::unordered_map<std::string, int64_t> model;
  std::mt19937_64 rng(42);
  for (int step = 0; step < 200'000; ++step) {
    const uint64_t id = rng() % 5'000;
    const std::string key = id % 3 == 0 ? absl::StrCat("a-long-key-prefix:", id) : absl::StrCat(id);
    const KeyProbe probe = Probe(key);
    Slot* slot = table.Find(probe);
    const auto it = model.find(key);
    ASSERT_EQ(slot != nullptr, it != model.end()) << key;
    if (slot != nullptr) {
      ASSERT_EQ(slot->state0, it->second);
      if (rng() % 2 == 0) {
        table.EraseAt(table.IndexOf(slot));
        model.erase(it);
      }
    } else {
      table.Insert(probe)->state0 = step;
      model[key] = step;
    }
    ASSERT_EQ(table.size(), model.size());
  }
  for (const auto& [key, value] : model) {
    const Slot* slot = table.Find(Probe(key));
    ASSERT_NE(slot, nullptr) << key;
    EXPECT_EQ(slot->state0, value);
  }
}

// Verifies the 1.5x growth that bounds memory: the load never exceeds 7/8 and, once the table is
// past its minimum size, never falls below 7/12 while keys are only added.
TEST(SlotTable, GrowsByHalfKeepingLoadBetweenSevenTwelfthsAndSevenEighths) {
  SlotTable table(kSeed, 1 << 20);
  size_t capacity = 0;
  for (int i = 0; i < 100'000; ++i) {
    table.Insert(Probe(absl::StrCat("k", i)));
    const double load = static_cast<double>(table.size()) / static_cast<double>(table.capacity());
    EXPECT_LE(load, 7.0 / 8.0);
    if (table.capacity() != capacity) {
      if (capacity != 0) {
        EXPECT_GE(load, 7.0 / 12.0 - 0.01) << table.capacity();
        EXPECT_LE(table.capacity(), capacity * 3 / 2 + 2);
      }
      capacity = table.capacity();
    }
  }
}

TEST(SlotTable, NeverGrowsPastWhatMaxSizeNeeds) {
  SlotTable table(kSeed, 1000);
  for (int i = 0; i < 1000; ++i) table.Insert(Probe(absl::StrCat("k", i)));
  EXPECT_LE(table.capacity(), 1000 * 9 / 8 * 8 / 7 + 2);
}

// Verifies that erase-insert churn at a constant size reuses slots instead of growing the table.
TEST(SlotTable, ChurnAtConstantSizeDoesNotGrow) {
  SlotTable table(kSeed, 1000);
  for (int i = 0; i < 1000; ++i) table.Insert(Probe(absl::StrCat("k", i)));
  const size_t capacity = table.capacity();
  for (int i = 1000; i < 50'000; ++i) {
    Slot* old = table.Find(Probe(absl::StrCat("k", i - 1000)));
    ASSERT_NE(old, nullptr);
    table.EraseAt(table.IndexOf(old));
    table.Insert(Probe(absl::StrCat("k", i)));
  }
  EXPECT_EQ(table.size(), 1000u);
  EXPECT_EQ(table.capacity(), capacity);
  for (int i = 49'000; i < 50'000; ++i) EXPECT_NE(table.Find(Probe(absl::StrCat("k", i))), nullptr);
}

TEST(SlotTable, ShrinksWhenSparseAndFreesWhenEmpty) {
  SlotTable table(kSeed, 1 << 20);
  for (int i = 0; i < 10'000; ++i) table.Insert(Probe(absl::StrCat("k", i)));
  const size_t full_capacity = table.capacity();
  for (int i = 0; i < 9'900; ++i) {
    table.EraseAt(table.IndexOf(table.Find(Probe(absl::StrCat("k", i)))));
  }
  table.ShrinkIfSparse();
  EXPECT_LT(table.capacity(), full_capacity / 10);
  for (int i = 9'900; i < 10'000; ++i) EXPECT_NE(table.Find(Probe(absl::StrCat("k", i))), nullptr);
  for (int i = 9'900; i < 10'000; ++i) {
    table.EraseAt(table.IndexOf(table.Find(Probe(absl::StrCat("k", i)))));
  }
  table.ShrinkIfSparse();
  EXPECT_EQ(table.capacity(), 0u);
  EXPECT_EQ(table.allocated_bytes(), 0u);
}

TEST(SlotTable, AllocatesFortyOneBytesPerSlot) {
  SlotTable table(kSeed, 1 << 20);
  for (int i = 0; i < 100'000; ++i) table.Insert(Probe(absl::StrCat("k", i)));
  const double per_slot =
      static_cast<double>(table.allocated_bytes()) / static_cast<double>(table.capacity());
  EXPECT_NEAR(per_slot, 41.0, 0.01);
}

}  // namespace
}  // namespace sluice::internal
