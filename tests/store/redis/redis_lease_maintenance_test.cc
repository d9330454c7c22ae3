// The lease store's maintenance against a real redis-server (docs/redis.md, "Leases"): instances
// with lease=true count each other as leaseholders, and the unspent units of a token-bucket lease
// go back to Redis before the lease ends. Each waits for the store's own thread (every 100 ms) by
// polling its counters with a deadline.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisServer;
using std::chrono::milliseconds;

absl::StatusOr<std::unique_ptr<RedisStore>> MakeStore(const RedisServer& server,
                                                      std::string_view params) {
  RedisStoreOptions options{.url = absl::StrCat(server.Url(), std::string(params)),
                            .command_timeout = milliseconds(2000)};
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
  if (!store.ok()) return store.status();
  if (absl::Status s = (*store)->WaitForConnection(milliseconds(10000)); !s.ok()) return s;
  return store;
}

// Polls `done` until it holds or 10 s pass (the store's thread acts on its own timer).
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

class RedisLeaseMaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  std::unique_ptr<RedisServer> server_;
};

TEST_F(RedisLeaseMaintenanceTest, InstancesCountEachOtherAsLeaseholders) {
  absl::StatusOr<std::unique_ptr<RedisStore>> a = MakeStore(*server_, "?lease=true");
  absl::StatusOr<std::unique_ptr<RedisStore>> b = MakeStore(*server_, "?lease=true");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(Eventually([&] {
    return (*a)->Stats().lease.instances_seen == 2 && (*b)->Stats().lease.instances_seen == 2;
  })) << (*a)->Stats().lease.instances_seen
      << " " << (*b)->Stats().lease.instances_seen;
  // The record is a key of the store's prefix, with a TTL.
  absl::StatusOr<std::string> ttl = server_->Command({"PTTL", "sluice:lease:holders"});
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_GT(std::stoll(*ttl), 0);
}

TEST_F(RedisLeaseMaintenanceTest, TokenBucketLeaseIsGivenBackBeforeItEnds) {
  // 100 a minute refills under 2 tokens a second, so units kept by a lease that ended would show.
  const Limit limit{
      .algorithm = Algorithm::kTokenBucket, .limit = 100, .period = std::chrono::minutes(1)};
  absl::StatusOr<std::unique_ptr<RedisStore>> leased =
      MakeStore(*server_, "?lease=true&lease_ttl_ms=400");
  absl::StatusOr<std::unique_ptr<RedisStore>> exact = MakeStore(*server_, "");
  ASSERT_TRUE(leased.ok()) << leased.status();
  ASSERT_TRUE(exact.ok()) << exact.status();
  // The first request leases nothing; the second, right after, leases what that rate asks for.
  ASSERT_TRUE((*leased)->Check("k", limit)->allowed);
  ASSERT_TRUE((*leased)->Check("k", limit)->allowed);
  const uint64_t granted = (*leased)->Stats().lease.units_granted;
  ASSERT_GT(granted, 0u);
  absl::StatusOr<Decision> during = (*exact)->Check("k", limit, 0);
  ASSERT_TRUE(during.ok()) << during.status();
  EXPECT_LE(during->remaining, 100 - 2 - static_cast<int64_t>(granted) + 2);
  ASSERT_TRUE(Eventually([&] { return (*leased)->Stats().lease.units_refunded_ending > 0; }));
  EXPECT_EQ((*leased)->Stats().lease.units_refunded_ending, granted);
  // Back in the bucket: only the two requests are missing from it (less what refilled since).
  absl::StatusOr<Decision> after = (*exact)->Check("k", limit, 0);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GE(after->remaining, 98);
}

}  // namespace
}  // namespace sluice
