// Leases on a real Redis Cluster (3 primaries, 1 replica each; docs/redis.md, "Leases"): leased
// stores (redis-cluster://...?lease=true) on keys of all three primaries keep each algorithm's
// exact-mode bound and admit nearly all of it, mostly from memory; a multi-limit check within one
// slot is leased all-or-nothing; a multi-limit check across slots is decided by the exact path,
// refused or split as the store's cross_slot says, and never leased.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/key.h"
#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/store/redis/redis_keys.h"
#include "tests/store/redis/cluster_test_support.h"
#include "tests/store/redis/lease_test_support.h"
#include "tests/testing/redis_cluster.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisCluster;
using std::chrono::milliseconds;

constexpr milliseconds kTimeout{5000};
// Windows of a year (no boundary inside a test: windows align to epoch multiples), buckets of a
// day (refilling under one unit in the seconds a test takes).
constexpr auto kYear = std::chrono::hours(24 * 366);
constexpr auto kDay = std::chrono::hours(24);

Limit LimitOf(Algorithm algorithm, int64_t limit) {
  return Limit{.algorithm = algorithm,
               .limit = limit,
               .period = testing::IsBucket(algorithm) ? std::chrono::microseconds(kDay)
                                                      : std::chrono::microseconds(kYear)};
}

class RedisLeaseClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster =
        RedisCluster::Start({.primaries = 3, .replicas_per_primary = 1});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster).release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static std::unique_ptr<RedisStore> MakeStore(bool lease,
                                               CrossSlot cross_slot = CrossSlot::kRefuse) {
    absl::StatusOr<std::unique_ptr<RedisStore>> store =
        RedisStore::Create({.url = cluster_->Url() + (lease ? "?lease=true" : ""),
                            .command_timeout = kTimeout,
                            .cross_slot = cross_slot});
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    const absl::Status ready = (*store)->WaitForConnection(milliseconds(10000));
    EXPECT_TRUE(ready.ok()) << ready;
    if (!ready.ok()) return nullptr;
    return *std::move(store);
  }

  static RedisCluster* cluster_;
};

RedisCluster* RedisLeaseClusterTest::cluster_ = nullptr;

