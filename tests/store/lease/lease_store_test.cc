// LeaseStore on a fake lease source (a fixed window in memory) and a manual clock: what it spends
// locally, when it calls the store, and that instances sharing one store never admit more than
// the limit.
#include "src/store/lease/lease_store.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"

#include "tests/store/lease/fake_lease_source.h"
#include "tests/testing/manual_clock.h"

namespace sluice::internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

class LeaseStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaseStore> Instance() {
    return std::make_unique<LeaseStore>(exact_, source_, LeaseOptions{.clock = &clock_});
  }
  // Window-aligned start: the next minute begins 60 s after this.
  testing::ManualClock clock_{seconds(1'700'000'040)};
  testing::FakeLeaseSource source_{clock_};
  testing::FakeLeaseSourceStore exact_{source_};
};

const Limit kPerMinute{.limit = 1000, .period = minutes(1)};

// Verifies that a check counting rejected hits (LimitCheck::count_rejected) takes the exact path,
// with no lease: the exact store records its rejected hit and the lease source is never asked.
TEST_F(LeaseStoreTest, ChecksCountingRejectedHitsTakeTheExactPath) {
  absl::StatusOr<std::unique_ptr<MemoryStore>> memory = MemoryStore::Create({.clock = &clock_});
  ASSERT_TRUE(memory.ok()) << memory.status();
  LeaseStore store(**memory, source_, LeaseOptions{.clock = &clock_});
  const Limit two{.limit = 2, .period = minutes(1)};
  const LimitCheck check{.key = "k", .limit = two, .cost = 1, .count_rejected = true};
  for (bool expected : {true, true, false}) {
    absl::StatusOr<MultiDecision> m = store.CheckAll({&check, 1});
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->allowed, expected);
    EXPECT_FALSE(m->decisions[0].answered_locally);
  }
  EXPECT_EQ(source_.calls(), 0);
  EXPECT_EQ(store.Stats().units_granted, 0u);
  // 3 of 2 recorded: a 0-hit check counting rejected hits is now denied.
  const LimitCheck peek{.key = "k", .limit = two, .cost = 0, .count_rejected = true};
  absl::StatusOr<MultiDecision> m = (*memory)->CheckAll({&peek, 1});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->allowed);
}

TEST_F(LeaseStoreTest, FirstRequestLeasesNothingThenTheRateSizesTheLease) {
  std::unique_ptr<LeaseStore> store = Instance();
  ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
  EXPECT_EQ(source_.calls(), 1);
  EXPECT_EQ(store->Stats().units_granted, 0u);
  clock_.Advance(milliseconds(10));
  // One unit in 10 ms is 50 units in the 500 ms refresh target.
  ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
  EXPECT_EQ(source_.calls(), 2);
  EXPECT_EQ(store->Stats().units_granted, 50u);
  EXPECT_EQ(source_.Count("k", kPerMinute), 2 + 50);
  // The lease answers the next 25 without the store; then a refill is due (half spent).
  for (int i = 0; i < 25; ++i) {
    absl::StatusOr<Decision> d = store->Check("k", kPerMinute);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->allowed);
    EXPECT_TRUE(d->answered_locally);
  }
  EXPECT_EQ(source_.calls(), 3);  // the background refill, answered inline by the fake
  EXPECT_EQ(store->Stats().refills, 1u);
  EXPECT_EQ(store->Stats().local_admits, 25u);
}

TEST_F(LeaseStoreTest, InstancesSharingTheStoreNeverAdmitMoreThanTheLimit) {
  const Limit limit{.limit = 200, .period = minutes(1)};
  std::vector<std::unique_ptr<LeaseStore>> instances;
  for (int i = 0; i < 4; ++i) instances.push_back(Instance());
  int admitted = 0;
  // 10x the limit, round robin, 1 ms apart: every instance sees a busy key.
  for (int i = 0; i < 2000; ++i) {
    absl::StatusOr<Decision> d = instances[i % 4]->Check("k", limit);
    ASSERT_TRUE(d.ok()) << d.status();
    admitted += d->allowed ? 1 : 0;
    clock_.Advance(std::chrono::microseconds(500));
  }
  EXPECT_LE(admitted, 200);
  // Units left in leases at the window's end are the only shortfall.
  uint64_t left = 0;
  for (auto& s : instances) {
    const LeaseStats st = s->Stats();
    left += st.units_granted - st.local_admits;
  }
  EXPECT_GE(admitted, 196) << "units left in leases: " << left;
}

