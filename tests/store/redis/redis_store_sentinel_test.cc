// The Redis store on a Sentinel-managed primary (redis-sentinel:// URL) across a failover: the
// primary is SIGKILLed under a steady load of checks, the Sentinels promote the replica, and the
// store must follow it within seconds, answer every call within its deadline meanwhile (a
// decision or an error), and enforce the limits again after. Over-admission is measured: keys are
// checked at a known rate until each is exhausted, so a key admitted more than its limit lost
// increments in the failover (replication is asynchronous). Real time is unavoidable here (real
// processes, a real failover); it bounds the test and is what is measured, never a sleep that
// stands in for an event.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "tests/testing/child_process.h"
#include "tests/testing/redis_sentinel.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr milliseconds kDeadline{50};

// The load: `rate` checks per second over all keys, spread evenly over `keys` keys and paced by
// `threads` threads, each key limited to `limit` in an hour-long window.
struct Load {
  int keys = 10;
  int threads = 2;
  int rate = 1000;
  int limit = 200;
};

struct Figures {
  int64_t admitted = 0;        // Allowed decisions, all keys.
  int64_t over_admitted = 0;   // Sum over keys of max(0, admitted - limit).
  int64_t under_admitted = 0;  // Sum over keys of max(0, limit - admitted).
  int64_t max_over_per_key = 0;
  int64_t errors = 0;            // Calls answered with an error (no decision).
  double slowest_ms = 0;         // Slowest call, from call to answer.
  double failover_ms = 0;        // Kill -> every Sentinel names the replica.
  double first_decision_ms = 0;  // Kill -> first decision from the store after the kill.
};

struct Scenario {
  // Appended to the fixture's URL ("?min_replicas=1...").
  std::string url_params = {};
  Load load = {};
  // When positive, the replica is detached (DetachReplica()) this long before the primary is
  // killed: the writes of that window reach no replica.
  milliseconds replica_detached_for{0};
  // Restart the old primary as a replica of the new one after the failover (WAIT needs one).
  bool reattach_old_primary = false;
};

