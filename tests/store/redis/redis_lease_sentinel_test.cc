// Leases through a Sentinel failover (docs/redis.md, "Leases", Failover and sharding): a leased
// store (redis-sentinel://...?lease=true) holds leases on one key per algorithm when the primary
// is SIGKILLed. The writes of the last moments before the kill never reach the replica (the
// replication link is cut first, as a lagging replica would be): a refill granted then is known
// to the holder only. While the Sentinels promote the replica the live leases keep deciding from
// memory (a key without a lease fails); then decisions resume on the new primary, and each key
// admits its limit again there, so over all keys at most the units Redis granted or admitted
// after the cut are admitted twice: exact mode's loss of its last writes, nothing more.
// Real time is unavoidable here (real processes, a real failover); it bounds the waits.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "tests/store/redis/lease_test_support.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_sentinel.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kLimit = 1000;

Limit LimitOf(Algorithm a) { return testing::LongLimit(a, kLimit); }

TEST(RedisLeaseSentinel, LeasesDecideThroughAFailoverAndLoseOnlyTheUnreplicatedGrants) {
  absl::StatusOr<std::unique_ptr<testing::RedisSentinel>> started =
      testing::RedisSentinel::Start({});
  ASSERT_TRUE(started.ok()) << started.status();
  testing::RedisSentinel& sentinel = **started;
  absl::StatusOr<std::unique_ptr<RedisStore>> created = RedisStore::Create(
      {.url = sentinel.Url() + "?lease=true&lease_refresh_ms=60000&lease_ttl_ms=60000",
       .command_timeout = milliseconds(200)});
  ASSERT_TRUE(created.ok()) << created.status();
  RedisStore& store = **created;
  ASSERT_TRUE(store.WaitForConnection(std::chrono::seconds(10)).ok());
  const std::string run =
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<std::string> names;
  for (Algorithm a : testing::kLeaseAlgorithms) {
    names.push_back(run + ":" + std::string(AlgorithmName(a)));
  }
  testing::LeasedFailoverKeys keys(store, names, kLimit);

  // Replicated: 200 admitted per key, mostly from leases (the first two decisions are exact and
  // size the lease; the refills run in the background).
  ASSERT_NO_FATAL_FAILURE(keys.AdmitEach(200));
  // Everything granted until now was decided before the WAIT, which returns once the replica has
  // it all (a refill answered later counts as after the cut).
  const LeaseStats cut = store.Stats().lease;
  testing::RedisServer& primary = sentinel.Server(sentinel.primary_port());
  ASSERT_EQ(primary.Command({"WAIT", "1", "5000"}).value_or(""), "1");

  // Cut off: every grant and admission Redis records from now on is lost in the failover. Each
  // key is spent until a refill has been granted there.
  ASSERT_TRUE(sentinel.DetachReplica().ok());
  int64_t exact_after_cut = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    const uint64_t granted = store.Stats().lease.units_granted;
    for (int i = 0; i < 1000 && store.Stats().lease.units_granted == granted; ++i) {
      absl::StatusOr<Decision> d = keys.Check(k);
      ASSERT_TRUE(d.ok()) << d.status();
      ASSERT_TRUE(d->allowed);
      if (!d->answered_locally) ++exact_after_cut;
    }
  }
  const LeaseStats killed_at = store.Stats().lease;
  const int64_t granted_after_cut =
      static_cast<int64_t>(killed_at.units_granted - cut.units_granted);
  ASSERT_GT(granted_after_cut, 0);

  // The failover: leases keep deciding from memory, a key without one cannot be decided.
  const int old_primary = sentinel.primary_port();
  sentinel.KillPrimary();
  testing::LeasedFailoverKeys::During during;
  absl::StatusOr<int> promoted = keys.CheckWhile(
      [&] { return sentinel.WaitForFailover(old_primary); }, run + ":unleased", during);
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  for (size_t k = 0; k < names.size(); ++k) EXPECT_GT(during.local[k], 0) << names[k];
  EXPECT_GT(during.unleased_errors, 0);

  // Decisions resume on the new primary.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        absl::StatusOr<Decision> d = store.Check(run + ":probe", LimitOf(Algorithm::kFixedWindow));
        return d.ok() && !d->answered_locally;
      },
      10'000));
  // Each key to its end: 3x the limit offered.
  ASSERT_NO_FATAL_FAILURE(keys.OfferThreeLimits());
  // The new primary knows what was replicated; the units granted and admitted after the cut are
  // what it forgot, and at most they are admitted twice.
  const int64_t lost = granted_after_cut + exact_after_cut;
  const int64_t over = keys.OverAdmitted();
  EXPECT_LE(over, lost);
  std::printf(
      "leased failover: after the cut %lld units granted and %lld admitted by Redis (lost "
      "in the failover); local admissions during the failover %lld; over-admitted %lld "
      "over %zu keys of limit %lld\n",
      static_cast<long long>(granted_after_cut), static_cast<long long>(exact_after_cut),
      static_cast<long long>(std::accumulate(during.local.begin(), during.local.end(), int64_t{0})),
      static_cast<long long>(over), names.size(), static_cast<long long>(kLimit));
}

}  // namespace
}  // namespace sluice