// Four instances (four leased stores, as four processes would have) offer ten times the limit of
// 15 keys, one per algorithm on each primary: per key, the exact-mode bound kept and at least
// 98 % of it admitted; most decisions never reach Redis.
TEST_F(RedisLeaseClusterTest, LeasedInstancesKeepTheBoundOnEveryPrimary) {
  constexpr int kInstances = 4;
  constexpr int64_t kLimit = 400;
  const std::vector<std::string> tags = testing::TagsOnDistinctPrimaries(*cluster_, "bound:", 3);
  ASSERT_EQ(tags.size(), 3u);
  struct Key {
    std::string key;
    Limit limit;
  };
  std::vector<Key> keys;
  for (const std::string& tag : tags) {
    for (Algorithm a : testing::kLeaseAlgorithms) {
      keys.push_back({TaggedKey(tag, AlgorithmName(a)), LimitOf(a, kLimit)});
    }
  }
  std::vector<std::unique_ptr<RedisStore>> stores;
  for (int i = 0; i < kInstances; ++i) {
    stores.push_back(MakeStore(/*lease=*/true));
    ASSERT_NE(stores.back(), nullptr);
  }
  std::vector<std::atomic<int64_t>> admitted(keys.size());
  std::atomic<int64_t> errors{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kInstances; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t round = 0; round < kLimit * 10 / kInstances; ++round) {
        for (size_t k = 0; k < keys.size(); ++k) {
          absl::StatusOr<Decision> d = stores[t]->Check(keys[k].key, keys[k].limit);
          if (!d.ok()) {
            errors.fetch_add(1);
          } else if (d->allowed) {
            admitted[k].fetch_add(1);
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(errors.load(), 0);
  for (size_t k = 0; k < keys.size(); ++k) {
    int64_t bound = kLimit;
    if (testing::IsBucket(keys[k].limit.algorithm)) {
      const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
      const int64_t period = keys[k].limit.period.count();
      bound += (kLimit * (us + 1'000'000) + period - 1) / period;  // 1 s of clock slack
    }
    EXPECT_LE(admitted[k].load(), bound) << keys[k].key;
    EXPECT_GE(admitted[k].load(), kLimit * 98 / 100) << keys[k].key;
  }
  uint64_t local = 0;
  uint64_t calls = 0;
  uint64_t granted = 0;
  for (const auto& s : stores) {
    const RedisStoreStats st = s->Stats();
    EXPECT_TRUE(st.leases);
    local += st.lease.local_admits + st.lease.local_denials;
    granted += st.lease.units_granted;
    calls += st.script_calls;
  }
  EXPECT_GT(granted, 0u);
  EXPECT_GT(local, calls) << "script calls " << calls;
}

// A multi-limit check on one slot (one hash tag) is leased for both limits and spent from both
// or from neither: once the leased stores have given back what they hold, each key's count in
// Redis is exactly the pairs admitted, the loose limit's included.
TEST_F(RedisLeaseClusterTest, MultiLimitOnOneSlotIsLeasedAllOrNothing) {
  constexpr int kInstances = 3;
  constexpr int64_t kTight = 300;
  constexpr int64_t kLoose = 5000;
  const std::vector<std::string> tags = testing::TagsOnDistinctPrimaries(*cluster_, "pair:", 1);
  ASSERT_EQ(tags.size(), 1u);
  const std::vector<LimitCheck> pair = {
      {.key = TaggedKey(tags[0], "tight"), .limit = LimitOf(Algorithm::kFixedWindow, kTight)},
      {.key = TaggedKey(tags[0], "loose"), .limit = LimitOf(Algorithm::kGcra, kLoose)}};
  std::atomic<int64_t> admitted{0};
  std::atomic<int64_t> errors{0};
  uint64_t local_admits = 0;
  {
    std::vector<std::unique_ptr<RedisStore>> stores;
    for (int i = 0; i < kInstances; ++i) {
      stores.push_back(MakeStore(/*lease=*/true));
      ASSERT_NE(stores.back(), nullptr);
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < kInstances; ++t) {
      threads.emplace_back([&, t] {
        for (int64_t i = 0; i < kTight * 10 / kInstances; ++i) {
          absl::StatusOr<MultiDecision> m = stores[t]->CheckAll(pair);
          if (!m.ok()) {
            errors.fetch_add(1);
          } else if (m->allowed) {
            admitted.fetch_add(1);
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (const auto& s : stores) local_admits += s->Stats().lease.local_admits;
  }  // The leased stores give back their unspent units.
  EXPECT_EQ(errors.load(), 0);
  EXPECT_LE(admitted.load(), kTight);
  EXPECT_GE(admitted.load(), kTight * 98 / 100);
  EXPECT_GT(local_admits, 0u) << "the pair was never leased";
  std::unique_ptr<RedisStore> exact = MakeStore(/*lease=*/false);
  ASSERT_NE(exact, nullptr);
  for (const LimitCheck& c : pair) {
    absl::StatusOr<Decision> peek = exact->Check(c.key, c.limit, 0);
    ASSERT_TRUE(peek.ok()) << peek.status();
    // GCRA refills meanwhile, by under one unit a second at this limit.
    EXPECT_NEAR(c.limit.limit - peek->remaining, admitted.load(),
                testing::IsBucket(c.limit.algorithm) ? 2 : 0)
        << c.key;
  }
}

// A multi-limit check whose keys are in two slots cannot be leased (a grant is one script, one
// slot): it goes the exact path, refused by default and split with cross_slot=split, every time
// a script call and never a lease.
TEST_F(RedisLeaseClusterTest, CrossSlotMultiLimitTakesTheExactPath) {
  const std::vector<std::string> tags = testing::TagsOnDistinctPrimaries(*cluster_, "cross:", 2);
  ASSERT_EQ(tags.size(), 2u);
  constexpr int64_t kTight = 50;
  const std::vector<LimitCheck> checks = {
      {.key = TaggedKey(tags[0], "a"), .limit = LimitOf(Algorithm::kFixedWindow, kTight)},
      {.key = TaggedKey(tags[1], "b"), .limit = LimitOf(Algorithm::kTokenBucket, 10'000)}};

  std::unique_ptr<RedisStore> refuse = MakeStore(/*lease=*/true, CrossSlot::kRefuse);
  ASSERT_NE(refuse, nullptr);
  absl::StatusOr<MultiDecision> refused = refuse->CheckAll(checks);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();

  std::unique_ptr<RedisStore> split = MakeStore(/*lease=*/true, CrossSlot::kSplit);
  ASSERT_NE(split, nullptr);
  constexpr int kCalls = 200;
  int allowed = 0;
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<MultiDecision> m = split->CheckAll(checks);
    ASSERT_TRUE(m.ok()) << m.status();
    allowed += m->allowed ? 1 : 0;
    for (const Decision& d : m->decisions) EXPECT_FALSE(d.answered_locally);
  }
  // Exact: the tight limit admits exactly its limit (a busy leased key could end a few short).
  EXPECT_EQ(allowed, kTight);
  const LeaseStats st = split->Stats().lease;
  EXPECT_EQ(st.exact_calls, static_cast<uint64_t>(kCalls));
  EXPECT_EQ(st.units_granted, 0u);
  EXPECT_EQ(st.local_admits + st.local_denials, 0u);
  // Nothing was recorded by the refused call: the split store's first kTight calls were allowed.
  std::unique_ptr<RedisStore> exact = MakeStore(/*lease=*/false);
  ASSERT_NE(exact, nullptr);
  absl::StatusOr<Decision> peek = exact->Check(checks[0].key, checks[0].limit, 0);
  ASSERT_TRUE(peek.ok()) << peek.status();
  EXPECT_EQ(peek->remaining, 0);
}

}  // namespace
}  // namespace sluice
