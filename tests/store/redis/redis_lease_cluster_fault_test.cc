// Leases through a Redis Cluster failover (3 primaries, 1 replica each, a 1 s
// cluster-node-timeout; docs/redis.md, "Leases", Failover and sharding): a leased store holds
// leases on one key per algorithm, all on one primary, when that primary is SIGKILLed. Its grants
// were replicated (WAIT) before the kill, so the promoted replica knows every one of them: the
// live leases keep deciding from memory while the cluster fails over (a key of the same slot
// without a lease fails), decisions resume on the promoted replica, and no key admits more than
// its limit, but for units granted or admitted after the WAIT (not known to be replicated).
// Real time is unavoidable here (real servers, real failure detection); it bounds the waits.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/key.h"
#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/store/redis/redis_keys.h"
#include "tests/store/redis/lease_test_support.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_cluster.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisCluster;
using std::chrono::milliseconds;

constexpr int64_t kLimit = 1000;

Limit LimitOf(Algorithm a) { return testing::LongLimit(a, kLimit); }

TEST(RedisLeaseClusterFault, LeasesDecideThroughAFailoverAndTheBoundHolds) {
  absl::StatusOr<std::unique_ptr<RedisCluster>> started =
      RedisCluster::Start({.primaries = 3, .replicas_per_primary = 1});
  ASSERT_TRUE(started.ok()) << started.status();
  RedisCluster& cluster = **started;
  const std::string tag = "failover";
  const RedisKeyScheme scheme = *RedisKeyScheme::Create(kDefaultKeyPrefix);
  const int slot = ClusterHashSlot(scheme.StateKey(TaggedKey(tag, "x"), Algorithm::kFixedWindow));
  const absl::StatusOr<int> victim = cluster.PrimaryForSlot(slot);
  ASSERT_TRUE(victim.ok()) << victim.status();
  const absl::StatusOr<int> replica = cluster.ReplicaOf(*victim);
  ASSERT_TRUE(replica.ok()) << replica.status();

  absl::StatusOr<std::unique_ptr<RedisStore>> created = RedisStore::Create(
      {.url = cluster.Url() + "?lease=true&lease_refresh_ms=60000&lease_ttl_ms=60000",
       .command_timeout = milliseconds(200)});
  ASSERT_TRUE(created.ok()) << created.status();
  RedisStore& store = **created;
  ASSERT_TRUE(store.WaitForConnection(std::chrono::seconds(10)).ok());
  std::vector<std::string> names;
  for (Algorithm a : testing::kLeaseAlgorithms) names.push_back(TaggedKey(tag, AlgorithmName(a)));
  testing::LeasedFailoverKeys keys(store, names, kLimit);

  // 200 admitted per key, mostly from leases; then everything the primary recorded reaches its
  // replica (a refill answered after the snapshot counts as not replicated).
  ASSERT_NO_FATAL_FAILURE(keys.AdmitEach(200));
  const LeaseStats replicated = store.Stats().lease;
  ASSERT_EQ(cluster.Command(*victim, {"WAIT", "1", "5000"}).value_or(""), "1");
  const LeaseStats killed_at = store.Stats().lease;

  // Another process may start a server on the killed primary's free port meanwhile (tests run in
  // parallel): the store's connects check the node id (CLUSTER MYID), so it is never used as the
  // primary (redis_store_cluster_fault_test shows it with a plain redis-server on that port).
  cluster.Kill(*victim);
  testing::LeasedFailoverKeys::During during;
  const bool failed_over = keys.CheckWhile(
      [&] {
        return testing::WaitFor(
            [&] {
              absl::StatusOr<int> owner = cluster.PrimaryForSlot(slot);
              return owner.ok() && *owner == *replica;
            },
            20'000);
      },
      TaggedKey(tag, "unleased"), during);
  ASSERT_TRUE(failed_over);
  for (size_t k = 0; k < names.size(); ++k) EXPECT_GT(during.local[k], 0) << names[k];
  EXPECT_GT(during.unleased_errors, 0);

  // Decisions resume on the promoted replica; then each key to its end, 3x the limit offered.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        absl::StatusOr<Decision> d =
            store.Check(TaggedKey(tag, "probe"), LimitOf(Algorithm::kFixedWindow));
        return d.ok() && !d->answered_locally;
      },
      10'000));
  ASSERT_NO_FATAL_FAILURE(keys.OfferThreeLimits());
  // Only what was granted after the snapshot can have been lost.
  const int64_t maybe_lost =
      static_cast<int64_t>(killed_at.units_granted - replicated.units_granted);
  const int64_t over = keys.OverAdmitted();
  EXPECT_LE(over, maybe_lost);
  int64_t local = 0;
  for (int64_t n : during.local) local += n;
  const LeaseStats end = store.Stats().lease;
  std::printf(
      "leased cluster failover: %lld units granted around the WAIT; %lld local admissions "
      "during the failover; over-admitted %lld over %zu keys of limit %lld; admitted per key",
      static_cast<long long>(maybe_lost), static_cast<long long>(local),
      static_cast<long long>(over), names.size(), static_cast<long long>(kLimit));
  for (int64_t n : keys.admitted()) std::printf(" %lld", static_cast<long long>(n));
  std::printf("; refills %llu (failed %llu), units ended unspent %llu, units given back %llu\n",
              static_cast<unsigned long long>(end.refills),
              static_cast<unsigned long long>(end.refill_errors),
              static_cast<unsigned long long>(end.units_expired),
              static_cast<unsigned long long>(end.units_refunded));
}

}  // namespace
}  // namespace sluice
