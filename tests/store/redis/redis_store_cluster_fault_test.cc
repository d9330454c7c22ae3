// Fault tests of the Redis store on a real Redis Cluster (3 primaries, 3 replicas, a 1 s
// cluster-node-timeout): a primary SIGKILLed under load. Every call must return within its
// deadline (a decision or an error, never a hang); checks must succeed again within a few seconds
// of the replica's promotion; and the over-admission that asynchronous replication allows (the
// latest increments acknowledged by the dead primary but not yet copied to its replica) is
// measured per key, without and with the durability option (min_replicas=1, WAIT).
//
// Real time is unavoidable here (real servers, real failure detection); it bounds waits and is
// measured, never slept on. The figures are printed for docs/redis.md.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "src/store/redis/client/cluster/cluster_client.h"
#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/store/redis/client/redis_router_factory.h"
#include "tests/testing/call_batch.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_cluster.h"
#include "tests/testing/redis_endpoint_of.h"

namespace sluice {
namespace {

using ::sluice::testing::EndpointOf;
using ::sluice::testing::RedisCluster;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr milliseconds kDeadline{50};
// A call slower than the deadline by this much has hung (scheduler noise on a loaded 2-core CI
// machine stays well below it).
constexpr milliseconds kSlack{250};
constexpr int kKeys = 24;
constexpr int kLimit = 300;
constexpr int kThreads = 4;
constexpr int kWindow = 8;  // Checks in flight per thread: 32 in all.

int64_t MicrosSince(SteadyClock::time_point origin) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - origin).count();
}

// A limit under which nothing refills during the test (see redis_store_cluster_test.cc).
Limit LimitOf(int k) {
  static const Algorithm kAll[] = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                   Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                   Algorithm::kGcra};
  const Algorithm algorithm = kAll[k % 5];
  const bool bucket = algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra;
  return Limit{.algorithm = algorithm,
               .limit = kLimit,
               .period = bucket ? std::chrono::microseconds(std::chrono::hours(24))
                                : std::chrono::microseconds(std::chrono::hours(24 * 366))};
}

// One call, as the load saw it.
struct Call {
  int64_t start_us = 0;
  int64_t end_us = 0;
  int key = 0;
  // kUnknown: an error after which the check may have been recorded (a deadline passed after the
  // command was written, or its connection dropped).
  enum Outcome : uint8_t { kAllowed, kDenied, kError, kUnknown } outcome = kError;
};

// What one failover run measured.
struct FailoverFigures {
  int victim = 0;    // The port of the primary killed.
  int promoted = 0;  // The port of its replica, promoted.
  int64_t slowest_us = 0;
  int calls = 0;
  int64_t duration_us = 0;
  int errors = 0;
  int64_t kill_to_promotion_us = 0;
  // From the promotion to the end of the last failed call on the killed primary's keys.
  int64_t promotion_to_recovery_us = 0;
  // Per key: admitted - limit, and checks whose outcome the caller could not know (each may have
  // been recorded without being reported as admitted).
  std::vector<int> excess_on_killed;
  std::vector<int> excess_elsewhere;
  std::vector<int> unknown_on_killed;
  std::vector<int> unknown_elsewhere;
};

class RedisStoreClusterFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster =
        RedisCluster::Start({.node_timeout = milliseconds(1000)});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  // Runs the load on keys "{<prefix>:k}", kills the primary of key 0 once a third of the quota
  // is spent, waits for its replica's promotion (and, with `restart_killed`, restarts the killed
  // node so that it rejoins as a replica), and lets the load run until every key is exhausted.
  static FailoverFigures KillPrimaryUnderLoad(RedisStore& store, const std::string& prefix,
                                              bool restart_killed) {
    FailoverFigures figures;
    auto key_of = [&](int k) { return absl::StrCat("{", prefix, ":", k, "}"); };
    const int victim = *cluster_->PrimaryForSlot(ClusterHashSlot(key_of(0)));
    figures.victim = victim;
    const int replica = *cluster_->ReplicaOf(victim);
    figures.promoted = replica;
    std::vector<bool> on_victim(kKeys);
    for (int k = 0; k < kKeys; ++k) {
      on_victim[k] = *cluster_->PrimaryForSlot(ClusterHashSlot(key_of(k))) == victim;
    }

    const SteadyClock::time_point origin = SteadyClock::now();
    std::atomic<int> allowed_total{0};
    std::atomic<int64_t> promoted_at_us{-1};
    // Per key, checks denied that started after the promotion: three mean the key is exhausted.
    std::vector<std::atomic<int>> denied_after(kKeys);
    std::atomic<bool> stop{false};
    std::vector<std::vector<Call>> logs(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<Call>& log = logs[static_cast<size_t>(t)];
        std::mutex mu;
        for (int round = 0; !stop.load(); ++round) {
          auto batch = std::make_shared<testing::CallBatch>(kWindow);
          for (int i = 0; i < kWindow; ++i) {
            const int k = (round * kWindow + i + t * 5) % kKeys;
            const int64_t start = MicrosSince(origin);
            store.CheckAsync(
                key_of(k), LimitOf(k), 1, [&, batch, k, start](absl::StatusOr<Decision> d) {
                  Call call{.start_us = start, .end_us = MicrosSince(origin), .key = k};
                  if (!d.ok()) {
                    // A missed deadline, a dropped connection, or (durability) a decision WAIT
                    // could not confirm: each may have been recorded.
                    const bool unknown =
                        absl::IsDeadlineExceeded(d.status()) ||
                        absl::StrContains(d.status().message(), "outcome unknown") ||
                        absl::StrContains(d.status().message(), "recorded on the primary only");
                    call.outcome = unknown ? Call::kUnknown : Call::kError;
                  } else if (d->allowed) {
                    call.outcome = Call::kAllowed;
                    allowed_total.fetch_add(1);
                  } else {
                    call.outcome = Call::kDenied;
                    const int64_t promoted = promoted_at_us.load();
                    if (promoted >= 0 && start > promoted) denied_after[k].fetch_add(1);
                  }
                  {
                    std::lock_guard<std::mutex> lock(mu);
                    log.push_back(call);
                  }
                  batch->Done();
                });
          }
          batch->Wait();
        }
      });
    }

    EXPECT_TRUE(
        testing::WaitFor([&] { return allowed_total.load() > kKeys * kLimit / 3; }, 30'000));
    const int64_t killed_at_us = MicrosSince(origin);
    cluster_->Kill(victim);
    // The replica's promotion, as the rest of the cluster sees it (polled: real time is the
    // thing measured here).
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          absl::StatusOr<int> owner = cluster_->PrimaryForSlot(ClusterHashSlot(key_of(0)));
          return owner.ok() && *owner == replica;
        },
        20'000));
    promoted_at_us.store(MicrosSince(origin));
    if (restart_killed) {
      EXPECT_TRUE(cluster_->Restart(victim).ok());
    }
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          for (const std::atomic<int>& n : denied_after) {
            if (n.load() < 3) return false;
          }
          return true;
        },
        30'000));
    stop.store(true);
    for (std::thread& thread : threads) thread.join();

    std::vector<int> allowed(kKeys, 0);
    std::vector<int> unknown(kKeys, 0);
    int64_t last_failure_end_us = promoted_at_us.load();
    figures.duration_us = MicrosSince(origin);
    for (const std::vector<Call>& log : logs) {
      figures.calls += static_cast<int>(log.size());
      for (const Call& call : log) {
        figures.slowest_us = std::max(figures.slowest_us, call.end_us - call.start_us);
        if (call.outcome == Call::kAllowed) ++allowed[call.key];
        if (call.outcome == Call::kUnknown) ++unknown[call.key];
        if (call.outcome == Call::kError || call.outcome == Call::kUnknown) {
          ++figures.errors;
          if (on_victim[call.key]) last_failure_end_us = std::max(last_failure_end_us, call.end_us);
        }
      }
    }
    figures.kill_to_promotion_us = promoted_at_us.load() - killed_at_us;
    figures.promotion_to_recovery_us = last_failure_end_us - promoted_at_us.load();
    for (int k = 0; k < kKeys; ++k) {
      (on_victim[k] ? figures.excess_on_killed : figures.excess_elsewhere)
          .push_back(allowed[k] - kLimit);
      (on_victim[k] ? figures.unknown_on_killed : figures.unknown_elsewhere).push_back(unknown[k]);
    }
    return figures;
  }

  static void Print(const std::string& name, const FailoverFigures& f) {
    auto list = [](const std::vector<int>& v) {
      std::string out;
      for (int x : v) absl::StrAppend(&out, out.empty() ? "" : " ", x);
      return out;
    };
    std::cout << name << ": " << f.calls << " calls in " << f.duration_us / 1000 << " ms, "
              << kThreads * kWindow << " in flight; slowest call " << f.slowest_us / 1000.0
              << " ms (deadline " << kDeadline.count() << " ms), " << f.errors
              << " errors; kill -> promotion " << f.kill_to_promotion_us / 1000
              << " ms; promotion -> last failure " << f.promotion_to_recovery_us / 1000
              << " ms; admitted - limit on the killed "
              << "primary's keys: [" << list(f.excess_on_killed) << "] (outcomes unknown: ["
              << list(f.unknown_on_killed) << "]), elsewhere: [" << list(f.excess_elsewhere)
              << "] (outcomes unknown: [" << list(f.unknown_elsewhere) << "])\n";
  }

  static RedisCluster* cluster_;
};