TEST_F(LeaseStoreTest, NoRefillStormOnceTheStoreHasNothingLeft) {
  // An instance holds a lease when the rest of the window is taken elsewhere: every refill it
  // then starts is granted nothing, and the lease's last units must not each start another one
  // (a script call per decision).
  std::unique_ptr<LeaseStore> store = Instance();
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
    clock_.Advance(milliseconds(1));
  }
  while (source_.Count("k", kPerMinute) < kPerMinute.limit) {
    ASSERT_TRUE(exact_.Check("k", kPerMinute)->allowed);
  }
  const int calls_at_exhaustion = source_.calls();
  int local = 0;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<Decision> d = store->Check("k", kPerMinute);
    ASSERT_TRUE(d.ok()) << d.status();
    if (d->allowed) {
      EXPECT_TRUE(d->answered_locally);
      ++local;
    }
    clock_.Advance(milliseconds(1));
  }
  // The units it held were spent locally over many decisions ...
  EXPECT_GT(local, 50);
  // ... with at most one refill per 50 ms (a tenth of the refresh target) meanwhile, one leasing
  // call when the lease is spent, and then denials remembered until the window's end.
  const int calls_after = source_.calls() - calls_at_exhaustion;
  EXPECT_LE(calls_after, local / 50 + 3) << local << " local admissions after the store ran dry";
}

TEST_F(LeaseStoreTest, DenialIsAnsweredLocallyUntilTheReset) {
  const Limit limit{.limit = 10, .period = minutes(1)};
  std::unique_ptr<LeaseStore> store = Instance();
  int admitted = 0;
  for (int i = 0; i < 30; ++i) {
    admitted += store->Check("k", limit)->allowed ? 1 : 0;
    clock_.Advance(milliseconds(1));
  }
  EXPECT_EQ(admitted, 10);
  const int calls = source_.calls();
  absl::StatusOr<Decision> denied = store->Check("k", limit);
  ASSERT_TRUE(denied.ok());
  EXPECT_FALSE(denied->allowed);
  EXPECT_TRUE(denied->answered_locally);
  EXPECT_GT(denied->retry_after, std::chrono::microseconds::zero());
  EXPECT_EQ(source_.calls(), calls);
  // At the retry_after the store is asked again, and the new window admits.
  clock_.Advance(denied->retry_after);
  absl::StatusOr<Decision> later = store->Check("k", limit);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->allowed);
  EXPECT_GT(source_.calls(), calls);
}

TEST_F(LeaseStoreTest, LeaseEndsWithItsWindow) {
  std::unique_ptr<LeaseStore> store = Instance();
  ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
  clock_.Advance(milliseconds(10));
  ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
  ASSERT_EQ(store->Stats().units_granted, 50u);
  // Into the next window: the units of the last one are not spent there.
  clock_.Advance(seconds(60));
  const int calls = source_.calls();
  absl::StatusOr<Decision> d = store->Check("k", kPerMinute);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_FALSE(d->answered_locally);
  EXPECT_EQ(source_.calls(), calls + 1);
  EXPECT_EQ(store->Stats().units_expired, 50u);
}

TEST_F(LeaseStoreTest, MultiLimitSpendsFromEveryLeaseOrFromNone) {
  std::unique_ptr<LeaseStore> store = Instance();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(store->Check("a", kPerMinute)->allowed);
    clock_.Advance(milliseconds(10));
  }
  const LeaseStats before = store->Stats();
  ASSERT_GT(before.units_granted, 0u);
  // "b" holds no lease: the pair goes to the store, and "a"'s lease is not touched.
  std::vector<LimitCheck> pair{{.key = "a", .limit = kPerMinute, .cost = 1},
                               {.key = "b", .limit = kPerMinute, .cost = 1}};
  const int calls = source_.calls();
  absl::StatusOr<MultiDecision> m = store->CheckAll(pair);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->allowed);
  EXPECT_EQ(source_.calls(), calls + 1);
  EXPECT_EQ(store->Stats().local_admits, before.local_admits);
}

TEST_F(LeaseStoreTest, UnspentUnitsAreGivenBackOnShutdown) {
  std::unique_ptr<LeaseStore> store = Instance();
  ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
  clock_.Advance(milliseconds(10));
  ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
  ASSERT_TRUE(store->Check("k", kPerMinute)->answered_locally);
  EXPECT_EQ(source_.Count("k", kPerMinute), 52);
  store.reset();
  EXPECT_EQ(source_.refunded(), 49);
  EXPECT_EQ(source_.Count("k", kPerMinute), 3);
}

