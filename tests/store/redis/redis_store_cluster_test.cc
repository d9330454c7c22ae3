// The Redis store on a real Redis Cluster (3 primaries, 3 replicas): every test vector replayed
// through the cluster client, all-or-nothing within one tag, keys spread on every primary with a
// TTL each, exact limits across processes, and live resharding under load without an error or an
// extra admission. Failover under load is in redis_store_cluster_fault_test.cc.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <sys/wait.h>
#include <unistd.h>

#include "sluice/limit.h"
#include "sluice/redis_store.h"
#include "sluice/store_url.h"

#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/store/redis/client/redis_router_factory.h"
#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/lua_scripts_for_test.h"
#include "src/store/redis/redis_lease.h"
#include "src/store/redis/script_runner.h"
#include "tests/testing/call_batch.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_cluster.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/test_vectors.h"

namespace sluice {

void PrintTo(const Decision& d, std::ostream* os) {
  *os << "{allowed=" << d.allowed << " limit=" << d.limit << " remaining=" << d.remaining
      << " reset_after=" << d.reset_after.count() << "us retry_after=" << d.retry_after.count()
      << "us}";
}

namespace {

using ::sluice::testing::EndpointOf;
using ::sluice::testing::LoadAllVectors;
using ::sluice::testing::RedisCluster;
using ::sluice::testing::VectorCase;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// Long enough that no window boundary falls inside a test (windows align to epoch multiples).
constexpr auto kLongPeriod = std::chrono::hours(24 * 366);
// Generous: these tests are about the cluster, not about a loaded machine's latency.
constexpr milliseconds kTimeout{5000};

const std::vector<Algorithm> kAllAlgorithms = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                               Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                               Algorithm::kGcra};

// A limit of algorithm number `k` (mod 5) under which nothing refills during a test: windows of a
// year, buckets of a day (a bucket's limit x period must stay under 2^50 us, docs/algorithms.md).
Limit LongLimit(int k, int64_t limit) {
  const Algorithm algorithm = kAllAlgorithms[static_cast<size_t>(k) % kAllAlgorithms.size()];
  const bool bucket = algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra;
  return Limit{.algorithm = algorithm,
               .limit = limit,
               .period = bucket ? std::chrono::microseconds(std::chrono::hours(24))
                                : std::chrono::microseconds(kLongPeriod)};
}

class RedisStoreClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster = RedisCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static absl::StatusOr<std::unique_ptr<RedisStore>> MakeStore() {
    absl::StatusOr<std::unique_ptr<RedisStore>> store =
        RedisStore::Create({.url = cluster_->Url(), .command_timeout = kTimeout, .cluster = true});
    if (!store.ok()) return store.status();
    if (absl::Status s = (*store)->WaitForConnection(std::chrono::seconds(10)); !s.ok()) return s;
    return store;
  }

  static std::shared_ptr<RedisRouter> MakeRouter() {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(cluster_->Url());
    EXPECT_TRUE(url.ok()) << url.status();
    absl::StatusOr<std::shared_ptr<RedisRouter>> router =
        CreateRedisRouter({.endpoint = EndpointOf(*url), .command_timeout = kTimeout});
    EXPECT_TRUE(router.ok()) << router.status();
    if (!router.ok()) return nullptr;
    absl::Status ready = (*router)->WaitForConnection(std::chrono::seconds(10));
    EXPECT_TRUE(ready.ok()) << ready;
    return *router;
  }

  // The primaries' ports (empty, and a failure, if the cluster cannot say).
  static std::vector<int> Primaries() {
    absl::StatusOr<std::vector<int>> ports = cluster_->PrimaryPorts();
    EXPECT_TRUE(ports.ok()) << ports.status();
    return ports.ok() ? *std::move(ports) : std::vector<int>();
  }

  // Keys stored on each primary (DBSIZE), by port.
  static std::map<int, int64_t> KeysPerPrimary() {
    std::map<int, int64_t> out;
    for (int port : Primaries()) {
      int64_t n = -1;
      EXPECT_TRUE(absl::SimpleAtoi(*cluster_->Command(port, {"DBSIZE"}), &n));
      out[port] = n;
    }
    return out;
  }