RedisCluster* RedisStoreClusterFaultTest::cluster_ = nullptr;

// Verifies that a primary killed under load costs callers at most their deadline, that checks
// succeed again within seconds of the promotion, that keys on the other primaries stay exact, and
// bounds the over-admission on the killed primary's keys (asynchronous replication).
TEST_F(RedisStoreClusterFaultTest, KilledPrimaryFailsOverWithinSecondsAndBoundedExcess) {
  absl::StatusOr<std::unique_ptr<RedisStore>> store =
      RedisStore::Create({.url = cluster_->Url(), .command_timeout = kDeadline, .cluster = true});
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->WaitForConnection(std::chrono::seconds(10)).ok());

  // A router on the side, to see the promoted replica reported as a new primary.
  std::mutex told_mu;
  std::set<std::string> told;
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(cluster_->Url());
  ASSERT_TRUE(url.ok());
  absl::StatusOr<std::shared_ptr<RedisRouter>> router =
      CreateRedisRouter({.endpoint = EndpointOf(*url)});
  ASSERT_TRUE(router.ok()) << router.status();
  ASSERT_TRUE((*router)->WaitForConnection(std::chrono::seconds(10)).ok());
  (*router)->SetPrimaryListener([&](const std::shared_ptr<RedisClient>& primary) {
    std::lock_guard<std::mutex> lock(told_mu);
    told.insert(primary->Endpoint());
  });

  const FailoverFigures f = KillPrimaryUnderLoad(**store, "failover", /*restart_killed=*/false);
  Print("failover without WAIT", f);
  EXPECT_LT(f.slowest_us, (kDeadline + kSlack).count() * 1000);
  EXPECT_GT(f.errors, 0);  // The outage was seen.
  EXPECT_LT(f.promotion_to_recovery_us, 5'000'000);
  // Elsewhere exact, but for checks whose outcome was unknown (recorded, reported as errors).
  for (size_t k = 0; k < f.excess_elsewhere.size(); ++k) {
    EXPECT_LE(f.excess_elsewhere[k], 0) << k;
    EXPECT_GE(f.excess_elsewhere[k], -f.unknown_elsewhere[k]) << k;
  }
  ASSERT_FALSE(f.excess_on_killed.empty());
  for (size_t k = 0; k < f.excess_on_killed.size(); ++k) {
    // Lost increments are at most what replication had not shipped when the primary died; a
    // bound far above what was measured (docs/redis.md), to catch a systematic loss.
    EXPECT_LE(f.excess_on_killed[k], kThreads * kWindow) << k;
    EXPECT_GE(f.excess_on_killed[k], -f.unknown_on_killed[k]) << k;
  }
  // The side router learns the new primary (its map is refreshed every 5 s; ask now) and tells
  // its listener, which is how the store loads its scripts there before the first check.
  const std::string promoted = absl::StrCat("redis://127.0.0.1:", f.promoted);
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        dynamic_cast<ClusterClient&>(**router).RefreshForTest();
        std::lock_guard<std::mutex> lock(told_mu);
        return told.count(promoted) == 1;
      },
      10'000))
      << promoted;
  (*router)->SetPrimaryListener(nullptr);

  // A full cluster again for the next test: the killed node rejoins, as a replica.
  ASSERT_TRUE(cluster_->Restart(f.victim).ok());
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
}

