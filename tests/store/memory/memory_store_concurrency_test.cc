// The memory store under concurrent use. Time is a ManualClock that the main thread moves only
// while the workers are joined, so every total is exact; real time serves only as a watchdog.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"
#include "sluice/store.h"

#include "tests/store/memory/memory_store_test_util.h"
#include "tests/testing/manual_clock.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::ManualClock;
using testing::NewStore;
using testing::Peek;

constexpr int kThreads = 4;

// Aborts the test binary if it outlives `limit` of real time, so a deadlock fails fast with a
// message instead of hanging until ctest's timeout.
class Watchdog {
 public:
  explicit Watchdog(absl::Duration limit)
      : thread_([this, limit] {
          if (!done_.WaitForNotificationWithTimeout(limit)) {
            std::fprintf(stderr, "watchdog: test still running after %s; deadlock?\n",
                         absl::FormatDuration(limit).c_str());
            std::abort();
          }
        }) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    done_.Notify();
    thread_.join();
  }

 private:
  absl::Notification done_;
  std::thread thread_;
};

// Runs `body(thread_index)` on kThreads threads released together, and joins them.
template <typename Body>
void RunWorkers(Body body) {
  std::latch start(kThreads);
  std::vector<std::thread> workers;
  workers.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&start, &body, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (std::thread& worker : workers) worker.join();
}

// Verifies the store's atomicity on one hot key: 4 threads race 4000 requests at a limit of 1000,
// and exactly 1000 pass in each round, for every algorithm.
TEST(MemoryStoreConcurrency, HotKeyAdmitsExactlyTheLimitPerWindow) {
  Watchdog watchdog(absl::Seconds(120));
  constexpr int64_t kLimit = 1000;
  constexpr int kAttemptsPerThread = 1000;
  constexpr int kRounds = 3;
  for (int a = 0; a < kAlgorithmCount; ++a) {
    const auto algorithm = static_cast<Algorithm>(a);
    ManualClock clock;
    auto store = NewStore(clock);
    Limit limit{.algorithm = algorithm, .limit = kLimit, .period = seconds(1)};
    if (algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) {
      limit.burst = kLimit;
    }
    for (int round = 0; round < kRounds; ++round) {
      std::array<int64_t, kThreads> admitted{};
      RunWorkers([&](int t) {
        for (int i = 0; i < kAttemptsPerThread; ++i) {
          absl::StatusOr<Decision> d = store->Check("hot", limit, 1);
          if (d.ok() && d->allowed) ++admitted[t];
        }
      });
      EXPECT_EQ(std::accumulate(admitted.begin(), admitted.end(), int64_t{0}), kLimit)
          << Describe(limit) << " round " << round;
      EXPECT_EQ(Peek(*store, "hot", limit).remaining, 0);
      // Two periods: even the sliding window's previous window has slid out by then.
      clock.Advance(seconds(2));
    }
  }
}

// Verifies per-key exactness with many keys spread over every shard: each thread walks all keys
// from its own offset, and every key admits exactly its limit.
TEST(MemoryStoreConcurrency, ManyKeysEachAdmitExactlyTheirLimit) {
  Watchdog watchdog(absl::Seconds(120));
  constexpr int kKeys = 2000;
  constexpr int kPasses = 5;
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{.limit = 10, .period = seconds(1)};
  std::vector<std::string> keys;
  keys.reserve(kKeys);
  for (int i = 0; i < kKeys; ++i) keys.push_back(absl::StrCat("user:", i));
  for (int round = 0; round < 2; ++round) {
    std::array<std::vector<int>, kThreads> admitted;
    RunWorkers([&](int t) {
      admitted[t].assign(kKeys, 0);
      for (int pass = 0; pass < kPasses; ++pass) {
        for (int i = 0; i < kKeys; ++i) {
          const int k = (i + t * kKeys / kThreads) % kKeys;
          absl::StatusOr<Decision> d = store->Check(keys[k], limit, 1);
          if (d.ok() && d->allowed) ++admitted[t][k];
        }
      }
    });
    for (int k = 0; k < kKeys; ++k) {
      int total = 0;
      for (const std::vector<int>& per_thread : admitted) total += per_thread[k];
      ASSERT_EQ(total, 10) << keys[k] << " round " << round;
    }
    EXPECT_EQ(store->Stats().entries, static_cast<size_t>(kKeys));
    clock.Advance(seconds(1));
  }
}

// Verifies that CheckAll() calls naming the same keys in different orders neither deadlock (the
// watchdog) nor split: every call names all 8 keys, so all-or-nothing means each key admits
// exactly as many calls as passed in total, and all are exhausted together.
TEST(MemoryStoreConcurrency, CheckAllOverSharedKeysInAnyOrderIsAtomic) {
  Watchdog watchdog(absl::Seconds(120));
  constexpr int64_t kLimit = 300;
  constexpr int kCallsPerThread = 200;
  ManualClock clock;
  auto store = NewStore(clock, {.shards = 4});
  const Limit limit{.limit = kLimit, .period = seconds(10)};
  std::vector<LimitCheck> checks;
  checks.reserve(8);
  for (int i = 0; i < 8; ++i) checks.push_back({.key = absl::StrCat("key", i), .limit = limit});
  std::array<int64_t, kThreads> passed{};
  RunWorkers([&](int t) {
    std::vector<LimitCheck> mine = checks;
    std::mt19937 rng(t);
    for (int i = 0; i < kCallsPerThread; ++i) {
      std::shuffle(mine.begin(), mine.end(), rng);
      absl::StatusOr<MultiDecision> result = store->CheckAll(mine);
      if (result.ok() && result->allowed) ++passed[t];
    }
  });
  EXPECT_EQ(std::accumulate(passed.begin(), passed.end(), int64_t{0}), kLimit);
  for (const LimitCheck& check : checks) EXPECT_EQ(Peek(*store, check.key, limit).remaining, 0);
}

// Exercises every path at once for the thread sanitizer: checks, CheckAll(), eviction from a small
// store, sweeps, SweepExpired() and Stats(), over many short windows. Only the invariants that
// hold under any interleaving are asserted.
TEST(MemoryStoreConcurrency, MixedOperationsAcrossManyWindows) {
  Watchdog watchdog(absl::Seconds(120));
  ManualClock clock;
  auto store = NewStore(clock, {.max_entries = 2048, .sweep_interval = milliseconds(5)});
  for (int phase = 0; phase < 20; ++phase) {
    RunWorkers([&](int t) {
      std::mt19937 rng(100 * phase + t);
      for (int i = 0; i < 500; ++i) {
        const auto algorithm = static_cast<Algorithm>(rng() % kAlgorithmCount);
        const Limit limit{
            .algorithm = algorithm, .limit = 5, .period = milliseconds(1 + rng() % 50)};
        const std::string key =
            absl::StrCat(rng() % 2 ? "k" : "a-key-longer-than-15:", rng() % 3000);
        switch (rng() % 10) {
          case 0: {
            const std::vector<LimitCheck> checks = {
                {.key = key, .limit = limit, .cost = 1},
                {.key = absl::StrCat("k", rng() % 3000), .limit = limit, .cost = 1}};
            EXPECT_TRUE(store->CheckAll(checks).ok());
            break;
          }
          case 1:
            if (t == 0) store->SweepExpired();
            EXPECT_LE(store->Stats().entries, 2048u);
            break;
          default:
            EXPECT_TRUE(store->Check(key, limit, rng() % 3).ok());
        }
      }
    });
    clock.Advance(milliseconds(7));
  }
  EXPECT_LE(store->Stats().entries, 2048u);
}

}  // namespace
}  // namespace sluice