  static RedisCluster* cluster_;
};

RedisCluster* RedisStoreClusterTest::cluster_ = nullptr;

absl::StatusOr<RedisReply> RunScript(ScriptRunner& runner, const LuaScript& script,
                                     const std::vector<std::string>& keys,
                                     const std::vector<std::string>& args) {
  std::promise<absl::StatusOr<RedisReply>> promise;
  std::future<absl::StatusOr<RedisReply>> future = promise.get_future();
  runner.Run(script, keys, args,
             [&promise](absl::StatusOr<RedisReply> reply) { promise.set_value(std::move(reply)); });
  return future.get();
}

// Verifies that the cluster transport changes no decision: every vector's steps, through the
// cluster client and the test-time scripts (time passed in), each case on its own slot.
TEST_F(RedisStoreClusterTest, EveryVectorGivesTheSpecifiedDecisions) {
  std::shared_ptr<RedisRouter> router = MakeRouter();
  ASSERT_NE(router, nullptr);
  ScriptRunner runner(router, {.timeout = kTimeout});
  const std::vector<VectorCase> cases = LoadAllVectors();
  ASSERT_FALSE(cases.empty());
  std::map<int, int> cases_per_primary;
  for (const VectorCase& c : cases) {
    SCOPED_TRACE(c.name);
    for (const bool check_all : {false, true}) {
      const std::string key = absl::StrCat("{vector:", c.name, check_all ? ":all" : "", "}");
      ++cases_per_primary[*cluster_->PrimaryForSlot(ClusterHashSlot(key))];
      for (size_t i = 0; i < c.steps.size(); ++i) {
        SCOPED_TRACE(absl::StrCat(check_all ? "check_all" : "check", " step ", i));
        // A credit only check_all decides (the single-check scripts refuse it).
        const bool credit = c.steps[i].credit;
        std::vector<std::string> args = {absl::StrCat(c.steps[i].now_us)};
        AppendCheckArguments(c.limit, c.steps[i].cost, args, /*count_rejected=*/false, credit);
        absl::StatusOr<RedisReply> reply =
            RunScript(runner,
                      check_all || credit ? CheckAllScriptForTest()
                                          : CheckScriptForTest(c.limit.algorithm),
                      {key}, args);
        ASSERT_TRUE(reply.ok()) << reply.status();
        ASSERT_FALSE(reply->is_error()) << reply->DebugString();
        if (check_all || credit) {
          absl::StatusOr<MultiDecision> multi = ParseCheckAllReply(*reply, 1);
          ASSERT_TRUE(multi.ok()) << multi.status();
          EXPECT_EQ(multi->allowed, c.steps[i].expect.allowed);
          EXPECT_EQ(multi->decisions[0], c.steps[i].expect);
        } else {
          absl::StatusOr<Decision> d = ParseCheckReply(*reply);
          ASSERT_TRUE(d.ok()) << d.status();
          EXPECT_EQ(*d, c.steps[i].expect);
        }
      }
    }
  }
  // The cases ran on every primary, each of which loaded the scripts on its first NOSCRIPT.
  EXPECT_EQ(cases_per_primary.size(), 3u);
  EXPECT_GE(runner.Stats().noscript_resends, 3u);
}

// Verifies all-or-nothing within one tag on the cluster: one script call over keys of one slot.
TEST_F(RedisStoreClusterTest, CheckAllIsAllOrNothingWithinATag) {
  absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore();
  ASSERT_TRUE(store.ok()) << store.status();
  const Limit one{.limit = 1, .period = kLongPeriod};
  const Limit ten{.limit = 10, .period = kLongPeriod};
  for (int user = 0; user < 12; ++user) {
    SCOPED_TRACE(user);
    const std::string tight = absl::StrCat("{user:", user, "}tight");
    const std::string loose = absl::StrCat("{user:", user, "}loose");
    const std::vector<LimitCheck> checks = {{.key = tight, .limit = one, .cost = 1},
                                            {.key = loose, .limit = ten, .cost = 1}};
    absl::StatusOr<MultiDecision> first = (*store)->CheckAll(checks);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_TRUE(first->allowed);
    absl::StatusOr<MultiDecision> second = (*store)->CheckAll(checks);
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_FALSE(second->allowed);
    // The denied call recorded nothing on the loose limit: 9 left, not 8.
    absl::StatusOr<Decision> peek = (*store)->Check(loose, ten, 0);
    ASSERT_TRUE(peek.ok()) << peek.status();
    EXPECT_EQ(peek->remaining, 9);
  }
}