// Verifies the durability option on a failover: with min_replicas=1 a decision is returned only
// once a replica has its write (WAIT), so the promoted replica has every admission that was
// reported: no key admits more than its limit. Until the killed node is back as a replica, WAIT
// cannot succeed on its shard and those checks fail (the failure policy's case).
TEST_F(RedisStoreClusterFaultTest, WithMinReplicasNoAdmissionIsLostOnFailover) {
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
  absl::StatusOr<std::unique_ptr<RedisStore>> store =
      RedisStore::Create({.url = cluster_->Url() + "?min_replicas=1&min_replicas_timeout_ms=20",
                          .command_timeout = kDeadline,
                          .cluster = true});
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->WaitForConnection(std::chrono::seconds(10)).ok());

  const FailoverFigures f = KillPrimaryUnderLoad(**store, "durable", /*restart_killed=*/true);
  Print("failover with min_replicas=1", f);
  EXPECT_LT(f.slowest_us, (kDeadline + kSlack).count() * 1000);
  EXPECT_LT(f.promotion_to_recovery_us, 10'000'000);
  for (size_t k = 0; k < f.excess_elsewhere.size(); ++k) {
    EXPECT_LE(f.excess_elsewhere[k], 0) << k;
    EXPECT_GE(f.excess_elsewhere[k], -f.unknown_elsewhere[k]) << k;
  }
  // No admission reported to a caller is lost: never above the limit. Checks that WAIT could not
  // confirm in time fail although they were recorded (outcome unknown to the caller).
  for (size_t k = 0; k < f.excess_on_killed.size(); ++k) {
    EXPECT_LE(f.excess_on_killed[k], 0) << k;
  }
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
}

