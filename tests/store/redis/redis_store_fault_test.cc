// Fault tests of the Redis store behind its failure policy: Redis killed (SIGKILL) and paused
// (SIGSTOP) under load. Every call must come back within its deadline with the policy's answer,
// never hang; once Redis is back, limits must be enforced again. Real time is unavoidable here (a
// real server, a real socket); it is only ever an upper bound, generous enough for a loaded CI.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/failure_policy.h"
#include "sluice/redis_store.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kDeadline{50};
// A call taking longer than this has hung: 20x the deadline, to stay clear of scheduler noise.
constexpr milliseconds kHang{1000};

struct Harness {
  explicit Harness(FailureMode mode) {
    auto server = testing::RedisServer::Start();
    EXPECT_TRUE(server.ok()) << server.status();
    redis = *std::move(server);
    auto store = RedisStore::Create({.url = redis->Url(), .command_timeout = kDeadline});
    EXPECT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->WaitForConnection(std::chrono::seconds(5)).ok());
    limiter = WithFailurePolicy(*std::move(store),
                                {.mode = mode, .breaker_failure_threshold = 5,
                                 .breaker_open_for = milliseconds(200)});
  }

  // Runs `threads` workers issuing checks until `stop`; returns the slowest call seen.
  milliseconds Hammer(int threads, const std::atomic<bool>& stop, std::atomic<int>& fallbacks,
                      std::atomic<int>& errors) {
    std::vector<std::thread> workers;
    std::atomic<int64_t> slowest_us{0};
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        const Limit limit{.limit = 1'000'000, .period = std::chrono::seconds(60)};
        for (int i = 0; !stop.load(); ++i) {
          const auto start = Clock::now();
          absl::StatusOr<Decision> d =
              limiter->Check("load:" + std::to_string(t) + ":" + std::to_string(i % 50), limit, 1);
          const int64_t us =
              std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
          int64_t prev = slowest_us.load();
          while (us > prev && !slowest_us.compare_exchange_weak(prev, us)) {
          }
          if (!d.ok()) {
            errors.fetch_add(1);
          } else if (d->from_fallback) {
            fallbacks.fetch_add(1);
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    return std::chrono::duration_cast<milliseconds>(std::chrono::microseconds(slowest_us.load()));
  }

  // Polls until a check is answered by Redis again (not the fallback); returns whether it was.
  bool WaitUntilEnforced(milliseconds bound) {
    const auto deadline = Clock::now() + bound;
    const Limit limit{.limit = 1'000'000, .period = std::chrono::seconds(60)};
    while (Clock::now() < deadline) {
      absl::StatusOr<Decision> d = limiter->Check("probe", limit, 1);
      if (d.ok() && !d->from_fallback) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  std::unique_ptr<testing::RedisServer> redis;
  std::unique_ptr<FailurePolicyStore> limiter;
};

// Verifies a killed Redis never hangs callers, the deny policy answers, and limits come back.
TEST(RedisStoreFault, KilledRedisAnswersByPolicyThenRecovers) {
  Harness h(FailureMode::kDeny);
  std::atomic<bool> stop{false};
  std::atomic<int> fallbacks{0};
  std::atomic<int> errors{0};
  std::thread killer([&] {
    std::this_thread::sleep_for(milliseconds(200));  // Let load build up first.
    h.redis->Kill();
    std::this_thread::sleep_for(milliseconds(500));  // The outage under load.
    stop.store(true);
  });
  const milliseconds slowest = h.Hammer(4, stop, fallbacks, errors);
  killer.join();
  EXPECT_LT(slowest, kHang);
  EXPECT_GT(fallbacks.load(), 0);
  EXPECT_EQ(errors.load(), 0);  // The policy answered every failure.

  ASSERT_TRUE(h.redis->Restart().ok());
  EXPECT_TRUE(h.WaitUntilEnforced(std::chrono::seconds(2)));
  // Enforced exactly again: a fresh key admits its limit and no more.
  const Limit five{.limit = 5, .period = std::chrono::hours(1)};
  int admitted = 0;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<Decision> d = h.limiter->Check("after-restart", five, 1);
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->from_fallback);
    admitted += d->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 5);
}

// Verifies a paused Redis (socket open, nothing answers) costs callers at most the deadline.
TEST(RedisStoreFault, PausedRedisTimesOutWithinTheDeadline) {
  Harness h(FailureMode::kAllow);
  std::atomic<bool> stop{false};
  std::atomic<int> fallbacks{0};
  std::atomic<int> errors{0};
  std::thread pauser([&] {
    std::this_thread::sleep_for(milliseconds(200));
    h.redis->Pause();
    std::this_thread::sleep_for(milliseconds(600));
    stop.store(true);
  });
  const milliseconds slowest = h.Hammer(4, stop, fallbacks, errors);
  pauser.join();
  EXPECT_LT(slowest, kHang);
  EXPECT_GT(fallbacks.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  h.redis->Resume();
  EXPECT_TRUE(h.WaitUntilEnforced(std::chrono::seconds(2)));
}

// Verifies that with no policy the error itself reaches the caller, promptly.
TEST(RedisStoreFault, PropagatePolicyReturnsUnavailableFast) {
  Harness h(FailureMode::kPropagate);
  h.redis->Kill();
  const Limit limit{.limit = 10, .period = std::chrono::seconds(1)};
  for (int i = 0; i < 20; ++i) {
    const auto start = Clock::now();
    absl::StatusOr<Decision> d = h.limiter->Check("k", limit, 1);
    EXPECT_LT(Clock::now() - start, kHang);
    EXPECT_FALSE(d.ok());
    EXPECT_TRUE(absl::IsUnavailable(d.status()) || absl::IsDeadlineExceeded(d.status()))
        << d.status();
  }
}

}  // namespace
}  // namespace sluice