// Verifies that keys spread over every primary and that every key written has a TTL.
// Verifies leases on a real cluster (redis_lease.h): a grant is one script in one slot, refused
// across slots; refunds of leases in several slots each go to their own primary.
TEST_F(RedisStoreClusterTest, LeasesAreOneSlotAndRefundsFindEachPrimary) {
  absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore();
  ASSERT_TRUE(store.ok()) << store.status();
  internal::LeaseSource* source = LeaseSourceOf(**store);
  ASSERT_NE(source, nullptr);
  const auto lease = [source](std::vector<LimitCheck> checks,
                              std::vector<internal::LeaseWant> wants) {
    std::promise<absl::StatusOr<internal::LeasedDecision>> promise;
    std::future<absl::StatusOr<internal::LeasedDecision>> answer = promise.get_future();
    source->DecideAndLease(checks, wants, [&promise](absl::StatusOr<internal::LeasedDecision> d) {
      promise.set_value(std::move(d));
    });
    return answer.get();
  };
  const internal::LeaseWant want{.units = 4, .ttl = std::chrono::seconds(60)};
  // One tag, one slot: granted per key, atomically.
  absl::StatusOr<internal::LeasedDecision> tagged =
      lease({{.key = "{lease}:a", .limit = LongLimit(0, 10)},
             {.key = "{lease}:b", .limit = LongLimit(3, 10)}},
            {want, want});
  ASSERT_TRUE(tagged.ok()) << tagged.status();
  EXPECT_EQ(tagged->grants[0].granted, 4);
  EXPECT_EQ(tagged->grants[1].granted, 4);
  // Keys on every primary: each leased alone, refunded together.
  std::vector<internal::LeaseRefund> refunds;
  for (int i = 0; i < 12; ++i) {
    const LimitCheck check{.key = absl::StrCat("lease-", i), .limit = LongLimit(i, 10)};
    absl::StatusOr<internal::LeasedDecision> d = lease({check}, {want});
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->grants[0].granted, 4);
    internal::LeaseRefund refund;
    refund.check = check;
    refund.grant = d->grants[0];
    refund.unspent = 4;
    refunds.push_back(std::move(refund));
  }
  absl::StatusOr<internal::LeasedDecision> across =
      lease({{.key = "lease-0", .limit = LongLimit(0, 10)},
             {.key = "lease-1", .limit = LongLimit(1, 10)}},
            {want, want});
  EXPECT_EQ(across.status().code(), absl::StatusCode::kInvalidArgument) << across.status();
  std::promise<absl::Status> refunded;
  std::future<absl::Status> answer = refunded.get_future();
  source->Refund(refunds, [&refunded](absl::Status s) { refunded.set_value(std::move(s)); });
  ASSERT_TRUE(answer.get().ok());
  for (int i = 0; i < 12; ++i) {
    absl::StatusOr<Decision> peek = (*store)->Check(absl::StrCat("lease-", i), LongLimit(i, 10), 0);
    ASSERT_TRUE(peek.ok()) << peek.status();
    EXPECT_EQ(peek->remaining, 9) << i;  // the request's unit stays, the lease's 4 are back
  }
}

