// CheckAll() across slots on a real Redis Cluster (3 primaries): a redis-cluster:// URL implies
// RedisStoreOptions::cluster, kRefuse refuses before Redis is asked, and kSplit sends each slot's
// script to the primary that serves it, with the bound of cross_slot_test.cc.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/key.h"
#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "src/store/redis/redis_keys.h"
#include "tests/store/redis/cluster_test_support.h"
#include "tests/testing/redis_cluster.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisCluster;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr auto kLongPeriod = std::chrono::hours(24 * 366);

Limit Window(int64_t limit) { return Limit{.limit = limit, .period = kLongPeriod}; }

class CrossSlotClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster =
        RedisCluster::Start({.primaries = 3, .replicas_per_primary = 0});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster).release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  // A store from the cluster URL alone: `cluster` is left at its default and implied by the URL.
  static std::unique_ptr<RedisStore> MakeStore(CrossSlot cross_slot) {
    absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(
        {.url = cluster_->Url(), .command_timeout = milliseconds(5000), .cross_slot = cross_slot});
    if (!store.ok()) return nullptr;
    if (!(*store)->WaitForConnection(milliseconds(10000)).ok()) return nullptr;
    return *std::move(store);
  }

  static RedisCluster* cluster_;
};

RedisCluster* CrossSlotClusterTest::cluster_ = nullptr;

TEST_F(CrossSlotClusterTest, ClusterUrlImpliesTheClusterFlag) {
  std::unique_ptr<RedisStore> refuse = MakeStore(CrossSlot::kRefuse);
  ASSERT_NE(refuse, nullptr);
  const std::vector<std::string> tags = testing::TagsOnDistinctPrimaries(*cluster_, "implied:", 2);
  ASSERT_EQ(tags.size(), 2u);
  const std::vector<LimitCheck> checks = {
      {.key = TaggedKey(tags[0], "x"), .limit = Window(10), .cost = 1},
      {.key = TaggedKey(tags[1], "x"), .limit = Window(10), .cost = 1},
  };
  // Refused by the store (InvalidArgument), not sent for Redis to answer CROSSSLOT.
  absl::StatusOr<MultiDecision> refused = refuse->CheckAll(checks);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("slot"));
  // Keys of one tag, on any primary: one atomic script.
  const std::vector<LimitCheck> one_tag = {
      {.key = TaggedKey(tags[1], "a"), .limit = Window(10), .cost = 1},
      {.key = TaggedKey(tags[1], "b"),
       .limit = {.algorithm = Algorithm::kGcra, .limit = 5, .period = std::chrono::minutes(1)},
       .cost = 1},
  };
  absl::StatusOr<MultiDecision> same = refuse->CheckAll(one_tag);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(same->allowed);
}

// Verifies kSplit on three primaries: every slot's script runs where its slot lives, the call is
// allowed only when all allowed, and denied calls spend at most their cost in the other slots.
TEST_F(CrossSlotClusterTest, SplitAcrossPrimariesKeepsTheBound) {
  std::unique_ptr<RedisStore> split = MakeStore(CrossSlot::kSplit);
  ASSERT_NE(split, nullptr);
  const std::vector<std::string> tags = testing::TagsOnDistinctPrimaries(*cluster_, "split:", 3);
  ASSERT_EQ(tags.size(), 3u);
  const std::vector<int64_t> limits = {50, 10'000, 10'000};
  std::vector<LimitCheck> checks;
  for (size_t i = 0; i < tags.size(); ++i) {
    checks.push_back(
        LimitCheck{.key = TaggedKey(tags[i], "limit"), .limit = Window(limits[i]), .cost = 1});
  }
  constexpr int kCalls = 400;
  std::atomic<int> allowed{0};
  std::atomic<int> denied{0};
  std::atomic<int> errors{0};
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      while (next.fetch_add(1) < kCalls) {
        absl::StatusOr<MultiDecision> m = split->CheckAll(checks);
        if (!m.ok()) {
          errors.fetch_add(1);
        } else {
          (m->allowed ? allowed : denied).fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(allowed.load(), limits[0]);
  EXPECT_EQ(allowed.load() + denied.load(), kCalls);
  int64_t consumed_by_denied = 0;
  for (const LimitCheck& check : checks) {
    absl::StatusOr<Decision> peek = split->Check(check.key, check.limit, 0);
    ASSERT_TRUE(peek.ok()) << peek.status();
    consumed_by_denied += check.limit.limit - peek->remaining - allowed.load();
  }
  const int64_t bound = int64_t{denied.load()} * static_cast<int64_t>(checks.size() - 1);
  EXPECT_EQ(consumed_by_denied, bound) << "the loose descriptors pay for every denied call";
  std::cout << "cross_slot=split on 3 primaries, limits 50 10000 10000, " << kCalls
            << " calls: allowed " << allowed.load() << ", denied " << denied.load()
            << ", consumed by denied calls " << consumed_by_denied << " (bound " << bound << ")\n";
}

}  // namespace
}  // namespace sluice