// Runs the scenario's load; kills the primary after 1 s (detaching the replica before, if asked),
// waits for the failover, and runs until every key has been denied 10 times after it.
Figures RunFailover(testing::RedisSentinel& sentinel, const Scenario& scenario) {
  const Load& load = scenario.load;
  const int limit = load.limit;
  Figures f;
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(
      {.url = sentinel.Url() + scenario.url_params, .command_timeout = kDeadline});
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return f;
  EXPECT_TRUE((*store)->WaitForConnection(std::chrono::seconds(10)).ok());
  const Limit rule{.limit = limit, .period = std::chrono::hours(1)};
  const std::string run = absl::StrCat(SteadyClock::now().time_since_epoch().count());

  std::vector<std::atomic<int64_t>> admitted(load.keys);
  std::vector<std::atomic<int64_t>> denied_after(load.keys);
  std::atomic<bool> failed_over{false};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> slowest_us{0};
  std::atomic<int64_t> first_decision_us{-1};
  const auto start = SteadyClock::now();
  const auto kill_at = start + std::chrono::seconds(1);
  std::vector<std::thread> workers;
  for (int t = 0; t < load.threads; ++t) {
    workers.emplace_back([&, t] {
      const auto interval =
          std::chrono::microseconds(int64_t{1'000'000} * load.threads / load.rate);
      auto next = start + interval * t / load.threads;
      for (int i = 0; !stop.load(); ++i) {
        std::this_thread::sleep_until(next);
        next += interval;
        const int key = (i * load.threads + t) % load.keys;
        const auto begin = SteadyClock::now();
        absl::StatusOr<Decision> d = (*store)->Check(absl::StrCat(run, ":", key), rule, 1);
        const auto end = SteadyClock::now();
        const int64_t us =
            std::chrono::duration_cast<std::chrono::microseconds>(end - begin).count();
        int64_t prev = slowest_us.load();
        while (us > prev && !slowest_us.compare_exchange_weak(prev, us)) {
        }
        if (!d.ok()) {
          errors.fetch_add(1);
          continue;
        }
        if (begin > kill_at && first_decision_us.load() < 0) {
          first_decision_us.store(
              std::chrono::duration_cast<std::chrono::microseconds>(end - kill_at).count());
        }
        if (d->allowed) {
          admitted[key].fetch_add(1);
        } else if (failed_over.load()) {
          denied_after[key].fetch_add(1);
        }
      }
    });
  }
  if (scenario.replica_detached_for.count() > 0) {
    std::this_thread::sleep_until(kill_at - scenario.replica_detached_for);
    const absl::Status detached = sentinel.DetachReplica();
    EXPECT_TRUE(detached.ok()) << detached;
  }
  std::this_thread::sleep_until(kill_at);
  const int old_primary = sentinel.primary_port();
  sentinel.KillPrimary();
  absl::StatusOr<int> promoted = sentinel.WaitForFailover(old_primary);
  EXPECT_TRUE(promoted.ok()) << promoted.status();
  f.failover_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - kill_at).count();
  if (promoted.ok() && scenario.reattach_old_primary) {
    testing::RedisServer& old = sentinel.Server(old_primary);
    EXPECT_TRUE(old.Restart().ok());
    EXPECT_EQ(old.Command({"REPLICAOF", "127.0.0.1", std::to_string(*promoted)}).value_or(""),
              "OK");
  }
  failed_over.store(true);
  const bool exhausted = testing::WaitFor(
      [&] {
        return std::all_of(denied_after.begin(), denied_after.end(),
                           [](const std::atomic<int64_t>& n) { return n.load() >= 10; });
      },
      20'000);
  stop.store(true);
  for (std::thread& w : workers) w.join();
  EXPECT_TRUE(exhausted) << "not every key reached its limit after the failover";

  for (int k = 0; k < load.keys; ++k) {
    const int64_t n = admitted[k].load();
    f.admitted += n;
    f.over_admitted += std::max<int64_t>(0, n - limit);
    f.under_admitted += std::max<int64_t>(0, limit - n);
    f.max_over_per_key = std::max(f.max_over_per_key, n - limit);
  }
  f.errors = errors.load();
  f.slowest_ms = static_cast<double>(slowest_us.load()) / 1000.0;
  f.first_decision_ms = static_cast<double>(first_decision_us.load()) / 1000.0;
  return f;
}

void Report(const char* name, const Load& load, const Figures& f) {
  std::printf(
      "%s: %d keys x limit %d at %d checks/s (deadline %lld ms): admitted %lld (over-admitted "
      "%lld, max %lld per key; under-admitted %lld), errors %lld, slowest call %.1f ms; kill -> "
      "sentinels agree %.0f ms, kill -> first decision %.0f ms\n",
      name, load.keys, load.limit, load.rate, static_cast<long long>(kDeadline.count()),
      static_cast<long long>(f.admitted), static_cast<long long>(f.over_admitted),
      static_cast<long long>(f.max_over_per_key), static_cast<long long>(f.under_admitted),
      static_cast<long long>(f.errors), f.slowest_ms, f.failover_ms, f.first_decision_ms);
}