TEST_F(RedisStoreClusterTest, KeysLandOnEveryPrimaryAndEachHasATtl) {
  absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore();
  ASSERT_TRUE(store.ok()) << store.status();
  const std::map<int, int64_t> before = KeysPerPrimary();
  for (int i = 0; i < 150; ++i) {
    const Algorithm algorithm = kAllAlgorithms[static_cast<size_t>(i) % kAllAlgorithms.size()];
    const Limit limit{.algorithm = algorithm, .limit = 5, .period = std::chrono::seconds(60)};
    absl::StatusOr<Decision> d = (*store)->Check(absl::StrCat("spread:", i), limit, 1);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed);
  }
  const std::map<int, int64_t> after = KeysPerPrimary();
  ASSERT_EQ(after.size(), 3u);
  for (const auto& [port, keys] : after) {
    // 150 keys over 3 primaries: each gets some (binomial; fewer than 20 is vanishingly rare).
    EXPECT_GE(keys - before.at(port), 20) << "primary " << port;
    absl::StatusOr<std::vector<std::string>> names =
        cluster_->CommandArray(port, {"KEYS", "*spread*"});
    ASSERT_TRUE(names.ok()) << names.status();
    for (const std::string& name : *names) {
      int64_t ttl_ms = 0;
      ASSERT_TRUE(absl::SimpleAtoi(*cluster_->Command(port, {"PTTL", name}), &ttl_ms));
      EXPECT_GT(ttl_ms, 0) << name;
    }
  }
}

// Verifies exactness across processes on the cluster: 4 processes, each with its own store and
// 32 checks in flight, over 40 keys spread on every primary (all five algorithms): exactly
// `limit` admitted per key, no error.
TEST_F(RedisStoreClusterTest, ExactAcrossProcesses) {
  constexpr int kProcesses = 4;
  constexpr int kInFlight = 32;
  constexpr int kKeys = 40;
  constexpr int kLimit = 25;
  constexpr int kRounds = 15;  // 4 x 32 x 15 = 1920 offered, 48 per key.
  std::set<int> primaries;
  for (int k = 0; k < kKeys; ++k) {
    primaries.insert(*cluster_->PrimaryForSlot(ClusterHashSlot(absl::StrCat("{exact:", k, "}"))));
  }
  ASSERT_EQ(primaries.size(), 3u);
  auto limit_of = [](int k) { return LongLimit(k, kLimit); };
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int p = 0; p < kProcesses; ++p) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Child: its own store (cluster client, connections, threads). Reports, per key, how many
      // checks were allowed, then the number of errors.
      close(fds[0]);
      std::vector<std::atomic<int>> allowed(kKeys);
      std::atomic<int> errors{0};
      absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore();
      if (!store.ok()) {
        errors = -1000;
      } else {
        for (int round = 0; round < kRounds; ++round) {
          auto batch = std::make_shared<testing::CallBatch>(kInFlight);
          for (int i = 0; i < kInFlight; ++i) {
            const int k = (round * kInFlight + i + p * 7) % kKeys;
            (*store)->CheckAsync(absl::StrCat("{exact:", k, "}"), limit_of(k), 1,
                                 [&, batch, k](absl::StatusOr<Decision> d) {
                                   if (!d.ok()) {
                                     errors.fetch_add(1);
                                   } else if (d->allowed) {
                                     allowed[static_cast<size_t>(k)].fetch_add(1);
                                   }
                                   batch->Done();
                                 });
          }
          batch->Wait();
        }
      }
      std::string report;
      for (const std::atomic<int>& a : allowed) absl::StrAppend(&report, a.load(), " ");
      absl::StrAppend(&report, errors.load());
      (void)!write(fds[1], report.data(), report.size());
      close(fds[1]);
      _exit(0);
    }
    close(fds[1]);
    children.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<int> allowed(kKeys, 0);
  int errors = 0;
  for (int p = 0; p < kProcesses; ++p) {
    std::string report;
    char buffer[1024];
    ssize_t n = 0;
    while ((n = read(pipes[p], buffer, sizeof(buffer))) > 0) report.append(buffer, n);
    close(pipes[p]);
    int status = 0;
    waitpid(children[p], &status, 0);
    const std::vector<std::string> parts = absl::StrSplit(report, ' ');
    ASSERT_EQ(parts.size(), static_cast<size_t>(kKeys + 1)) << "child " << p << ": " << report;
    for (int k = 0; k < kKeys; ++k) allowed[k] += std::stoi(parts[k]);
    errors += std::stoi(parts[kKeys]);
  }
  EXPECT_EQ(errors, 0);
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_EQ(allowed[k], kLimit) << "key " << k << " (" << AlgorithmName(limit_of(k).algorithm)
                                  << ")";
  }
}