// Verifies that a server taking a dead primary's address is never used as that primary: a plain
// redis-server started on the killed primary's port, with none of the slot's data, is reached by
// the client's reconnects, but fails the CLUSTER MYID check of every connect, so not one check
// runs there. The slot's keys fail until the replica is promoted, then follow the failover, and
// no key admits more than its limit (every admission was replicated before the kill: WAIT).
TEST_F(RedisStoreClusterFaultTest, AServerOnADeadPrimarysPortIsNotUsedAsThePrimary) {
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
  constexpr int kImpostorLimit = 100;
  const Limit limit{.algorithm = Algorithm::kFixedWindow,
                    .limit = kImpostorLimit,
                    .period = std::chrono::microseconds(std::chrono::hours(24 * 366))};
  // Keys of their own on every run (--gtest_repeat).
  static int run = 0;
  const std::string prefix = absl::StrCat("impostor", run++);
  auto key_of = [&](int k) { return absl::StrCat("{", prefix, ":", k, "}"); };
  const int slot0 = ClusterHashSlot(key_of(0));
  const absl::StatusOr<int> victim = cluster_->PrimaryForSlot(slot0);
  ASSERT_TRUE(victim.ok()) << victim.status();
  const absl::StatusOr<int> replica = cluster_->ReplicaOf(*victim);
  ASSERT_TRUE(replica.ok()) << replica.status();
  // The keys served by the victim (key 0 at least).
  std::vector<std::string> keys;
  for (int k = 0; k < kKeys; ++k) {
    absl::StatusOr<int> owner = cluster_->PrimaryForSlot(ClusterHashSlot(key_of(k)));
    ASSERT_TRUE(owner.ok()) << owner.status();
    if (*owner == *victim) keys.push_back(key_of(k));
  }

  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(
      {.url = cluster_->Url(), .command_timeout = milliseconds(200), .cluster = true});
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->WaitForConnection(std::chrono::seconds(10)).ok());
  std::vector<int> admitted(keys.size(), 0);
  std::vector<int> failed(keys.size(), 0);  // A failed check may have been recorded, unreported.
  int errors = 0;
  auto check = [&](size_t k) {
    absl::StatusOr<Decision> d = (*store)->Check(keys[k], limit);
    if (!d.ok()) {
      ++errors;
      ++failed[k];
    } else if (d->allowed) {
      ++admitted[k];
    }
    return d.ok();
  };
  // Half of each key's limit, all of it on the replica too before the kill.
  for (size_t k = 0; k < keys.size(); ++k) {
    for (int i = 0; i < kImpostorLimit / 2; ++i) ASSERT_TRUE(check(k)) << keys[k];
    ASSERT_EQ(admitted[k], kImpostorLimit / 2) << keys[k];
  }
  ASSERT_EQ(cluster_->Command(*victim, {"WAIT", "1", "5000"}).value_or(""), "1");

  cluster_->Kill(*victim);
  // A plain server that refuses replication: the killed primary's replica also reconnects to the
  // address (it was seen sending PSYNC there in every run), and a full sync of the impostor's
  // empty data set before its promotion would lose the slot's state in Redis itself
  // (docs/redis.md, "Guarantees"), which is not what this test is about.
  absl::StatusOr<std::unique_ptr<testing::RedisServer>> impostor = testing::RedisServer::Start(
      {.port = *victim, .args = {"--rename-command", "PSYNC", "", "--rename-command", "SYNC", ""}});
  ASSERT_TRUE(impostor.ok()) << "port " << *victim << ": " << impostor.status();

  // Until the promotion, checks of the slot reach only the impostor's address; each one fails
  // (its connection never passes the handshake). Then the map moves the slot to the replica.
  const SteadyClock::time_point killed = SteadyClock::now();
  const bool promoted = testing::WaitFor(
      [&] {
        for (size_t k = 0; k < keys.size(); ++k) check(k);
        absl::StatusOr<int> owner = cluster_->PrimaryForSlot(slot0);
        return owner.ok() && *owner == *replica;
      },
      20'000);
  ASSERT_TRUE(promoted);
  const int64_t promotion_us = MicrosSince(killed);
  const int errors_before_promotion = errors;
  EXPECT_GT(errors_before_promotion, 0);
  // Decisions resume on the promoted replica.
  EXPECT_TRUE(testing::WaitFor([&] { return check(0); }, 10'000));
  const int64_t recovery_us = MicrosSince(killed);
  // Each key offered twice its limit more: admitted up to the limit, never beyond (short of it
  // by at most the failed checks that were recorded all the same).
  for (size_t k = 0; k < keys.size(); ++k) {
    for (int i = 0; i < 2 * kImpostorLimit; ++i) check(k);
    EXPECT_LE(admitted[k], kImpostorLimit) << keys[k];
    EXPECT_GE(admitted[k], kImpostorLimit - failed[k]) << keys[k];
  }
  // The impostor was reached (the client's reconnects asked it CLUSTER MYID) but ran nothing:
  // no key written, no script called.
  EXPECT_EQ((*impostor)->Command({"DBSIZE"}).value_or("?"), "0");
  const std::string commands = (*impostor)->Command({"INFO", "commandstats"}).value_or("");
  EXPECT_TRUE(absl::StrContains(commands, "cmdstat_cluster")) << commands;
  for (const char* name : {"cmdstat_fcall", "cmdstat_evalsha", "cmdstat_eval:", "cmdstat_incr"}) {
    EXPECT_FALSE(absl::StrContains(commands, name)) << name << " in " << commands;
  }
  std::cout << "impostor on the killed primary's port: " << keys.size() << " keys of limit "
            << kImpostorLimit << ", admitted per key";
  for (int n : admitted) std::cout << " " << n;
  std::cout << "; " << errors_before_promotion << " checks failed before the promotion ("
            << promotion_us / 1000 << " ms after the kill), decisions again " << recovery_us / 1000
            << " ms after the kill\n";

  // A full cluster again for the next test: the impostor goes, the killed node rejoins.
  impostor->reset();
  ASSERT_TRUE(cluster_->Restart(*victim).ok());
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
}

}  // namespace
}  // namespace sluice
