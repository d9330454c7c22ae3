#include "src/server/dashboard/space_saving.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace sluice::server {
namespace {

TEST(SpaceSavingTest, CountsExactlyWhileThereIsRoom) {
  SpaceSaving top({.capacity = 4, .max_key_bytes = 16});
  top.Add("a", 1, 1000, {});
  top.Add("b", 1, 2000, {});
  top.Add("a", 2, 3000, {.requests_per_unit = 7});
  const std::vector<SpaceSaving::Entry> rows = top.Top(10);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "a");
  EXPECT_EQ(rows[0].count, 3u);
  EXPECT_EQ(rows[0].error, 0u);
  EXPECT_EQ(rows[0].since_ms, 1000);
  EXPECT_EQ(rows[0].tag.requests_per_unit, 7u);
  EXPECT_EQ(rows[1].key, "b");
  EXPECT_EQ(top.total(), 4u);
}

TEST(SpaceSavingTest, ANewKeyTakesTheSmallestCounterAndItsCountAsError) {
  SpaceSaving top({.capacity = 2, .max_key_bytes = 16});
  top.Add("a", 5, 1, {});
  top.Add("b", 2, 2, {});
  top.Add("c", 1, 3, {});  // replaces b (2): count 3, error 2
  const std::vector<SpaceSaving::Entry> rows = top.Top(2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "a");
  EXPECT_EQ(rows[1].key, "c");
  EXPECT_EQ(rows[1].count, 3u);
  EXPECT_EQ(rows[1].error, 2u);
  EXPECT_EQ(rows[1].since_ms, 3);
  EXPECT_EQ(top.SinceOf("b"), 0);
}

TEST(SpaceSavingTest, CutsLongKeysAndFlagsThem) {
  SpaceSaving top({.capacity = 2, .max_key_bytes = 8});
  top.Add(std::string(1000, 'x'), 1, 1, {});
  top.Add(std::string(2000, 'x'), 1, 1, {});  // the same 8 bytes: the same counter
  const std::vector<SpaceSaving::Entry> rows = top.Top(2);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].key, std::string(8, 'x'));
  EXPECT_TRUE(rows[0].truncated);
  EXPECT_EQ(rows[0].count, 2u);
}

TEST(SpaceSavingTest, MemoryIsFixedWhateverTheKeys) {
  SpaceSaving top({.capacity = 64, .max_key_bytes = 128});
  const size_t before = top.MemoryBytes();
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200'000; ++i) {
    top.Add(std::string(static_cast<size_t>(rng() % 4000), 'a' + static_cast<char>(rng() % 26)) +
                std::to_string(rng()),
            1, i, {});
  }
  EXPECT_EQ(top.MemoryBytes(), before);
  EXPECT_LT(before, size_t{64} * 1024);  // 64 counters of 128-byte keys and their index
  EXPECT_EQ(top.size(), 64u);
  top.Clear();
  EXPECT_EQ(top.size(), 0u);
  EXPECT_EQ(top.MemoryBytes(), before);
}

// Zipf(1.1) traffic over 100,000 keys: the table of 256 finds the true top 20, in order, and each
// count is within its error bound and within N / capacity of the truth.
TEST(SpaceSavingTest, FindsTheHeavyHittersOfZipfTraffic) {
  constexpr int kKeys = 100'000;
  constexpr int kEvents = 1'000'000;
  std::vector<double> cdf(kKeys);
  double sum = 0;
  for (int i = 0; i < kKeys; ++i) cdf[i] = (sum += 1.0 / std::pow(i + 1, 1.1));
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, sum);
  SpaceSaving top({.capacity = 256, .max_key_bytes = 32});
  absl::flat_hash_map<std::string, uint64_t> exact;
  for (int e = 0; e < kEvents; ++e) {
    const auto rank = std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin();
    const std::string key = "user:" + std::to_string(rank);
    top.Add(key, 1, e, {});
    ++exact[key];
  }
  std::vector<std::pair<uint64_t, std::string>> truth;
  for (const auto& [k, c] : exact) truth.emplace_back(c, k);
  std::sort(truth.rbegin(), truth.rend());
  const std::vector<SpaceSaving::Entry> rows = top.Top(20);
  ASSERT_EQ(rows.size(), 20u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].key, truth[i].second) << "rank " << i;
    const uint64_t real = exact[rows[i].key];
    EXPECT_GE(rows[i].count, real);
    EXPECT_LE(rows[i].count - rows[i].error, real);
    EXPECT_LE(rows[i].count - real, uint64_t{kEvents} / 256);
  }
}

}  // namespace
}  // namespace sluice::server