TEST_F(LeaseStoreTest, LeaseServesWhileTheBreakerIsOpen) {
  auto lease = Instance();
  LeaseStore* leased = lease.get();
  std::unique_ptr<FailurePolicyStore> store = WithFailurePolicy(
      std::move(lease),
      {.mode = FailureMode::kDeny, .breaker_failure_threshold = 1, .clock = &clock_});
  ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
  clock_.Advance(milliseconds(10));
  ASSERT_TRUE(store->Check("k", kPerMinute)->allowed);
  ASSERT_GT(leased->Stats().units_granted, 0u);
  source_.Fail(absl::UnavailableError("down"));
  // Another key fails and opens the breaker.
  absl::StatusOr<Decision> other = store->Check("other", kPerMinute);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->from_fallback);
  ASSERT_TRUE(store->Stats().breaker_open);
  // The leased key is still decided exactly, from its lease.
  absl::StatusOr<Decision> d = store->Check("k", kPerMinute);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_TRUE(d->answered_locally);
  EXPECT_FALSE(d->from_fallback);
}

TEST_F(LeaseStoreTest, ConcurrentInstancesStayWithinTheLimit) {
  const Limit limit{.limit = 1000, .period = minutes(1)};
  std::vector<std::unique_ptr<LeaseStore>> instances;
  for (int i = 0; i < 4; ++i) instances.push_back(Instance());
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        // Two keys, so that multi-limit checks and single checks interleave on shared leases.
        if (i % 2 == 0) {
          absl::StatusOr<Decision> d = instances[t]->Check("k", limit);
          if (d.ok() && d->allowed) admitted.fetch_add(1);
        } else {
          std::vector<LimitCheck> both{{.key = "k", .limit = limit, .cost = 1},
                                       {.key = "j", .limit = limit, .cost = 1}};
          absl::StatusOr<MultiDecision> m = instances[(t + 1) % 4]->CheckAll(both);
          if (m.ok() && m->allowed) admitted.fetch_add(1);
        }
        if (i % 100 == 0) clock_.Advance(std::chrono::microseconds(100));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  // Every admission spent a unit of "k".
  EXPECT_LE(admitted.load(), 1000);
  EXPECT_GE(admitted.load(), 980);
}

// The key table holds at most max_keys keys (max_keys / kShards per shard): a key that finds its
// shard full is decided by exact calls, never leased, and the table does not grow; once keys have
// been idle for the refresh target, a new key sweeps them out of its shard and is held instead.
TEST_F(LeaseStoreTest, KeyTableIsBoundedAndIdleKeysAreSwept) {
  constexpr size_t kMaxKeys = 2 * LeaseStore::kShards;
  constexpr int kKeys = 2000;
  LeaseStore store(
      exact_, source_,
      LeaseOptions{.max_keys = kMaxKeys, .maintain_every = milliseconds(0), .clock = &clock_});
  std::vector<std::string> refused;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "k" + std::to_string(i);
    const uint64_t exact = store.Stats().exact_calls;
    ASSERT_TRUE(store.Check(key, kPerMinute)->allowed);
    if (store.Stats().exact_calls > exact) refused.push_back(key);
  }
  LeaseStats st = store.Stats();
  // 2,000 keys over 64 shards: every shard filled up (31 keys each on average).
  EXPECT_EQ(st.keys, kMaxKeys);
  EXPECT_EQ(st.lease_calls, kMaxKeys);
  EXPECT_EQ(refused.size(), kKeys - kMaxKeys);
  // A refused key stays exact however busy it is: it is never leased (a held key would be by now).
  const std::string& busy = refused.front();
  for (int i = 0; i < 50; ++i) {
    clock_.Advance(milliseconds(1));
    absl::StatusOr<Decision> d = store.Check(busy, kPerMinute);
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->answered_locally);
  }
  st = store.Stats();
  EXPECT_EQ(st.units_granted, 0u);
  EXPECT_EQ(st.exact_calls, kKeys - kMaxKeys + 50);
  EXPECT_EQ(st.keys, kMaxKeys);
  // Idle past the refresh target (500 ms): new keys sweep the old ones out and are held.
  clock_.Advance(seconds(1));
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(store.Check("n" + std::to_string(i), kPerMinute)->allowed);
  }
  st = store.Stats();
  EXPECT_EQ(st.keys, kMaxKeys);
  EXPECT_EQ(st.lease_calls, 2 * kMaxKeys);
  // The refused key, swept or never held, gets an entry again once its shard has room: after a
  // sweep of idle keys (the new ones are idle a second later too).
  clock_.Advance(seconds(1));
  const uint64_t lease_calls = store.Stats().lease_calls;
  ASSERT_TRUE(store.Check(busy, kPerMinute)->allowed);
  EXPECT_EQ(store.Stats().lease_calls, lease_calls + 1);
  EXPECT_LE(store.Stats().keys, kMaxKeys);
}

