// Credits (LimitCheck::refund) on every store: memory, Redis, Redis with leases, Redis Cluster
// (with and without leases). Several instances of a store (separate store objects over one Redis)
// send ten times the limit, with credits of admitted units interleaved through any instance; in
// the end exactly limit + credited units are admitted, never more, for each algorithm.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/open_store.h"
#include "sluice/store.h"

#include "tests/testing/redis_cluster.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

enum class Backend { kMemory, kRedis, kRedisLease, kCluster, kClusterLease };

std::string Name(Backend b) {
  switch (b) {
    case Backend::kMemory:
      return "Memory";
    case Backend::kRedis:
      return "Redis";
    case Backend::kRedisLease:
      return "RedisWithLeases";
    case Backend::kCluster:
      return "Cluster";
    case Backend::kClusterLease:
      return "ClusterWithLeases";
  }
  return "?";
}

constexpr int64_t kLimit = 200;
// Keys are new in every case: the servers outlive a case.
std::atomic<int> next_key{0};
// A period long enough that no window ends and no bucket refills a unit while a case runs (a
// bucket's limit * period must stay within 2^50 us).
constexpr std::chrono::milliseconds kPeriod = std::chrono::hours(24) * 30;

class RefundStoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() {
    auto server = testing::RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server).release();
    auto cluster = testing::RedisCluster::Start({.primaries = 3, .replicas_per_primary = 0});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete cluster_;
    server_ = nullptr;
    cluster_ = nullptr;
  }

  // The instances of the store under test: one for the memory store (it is one process's state),
  // three over the one Redis or Cluster otherwise.
  std::vector<OpenedStore> OpenInstances() {
    std::string url;
    switch (GetParam()) {
      case Backend::kMemory:
        url = "memory";
        break;
      case Backend::kRedis:
        url = server_->Url();
        break;
      case Backend::kRedisLease:
        url = absl::StrCat(server_->Url(), "?lease=true");
        break;
      case Backend::kCluster:
        url = cluster_->Url();
        break;
      case Backend::kClusterLease:
        url = absl::StrCat(cluster_->Url(), "?lease=true");
        break;
    }
    std::vector<OpenedStore> stores;
    const int n = GetParam() == Backend::kMemory ? 1 : 3;
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<OpenedStore> opened =
          OpenStore(url, {.startup_wait = std::chrono::seconds(5)});
      EXPECT_TRUE(opened.ok()) << opened.status();
      if (opened.ok()) stores.push_back(*std::move(opened));
    }
    return stores;
  }

  bool Leased() const {
    return GetParam() == Backend::kRedisLease || GetParam() == Backend::kClusterLease;
  }

  static testing::RedisServer* server_;
  static testing::RedisCluster* cluster_;
};

testing::RedisServer* RefundStoreTest::server_ = nullptr;
testing::RedisCluster* RefundStoreTest::cluster_ = nullptr;

TEST_P(RefundStoreTest, AdmitsTheLimitPlusWhatWasCreditedAndNeverMore) {
  std::vector<OpenedStore> stores = OpenInstances();
  ASSERT_FALSE(stores.empty());
  for (Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                              Algorithm::kSlidingLog, Algorithm::kTokenBucket, Algorithm::kGcra}) {
    SCOPED_TRACE(std::string(AlgorithmName(algorithm)));
    const Limit limit{.algorithm = algorithm, .limit = kLimit, .period = kPeriod};
    const std::string key = absl::StrCat("refund:", Name(GetParam()), ":",
                                         std::string(AlgorithmName(algorithm)), ":", next_key++);
    std::atomic<int64_t> admitted{0};
    std::atomic<int64_t> credited{0};
    std::atomic<int64_t> errors{0};
    // Ten times the limit from four threads, each on its own instance in turn; every third
    // admission is credited back through another instance.
    constexpr int kThreads = 4;
    constexpr int64_t kAttemptsPerThread = 10 * kLimit / kThreads;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int64_t i = 0; i < kAttemptsPerThread; ++i) {
          Store& store = *stores[static_cast<size_t>(t + i) % stores.size()].store;
          absl::StatusOr<Decision> d = store.Check(key, limit, 1);
          if (!d.ok()) {
            ++errors;
            continue;
          }
          if (!d->allowed) continue;
          if (admitted.fetch_add(1) % 3 != 0) continue;
          Store& other = *stores[static_cast<size_t>(t + i + 1) % stores.size()].store;
          absl::StatusOr<Decision> r = other.Refund(key, limit, 1);
          if (!r.ok()) {
            ++errors;
            continue;
          }
          EXPECT_TRUE(r->allowed);
          ++credited;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(errors.load(), 0);
    ASSERT_GT(credited.load(), 0);
    EXPECT_LE(admitted.load(), kLimit + credited.load());
    // Drain what is left: the units credited last, and with leases the units instances hold.
    // A denial an instance remembers lasts at most LeaseOptions::remember_denial (1 s) when the
    // credit went through another instance: past it every instance asks Redis again.
    if (Leased()) std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    for (int pass = 0; pass < 3; ++pass) {
      for (OpenedStore& s : stores) {
        while (true) {
          absl::StatusOr<Decision> d = s.store->Check(key, limit, 1);
          ASSERT_TRUE(d.ok()) << d.status();
          if (!d->allowed) break;
          ++admitted;
          ASSERT_LE(admitted.load(), kLimit + credited.load());
        }
      }
    }
    EXPECT_EQ(admitted.load(), kLimit + credited.load())
        << "credited " << credited.load() << " admitted " << admitted.load();
  }
}

TEST_P(RefundStoreTest, ACreditToAnUnknownKeyCreatesNothingAndAdmitsNothingExtra) {
  std::vector<OpenedStore> stores = OpenInstances();
  ASSERT_FALSE(stores.empty());
  for (Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                              Algorithm::kSlidingLog, Algorithm::kTokenBucket, Algorithm::kGcra}) {
    SCOPED_TRACE(std::string(AlgorithmName(algorithm)));
    const Limit limit{.algorithm = algorithm, .limit = 3, .period = kPeriod};
    const std::string key = absl::StrCat("unknown:", Name(GetParam()), ":",
                                         std::string(AlgorithmName(algorithm)), ":", next_key++);
    Store& store = *stores[0].store;
    absl::StatusOr<Decision> r = store.Refund(key, limit, 5);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->allowed);
    EXPECT_EQ(r->remaining, 3);
    // Never below empty: a credit before any charge leaves the limit as it was.
    int64_t admitted = 0;
    for (int i = 0; i < 10; ++i) admitted += store.Check(key, limit, 1).value().allowed ? 1 : 0;
    EXPECT_EQ(admitted, 3);
    // A credit of more than was charged gives back only what was.
    ASSERT_TRUE(store.Refund(key, limit, 100).ok());
    admitted = 0;
    for (int i = 0; i < 10; ++i) admitted += store.Check(key, limit, 1).value().allowed ? 1 : 0;
    EXPECT_EQ(admitted, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(AllStores, RefundStoreTest,
                         ::testing::Values(Backend::kMemory, Backend::kRedis, Backend::kRedisLease,
                                           Backend::kCluster, Backend::kClusterLease),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return Name(info.param);
                         });

}  // namespace
}  // namespace sluice
