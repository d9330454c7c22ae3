// Leases when Redis dies (docs/redis.md, "Leases", Outage): a leased store behind its failure
// policy keeps deciding a key from its live lease after redis-server is SIGKILLed, exactly as many
// times as the lease holds; then the failure policy answers, never hanging (a 100 ms deadline,
// under a second allowed for a loaded machine); and once Redis is back (restarted empty on the
// same port) the limit is exact again: a new burst admits the limit, at least 98 % of it, never
// more, so nothing the lease spent during the outage is spent again, and nothing is counted twice.
// (A paused Redis is redis_lease_store_test's LeaseDecidesWhileRedisIsPaused.) Real time bounds
// the waits for a real server; nothing is slept on as a synchronisation.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/failure_policy.h"
#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "tests/store/redis/lease_test_support.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisServer;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr milliseconds kDeadline{100};
// A call slower than this has hung (the deadline, and generous room for a loaded machine).
constexpr milliseconds kHang{1000};
constexpr int64_t kLimit = 1000;

class RedisLeaseFaultTest : public ::testing::TestWithParam<Algorithm> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  // Windows of a year (no boundary inside the test: windows align to epoch multiples), buckets of
  // a day (refilling under one unit in the second the test takes).
  Limit LongLimit() const {
    const bool bucket = GetParam() == Algorithm::kTokenBucket || GetParam() == Algorithm::kGcra;
    return Limit{.algorithm = GetParam(),
                 .limit = kLimit,
                 .period = bucket ? std::chrono::microseconds(std::chrono::hours(24))
                                  : std::chrono::microseconds(std::chrono::hours(24 * 366))};
  }

  std::unique_ptr<RedisServer> server_;
};

TEST_P(RedisLeaseFaultTest, LeaseDecidesAfterRedisIsKilledThenPolicyThenExactAgain) {
  absl::StatusOr<std::unique_ptr<RedisStore>> created = RedisStore::Create(
      {.url = server_->Url() + "?lease=true&lease_refresh_ms=60000&lease_ttl_ms=60000",
       .command_timeout = kDeadline});
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE((*created)->WaitForConnection(milliseconds(10000)).ok());
  RedisStore* redis = created->get();
  std::unique_ptr<FailurePolicyStore> limiter =
      WithFailurePolicy(*std::move(created), {.mode = FailureMode::kDeny,
                                              .breaker_failure_threshold = 2,
                                              .breaker_open_for = milliseconds(50)});
  const Limit limit = LongLimit();
  // The first request is exact; the second leases what the rate asks for, at most an eighth of
  // the limit.
  ASSERT_TRUE(limiter->Check("k", limit)->allowed);
  std::this_thread::sleep_for(milliseconds(20));  // a rate to size the lease by, not a sync
  ASSERT_TRUE(limiter->Check("k", limit)->allowed);
  const LeaseStats leased = redis->Stats().lease;
  ASSERT_GE(leased.units_granted, 2u);
  ASSERT_LE(leased.units_granted, static_cast<uint64_t>(kLimit / 8));
  ASSERT_EQ(leased.local_admits, 0u);
  const int64_t held = static_cast<int64_t>(leased.units_granted);

  server_->Kill();
  // Exactly the units held are admitted from memory, no call to the dead server needed.
  for (int64_t i = 0; i < held; ++i) {
    absl::StatusOr<Decision> d = limiter->Check("k", limit);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed) << i;
    EXPECT_TRUE(d->answered_locally) << i;
    EXPECT_FALSE(d->from_fallback) << i;
  }
  EXPECT_EQ(redis->Stats().lease.local_admits, static_cast<uint64_t>(held));
  // Spent: the failure policy answers (deny), within the deadline; so for a key with no lease.
  for (const std::string key : {"k", "other"}) {
    const auto start = SteadyClock::now();
    absl::StatusOr<Decision> d = limiter->Check(key, limit);
    const auto took = SteadyClock::now() - start;
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->from_fallback) << key;
    EXPECT_FALSE(d->allowed) << key;
    EXPECT_LT(took, kHang) << key;
  }

  // Back, empty, on the same port: decisions come from Redis again once the breaker lets a probe
  // through and the client has reconnected.
  ASSERT_TRUE(server_->Restart().ok());
  const Limit probe{.limit = 1'000'000, .period = std::chrono::hours(24)};
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        absl::StatusOr<Decision> d = limiter->Check("probe", probe);
        return d.ok() && !d->from_fallback;
      },
      5000));
  // The new server knows nothing of "k": a burst of 3x the limit admits the limit (the exact-mode
  // bound; the buckets refill by less than one unit in the time this takes), and nearly all
  // of it: no unit admitted before the restart is spent or counted again.
  const int64_t before = static_cast<int64_t>(redis->Stats().lease.local_admits);
  int64_t admitted = 0;
  int64_t fallbacks = 0;
  for (int64_t i = 0; i < 3 * kLimit; ++i) {
    absl::StatusOr<Decision> d = limiter->Check("k", limit);
    ASSERT_TRUE(d.ok()) << d.status();
    admitted += d->allowed ? 1 : 0;
    fallbacks += d->from_fallback ? 1 : 0;
  }
  EXPECT_EQ(fallbacks, 0);
  const bool bucket = GetParam() == Algorithm::kTokenBucket || GetParam() == Algorithm::kGcra;
  EXPECT_LE(admitted, kLimit + (bucket ? 1 : 0));
  EXPECT_GE(admitted, kLimit * 98 / 100);
  // And it was leased again: the lease store works on the new server.
  EXPECT_GT(static_cast<int64_t>(redis->Stats().lease.local_admits), before);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, RedisLeaseFaultTest,
                         ::testing::ValuesIn(testing::kLeaseAlgorithms),
                         testing::AlgorithmParamName);

}  // namespace
}  // namespace sluice
