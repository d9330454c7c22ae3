// Failures are logged, not silent (issue 13, point 5): Redis killed under load and restarted. The
// outage gives a bounded number of log lines (not one per failed check), names the server without
// its password, and every event is counted in the store and policy stats. Real time is only a
// bound (a real server and socket are involved).
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/failure_policy.h"
#include "sluice/redis_store.h"

#include "tests/testing/log_capture.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;

TEST(RedisStoreLogging, OutageAndRecoveryAreLoggedBoundedAndCounted) {
  testing::LogCapture logs;
  auto server = testing::RedisServer::Start({.config = {{"requirepass", "s3cret-pw"}}});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string url = "redis://:s3cret-pw@127.0.0.1:" + std::to_string((*server)->port());
  auto created = RedisStore::Create({.url = url, .command_timeout = milliseconds(50)});
  ASSERT_TRUE(created.ok()) << created.status();
  RedisStore* redis = created->get();
  ASSERT_TRUE(redis->WaitForConnection(std::chrono::seconds(5)).ok());
  std::unique_ptr<FailurePolicyStore> store = WithFailurePolicy(
      *std::move(created), {.mode = FailureMode::kLocal, .breaker_failure_threshold = 5,
                            .breaker_open_for = milliseconds(200)});

  // Four threads check for 1.5 s; Redis is killed 0.2 s in.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> checks{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      const Limit limit{.limit = 1'000'000, .period = std::chrono::seconds(60)};
      for (int i = 0; !stop.load(); ++i) {
        ASSERT_TRUE(store->Check("load:" + std::to_string(t * 100 + i % 50), limit, 1).ok());
        checks.fetch_add(1);
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(200));
  (*server)->Kill();
  std::this_thread::sleep_for(milliseconds(1300));
  stop.store(true);
  for (std::thread& w : workers) w.join();

  const FailureStats during = store->Stats();
  EXPECT_GT(during.store_errors, 0u);
  EXPECT_GE(during.breaker_opens, 1u);
  // About a second of outage: at most 2 check-failure lines (one a second) whatever the number of
  // failed checks, and each breaker opening logged.
  EXPECT_LE(logs.Count("check failed"), 2) << logs.Dump();
  EXPECT_GE(logs.Count("check failed"), 1) << logs.Dump();
  EXPECT_EQ(logs.Count("circuit breaker open after"), static_cast<int>(during.breaker_opens))
      << logs.Dump();
  const std::string named = "redis redis://:***@127.0.0.1:" + std::to_string((*server)->port());
  EXPECT_EQ(logs.Count(named + ": connection lost: "), 1) << logs.Dump();
  EXPECT_EQ(logs.Count(named + ": cannot connect: "), 1) << logs.Dump();

  // Back: the store answers again, the breaker closes, the reconnection is logged.
  ASSERT_TRUE((*server)->Restart().ok());
  const Limit limit{.limit = 1'000'000, .period = std::chrono::seconds(60)};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool enforced = false;
  while (!enforced && std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<Decision> d = store->Check("probe", limit, 1);
    enforced = d.ok() && !d->from_fallback;
    if (!enforced) std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_TRUE(enforced);
  const FailureStats after = store->Stats();
  EXPECT_FALSE(after.breaker_open);
  EXPECT_GE(after.breaker_closes, 1u);
  EXPECT_GE(logs.Count("circuit breaker closed"), 1) << logs.Dump();
  EXPECT_EQ(logs.Count(named + ": connected again after "), 1) << logs.Dump();
  const RedisStoreStats redis_stats = redis->Stats();
  EXPECT_EQ(redis_stats.disconnects, 1u);
  EXPECT_GE(redis_stats.connect_failures, 1u);
  EXPECT_EQ(redis_stats.connects, 2u);
  // The server is named, its password never.
  EXPECT_EQ(logs.Count("redis://:***@127.0.0.1:"), 3) << logs.Dump();
  EXPECT_EQ(logs.Count("s3cret-pw"), 0) << logs.Dump();
  RecordProperty("checks", static_cast<int>(checks.load()));
  RecordProperty("store_errors", static_cast<int>(after.store_errors));
  RecordProperty("log_lines", static_cast<int>(logs.Lines().size()));
}

}  // namespace
}  // namespace sluice