// Verifies live resharding: the slots of the keys under load move to another primary and back,
// key by key (MIGRATE in batches of two, so ASK and MOVED both happen), while four threads keep
// checking. Callers see no error, and each key admits exactly its limit.
TEST_F(RedisStoreClusterTest, LiveReshardingUnderLoadIsExactAndErrorFree) {
  absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore();
  ASSERT_TRUE(store.ok()) << store.status();
  constexpr int kTags = 6;
  constexpr int kKeysPerTag = 8;
  constexpr int kKeys = kTags * kKeysPerTag;
  constexpr int kLimit = 150;
  constexpr int kThreads = 4;
  auto key_of = [](int k) { return absl::StrCat("{reshard:", k / kKeysPerTag, "}", k); };
  auto limit_of = [](int k) { return LongLimit(k, kLimit); };
  std::vector<std::atomic<int>> allowed(kKeys);
  std::vector<std::atomic<int>> offered(kKeys);
  std::atomic<int> total_allowed{0};
  std::atomic<int> errors{0};
  std::atomic<bool> resharded{false};
  std::mutex first_error_mu;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Every thread goes over every key, from its own starting point, until the resharding is
      // over and every key has been offered past its limit.
      for (int i = 0;; ++i) {
        const int k = (i + t * 13) % kKeys;
        if (k == 0 && resharded.load()) {
          bool all_past = true;
          for (const std::atomic<int>& n : offered) all_past = all_past && n.load() > kLimit + 10;
          if (all_past) break;
        }
        offered[static_cast<size_t>(k)].fetch_add(1);
        absl::StatusOr<Decision> d = (*store)->Check(key_of(k), limit_of(k), 1);
        if (!d.ok()) {
          if (errors.fetch_add(1) == 0) {
            std::lock_guard<std::mutex> lock(first_error_mu);
            first_error = d.status().ToString();
          }
        } else if (d->allowed) {
          allowed[static_cast<size_t>(k)].fetch_add(1);
          total_allowed.fetch_add(1);
        }
      }
    });
  }
  // Start moving once a fifth of the quota is spent, so that admissions happen before, during
  // and after the moves.
  ASSERT_TRUE(testing::WaitFor([&] { return total_allowed.load() > kKeys * kLimit / 5; }, 30'000));
  const int admitted_before = total_allowed.load();
  int slots_moved = 0;
  absl::Status moves;
  for (int pass = 0; pass < 2 && moves.ok(); ++pass) {
    for (int tag = 0; tag < kTags && moves.ok(); ++tag) {
      // Each pass moves every slot to another primary than the one serving it.
      const int slot = ClusterHashSlot(key_of(tag * kKeysPerTag));
      const absl::StatusOr<int> from = cluster_->PrimaryForSlot(slot);
      if (!from.ok()) {
        moves = from.status();
        break;
      }
      int to = 0;
      for (int port : Primaries()) {
        if (port != *from) to = port;
      }
      moves = cluster_->BeginSlotMigration(slot, to);
      if (moves.ok()) moves = cluster_->MigrateSlotKeys(slot, /*batch=*/2);
      if (moves.ok()) moves = cluster_->FinishSlotMigration(slot);
      if (moves.ok()) ++slots_moved;
    }
  }
  const int admitted_during = total_allowed.load() - admitted_before;
  resharded.store(true);
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(moves.ok()) << moves;
  EXPECT_EQ(errors.load(), 0) << first_error;
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_GT(offered[static_cast<size_t>(k)].load(), kLimit) << k;
    EXPECT_EQ(allowed[static_cast<size_t>(k)].load(), kLimit)
        << "key " << key_of(k) << " (" << AlgorithmName(limit_of(k).algorithm) << ")";
  }
  std::cout << "resharding: " << slots_moved << " slot moves, " << admitted_during
            << " admissions while slots moved, " << errors.load() << " errors\n";
  EXPECT_EQ(slots_moved, 2 * kTags);
  // Admissions happened while slots moved, or the test proved nothing about exactness.
  EXPECT_GT(admitted_during, 0);
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
}

}  // namespace
}  // namespace sluice