// A multi-limit check whose later key is new may grow its shard's table (a rehash moves every
// entry of the shard) after an earlier key's entry was found: the pass must not go on with the
// earlier entry's old address. Thousands of pairs of one held key and a new one make its shard
// grow several times under such a pair (ASan reports the stale use; see scripts/sanitize.sh).
TEST_F(LeaseStoreTest, NewKeysGrowingTheTableInAMultiLimitCheckKeepEarlierEntries) {
  const Limit big{.limit = 1'000'000, .period = minutes(1)};
  std::unique_ptr<LeaseStore> store = Instance();
  ASSERT_TRUE(store->Check("held", big)->allowed);
  for (int i = 0; i < 2000; ++i) {
    std::vector<LimitCheck> pair{{.key = "held", .limit = big, .cost = 1},
                                 {.key = "new" + std::to_string(i), .limit = big, .cost = 1}};
    absl::StatusOr<MultiDecision> m = store->CheckAll(pair);
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_TRUE(m->allowed);
    clock_.Advance(std::chrono::microseconds(100));
  }
  // No pair was decided locally (its new key holds nothing), and every unit leased was "held"'s
  // (a key's first request leases nothing): the store counted each pair once, plus the leases.
  const LeaseStats st = store->Stats();
  EXPECT_EQ(st.local_admits, 0u);
  EXPECT_EQ(source_.Count("held", big),
            static_cast<int64_t>(2001 + st.units_granted - st.units_refunded));
}

// Verifies that a credit is an exact call that gives units back in the store and drops the denial
// this instance remembered, so that the units given back pass here at once.
TEST_F(LeaseStoreTest, ACreditThroughThisInstanceForgetsItsRememberedDenial) {
  const Limit limit{.limit = 10, .period = minutes(1)};
  std::unique_ptr<LeaseStore> store = Instance();
  for (int i = 0; i < 30; ++i) {
    (void)store->Check("k", limit);
    clock_.Advance(milliseconds(1));
  }
  ASSERT_TRUE(store->Check("k", limit)->answered_locally);
  const int calls = source_.calls();
  absl::StatusOr<Decision> credit = store->Refund("k", limit, 2);
  ASSERT_TRUE(credit.ok()) << credit.status();
  EXPECT_TRUE(credit->allowed);
  EXPECT_EQ(source_.calls(), calls + 1);
  EXPECT_TRUE(store->Check("k", limit)->allowed);
  EXPECT_TRUE(store->Check("k", limit)->allowed);
  EXPECT_FALSE(store->Check("k", limit)->allowed);
}

// Verifies the bound on a credit through another instance: a denial is remembered for at most
// LeaseOptions::remember_denial (1 s), after which the units it gave back pass here.
TEST_F(LeaseStoreTest, ACreditThroughAnotherInstanceIsSeenWithinRememberDenial) {
  const Limit limit{.limit = 10, .period = minutes(1)};
  std::unique_ptr<LeaseStore> a = Instance();
  std::unique_ptr<LeaseStore> b = Instance();
  for (int i = 0; i < 30; ++i) {
    (void)a->Check("k", limit);
    clock_.Advance(milliseconds(1));
  }
  absl::StatusOr<Decision> denied = a->Check("k", limit);
  ASSERT_FALSE(denied->allowed);
  ASSERT_TRUE(denied->answered_locally);
  // The window resets in about a minute; the denial reports that, but is remembered for 1 s.
  EXPECT_GT(denied->retry_after, seconds(50));
  ASSERT_TRUE(b->Refund("k", limit, 1).ok());
  clock_.Advance(milliseconds(900));
  EXPECT_TRUE(a->Check("k", limit)->answered_locally);
  clock_.Advance(milliseconds(200));
  EXPECT_TRUE(a->Check("k", limit)->allowed);
  EXPECT_FALSE(a->Check("k", limit)->allowed);
}

}  // namespace
}  // namespace sluice::internal