// Verifies that the store follows a failover within seconds and answers every call within its
// deadline meanwhile, and measures over-admission without the durability option.
TEST(RedisStoreSentinel, FollowsTheNewPrimaryAfterAFailover) {
  absl::StatusOr<std::unique_ptr<testing::RedisSentinel>> sentinel =
      testing::RedisSentinel::Start({});
  ASSERT_TRUE(sentinel.ok()) << sentinel.status();
  const Scenario scenario{.load = {.keys = 10, .threads = 2, .rate = 1000, .limit = 200}};
  const Figures f = RunFailover(**sentinel, scenario);
  Report("kill, async replication", scenario.load, f);
  EXPECT_LT(f.first_decision_ms, f.failover_ms + 2000);  // Followed within seconds.
  EXPECT_LT(f.slowest_ms, static_cast<double>((kDeadline * 10).count()));  // Nothing hung.
  EXPECT_GT(f.errors, 0);  // The outage was seen, as errors (the failure policy's to answer).
  // A process kill loses little: the replica was sent each write in the same event-loop turn as
  // its reply, and the kernel still delivers what was sent. A key can also be under its limit by
  // the calls in flight at the kill (counted by the server, answered with an error).
  EXPECT_LE(f.max_over_per_key, 20);
  EXPECT_LE(f.under_admitted, 2 * scenario.load.threads);
}

// Measures over-admission when the promoted replica missed the last writes (replication link cut
// 300 ms before the kill): each key is over-admitted by the checks it admitted in that window.
TEST(RedisStoreSentinel, OverAdmitsWhatTheReplicaMissed) {
  absl::StatusOr<std::unique_ptr<testing::RedisSentinel>> sentinel =
      testing::RedisSentinel::Start({});
  ASSERT_TRUE(sentinel.ok()) << sentinel.status();
  const Scenario scenario{.load = {.keys = 10, .threads = 2, .rate = 1000, .limit = 200},
                          .replica_detached_for = milliseconds(300)};
  const Figures f = RunFailover(**sentinel, scenario);
  Report("kill 300 ms after the replica fell behind, async replication", scenario.load, f);
  // 1000 checks/s for 300 ms: about 300 admitted on the old primary alone, 30 per key, and never
  // more than the window allows. The lower bound only shows the loss happened: on a loaded
  // machine the load threads fall behind their rate and the window admits fewer.
  EXPECT_GT(f.over_admitted, 0);
  EXPECT_LE(f.over_admitted, 400);
  EXPECT_LT(f.slowest_ms, static_cast<double>((kDeadline * 10).count()));
}

// Verifies the durability option (min_replicas=1) in the same case: a decision is admitted only
// once the replica has its write, so the failover admits nothing beyond the limit.
TEST(RedisStoreSentinel, DurabilityOptionAdmitsNothingBeyondTheLimitAcrossAFailover) {
  absl::StatusOr<std::unique_ptr<testing::RedisSentinel>> sentinel =
      testing::RedisSentinel::Start({});
  ASSERT_TRUE(sentinel.ok()) << sentinel.status();
  const Scenario scenario{.url_params = "?min_replicas=1&min_replicas_timeout_ms=20",
                          .load = {.keys = 10, .threads = 2, .rate = 1000, .limit = 500},
                          .replica_detached_for = milliseconds(300),
                          .reattach_old_primary = true};
  const Figures f = RunFailover(**sentinel, scenario);
  Report("kill 300 ms after the replica fell behind, min_replicas=1", scenario.load, f);
  EXPECT_EQ(f.over_admitted, 0);
  EXPECT_LT(f.slowest_ms, static_cast<double>((kDeadline * 10).count()));
}

// A measurement, not run by default (--gtest_also_run_disabled_tests): the plain kill at 16,000
// checks/s, where more increments are in flight on the replication stream.
TEST(RedisStoreSentinel, DISABLED_OverAdmissionAtAHigherRate) {
  absl::StatusOr<std::unique_ptr<testing::RedisSentinel>> sentinel =
      testing::RedisSentinel::Start({});
  ASSERT_TRUE(sentinel.ok()) << sentinel.status();
  const Scenario scenario{.load = {.keys = 20, .threads = 8, .rate = 16000, .limit = 1500}};
  const Figures f = RunFailover(**sentinel, scenario);
  Report("kill, async replication, higher rate", scenario.load, f);
  EXPECT_LT(f.slowest_ms, static_cast<double>((kDeadline * 10).count()));
}

}  // namespace
}  // namespace sluice
