// Leases against a real redis-server (docs/redis.md, "Leases"): instances that each open their own
// Redis store with lease=true never admit more than the exact-mode bound, and admit nearly all of
// it; denials are answered from memory; a lease keeps deciding while Redis is paused.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "tests/store/redis/lease_test_support.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisNowUs;
using ::sluice::testing::RedisServer;
using std::chrono::milliseconds;

absl::StatusOr<std::unique_ptr<RedisStore>> MakeLeasedStore(const RedisServer& server,
                                                            milliseconds timeout,
                                                            std::string_view params = "") {
  RedisStoreOptions options{.url = absl::StrCat(server.Url(), "?lease=true", std::string(params)),
                            .command_timeout = timeout};
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
  if (!store.ok()) return store.status();
  if (absl::Status s = (*store)->WaitForConnection(milliseconds(10000)); !s.ok()) return s;
  return store;
}

class RedisLeaseTest : public ::testing::TestWithParam<Algorithm> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  // Waits out the end of the current hour when less than a minute of it is left, so that a test
  // of an hourly window never straddles two (windows follow Redis TIME, which cannot be moved).
  void EnsureHourRoom() {
    const int64_t hour_us = int64_t{3600} * 1'000'000;
    const int64_t left = hour_us - RedisNowUs(*server_) % hour_us;
    if (left < 60'000'000) std::this_thread::sleep_for(std::chrono::microseconds(left + 50'000));
  }
  Limit LimitOf(int64_t per_hour) const {
    return Limit{.algorithm = GetParam(), .limit = per_hour, .period = std::chrono::hours(1)};
  }

  std::unique_ptr<RedisServer> server_;
};

// Four instances (four stores, four connections, as four processes would have) offer ten times
// the limit at once: exact-mode bound kept, and at least 98% of it admitted.
TEST_P(RedisLeaseTest, FourInstancesAtTenTimesTheLimitAdmitTheLimit) {
  EnsureHourRoom();
  constexpr int kInstances = 4;
  constexpr int64_t kLimit = 800;
  const Limit limit = LimitOf(kLimit);
  std::vector<std::unique_ptr<RedisStore>> stores;
  for (int i = 0; i < kInstances; ++i) {
    absl::StatusOr<std::unique_ptr<RedisStore>> s = MakeLeasedStore(*server_, milliseconds(5000));
    ASSERT_TRUE(s.ok()) << s.status();
    stores.push_back(std::move(*s));
  }
  const int64_t start_us = RedisNowUs(*server_);
  std::atomic<int64_t> admitted{0};
  std::atomic<int64_t> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kInstances; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = 0; i < kLimit * 10 / kInstances; ++i) {
        absl::StatusOr<Decision> d = stores[t]->Check("user:1", limit);
        if (!d.ok()) {
          errors.fetch_add(1);
        } else if (d->allowed) {
          admitted.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const int64_t elapsed_us = RedisNowUs(*server_) - start_us;
  EXPECT_EQ(errors.load(), 0);
  // The exact-mode bound: the limit in one window; the bucket algorithms also refill meanwhile.
  int64_t bound = kLimit;
  if (GetParam() == Algorithm::kTokenBucket || GetParam() == Algorithm::kGcra) {
    bound += (kLimit * elapsed_us + 3'600'000'000 - 1) / 3'600'000'000;
  }
  EXPECT_LE(admitted.load(), bound);
  EXPECT_GE(admitted.load(), kLimit * 98 / 100);
  uint64_t local = 0;
  uint64_t calls = 0;
  for (const auto& s : stores) {
    const RedisStoreStats st = s->Stats();
    EXPECT_TRUE(st.leases);
    local += st.lease.local_admits + st.lease.local_denials;
    calls += st.script_calls;
  }
  // Most decisions never reached Redis.
  EXPECT_GT(local, calls) << "script calls " << calls;
}

// Once Redis has denied, the same request is denied from memory until its retry_after.
TEST_P(RedisLeaseTest, DenialsAreAnsweredLocally) {
  EnsureHourRoom();
  absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeLeasedStore(*server_, milliseconds(5000));
  ASSERT_TRUE(store.ok()) << store.status();
  const Limit limit = LimitOf(20);
  int admitted = 0;
  for (int i = 0; i < 40; ++i) admitted += (*store)->Check("k", limit)->allowed ? 1 : 0;
  EXPECT_LE(admitted, 20);
  const uint64_t calls = (*store)->Stats().script_calls;
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<Decision> d = (*store)->Check("k", limit);
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->allowed);
    EXPECT_GT(d->retry_after, std::chrono::microseconds::zero());
  }
  EXPECT_EQ((*store)->Stats().script_calls, calls);
  EXPECT_GE((*store)->Stats().lease.local_denials, 100u);
}

// A live lease keeps deciding while Redis does not answer.
TEST_P(RedisLeaseTest, LeaseDecidesWhileRedisIsPaused) {
  EnsureHourRoom();
  absl::StatusOr<std::unique_ptr<RedisStore>> store =
      MakeLeasedStore(*server_, milliseconds(300), "&lease_refresh_ms=60000&lease_ttl_ms=60000");
  ASSERT_TRUE(store.ok()) << store.status();
  const Limit limit = LimitOf(100'000);
  // The first request is exact; the second leases what the rate asks for (here the cap).
  ASSERT_TRUE((*store)->Check("k", limit)->allowed);
  std::this_thread::sleep_for(milliseconds(20));  // a rate to size the lease by, not a sync
  ASSERT_TRUE((*store)->Check("k", limit)->allowed);
  ASSERT_GT((*store)->Stats().lease.units_granted, 20u);
  server_->Pause();
  int local = 0;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<Decision> d = (*store)->Check("k", limit);
    if (d.ok() && d->allowed && d->answered_locally) ++local;
  }
  // Another key needs Redis: it fails within its deadline.
  absl::StatusOr<Decision> other = (*store)->Check("other", limit);
  server_->Resume();
  EXPECT_EQ(local, 10);
  EXPECT_FALSE(other.ok());
}

// Giving back: a store that goes away returns its unspent units, so another instance can spend
// them.
TEST_P(RedisLeaseTest, UnspentUnitsGoBackOnShutdown) {
  EnsureHourRoom();
  const Limit limit = LimitOf(100);
  {
    absl::StatusOr<std::unique_ptr<RedisStore>> store =
        MakeLeasedStore(*server_, milliseconds(5000), "&lease_refresh_ms=60000");
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Check("k", limit)->allowed);
    std::this_thread::sleep_for(milliseconds(20));  // a rate to size the lease by, not a sync
    ASSERT_TRUE((*store)->Check("k", limit)->allowed);
    ASSERT_GT((*store)->Stats().lease.units_granted, 0u);
  }
  absl::StatusOr<std::unique_ptr<RedisStore>> other = MakeLeasedStore(*server_, milliseconds(5000));
  ASSERT_TRUE(other.ok()) << other.status();
  int admitted = 0;
  for (int i = 0; i < 200; ++i) admitted += (*other)->Check("k", limit)->allowed ? 1 : 0;
  // Two were admitted by the first store; everything it held came back.
  EXPECT_EQ(admitted, 98);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, RedisLeaseTest, ::testing::ValuesIn(testing::kLeaseAlgorithms),
                         testing::AlgorithmParamName);

}  // namespace
}  // namespace sluice
