// The Redis allocator (src/lua/quota_share.lua, against a real redis-server) and the memory
// allocator (DecideQuotaShare()) give the same shares for the same reports at the same times; the
// production script takes Redis TIME and leaves every key with a TTL.
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/store_url.h"

#include "src/server/rlqs/memory_quota_allocator.h"
#include "src/server/rlqs/quota_share_for_test.h"
#include "src/server/rlqs/redis_quota_allocator.h"
#include "src/store/redis/client/redis_client.h"
#include "tests/testing/manual_clock.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/skip_or_fail.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

absl::StatusOr<QuotaShare> AllocateSync(QuotaAllocator& allocator, const QuotaReport& report) {
  std::promise<absl::StatusOr<QuotaShare>> promise;
  allocator.Allocate(
      report, [&](absl::StatusOr<QuotaShare> share) { promise.set_value(std::move(share)); });
  return promise.get_future().get();
}

class QuotaAllocatorRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::RedisServer>> server = testing::RedisServer::Start();
    if (!server.ok()) SLUICE_SKIP_OR_FAIL("no redis-server: " + server.status().ToString());
    server_ = std::move(*server);
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(server_->Url());
    ASSERT_TRUE(url.ok());
    absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(
        {.endpoint = testing::EndpointOf(*url), .command_timeout = milliseconds(2000)});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::shared_ptr<RedisClient>(std::move(*client));
    ASSERT_TRUE(client_->WaitForConnection(milliseconds(5000)).ok());
  }

  std::unique_ptr<testing::RedisServer> server_;
  std::shared_ptr<RedisClient> client_;
};

// Random reports and top-ups from a few clients on a few buckets, with time moving by random
// steps (often past TTLs): both allocators answer every one alike.
TEST_F(QuotaAllocatorRedisTest, RedisAndMemoryAllocateAlike) {
  testing::ManualClock clock;
  MemoryQuotaAllocator memory(clock);
  RedisQuotaAllocator redis(client_, {.timeout = milliseconds(2000)}, QuotaShareScriptForTest(),
                            &clock);
  std::mt19937_64 rng(0x5171);
  const uint64_t limits[3] = {10, 1, 1000};
  int granted_some = 0;
  for (int step = 0; step < 600; ++step) {
    const int b = std::uniform_int_distribution<int>(0, 2)(rng);
    // Fixed-length lowercase hex ids, as the service makes them.
    const QuotaReport report{
        .bucket = absl::StrCat("dom\x1fkey=", b),
        .client = absl::StrCat("c", std::uniform_int_distribution<int>(0, 5)(rng)),
        .demand = std::uniform_int_distribution<uint64_t>(0, 2 * limits[b])(rng),
        .limit = limits[b],
        .ttl = seconds(std::uniform_int_distribution<int>(1, 6)(rng)),
        .top_up = std::uniform_int_distribution<int>(0, 2)(rng) == 0};
    absl::StatusOr<QuotaShare> in_memory = AllocateSync(memory, report);
    absl::StatusOr<QuotaShare> in_redis = AllocateSync(redis, report);
    ASSERT_TRUE(in_memory.ok()) << in_memory.status();
    ASSERT_TRUE(in_redis.ok()) << in_redis.status();
    ASSERT_EQ(in_memory->granted, in_redis->granted) << "step " << step;
    ASSERT_EQ(in_memory->wanted, in_redis->wanted) << "step " << step;
    ASSERT_EQ(in_memory->clients, in_redis->clients) << "step " << step;
    ASSERT_EQ(in_memory->demand, in_redis->demand) << "step " << step;
    ASSERT_EQ(in_memory->granted_total, in_redis->granted_total) << "step " << step;
    ASSERT_LE(in_redis->granted_total, report.limit);
    if (in_redis->granted > 0) ++granted_some;
    clock.Advance(milliseconds(std::uniform_int_distribution<int>(0, 1500)(rng)));
  }
  EXPECT_GT(granted_some, 100);  // the run exercised grants, not only denials
}

// The production script: time from Redis TIME, and the bucket's key expires with its last record.
TEST_F(QuotaAllocatorRedisTest, ProductionScriptGrantsAndSetsTheKeysTtl) {
  RedisQuotaAllocator redis(client_, {.key_prefix = "t:", .timeout = milliseconds(2000)});
  const QuotaReport a{
      .bucket = "d\x1fk=v", .client = "a", .demand = 30, .limit = 10, .ttl = seconds(3)};
  absl::StatusOr<QuotaShare> share = AllocateSync(redis, a);
  ASSERT_TRUE(share.ok()) << share.status();
  EXPECT_EQ(share->granted, 10u);
  QuotaReport b = a;
  b.client = "b";
  b.ttl = seconds(5);
  share = AllocateSync(redis, b);
  ASSERT_TRUE(share.ok()) << share.status();
  EXPECT_EQ(share->granted, 0u);  // a's grant is live
  EXPECT_EQ(share->clients, 2u);
  absl::StatusOr<std::string> pttl = server_->Command({"PTTL", redis.BucketKey(a.bucket)});
  ASSERT_TRUE(pttl.ok()) << pttl.status();
  // b's record, the last to end: its TTL and the delivery grace, rounded up to the millisecond.
  EXPECT_GT(std::stoll(*pttl), 4000);
  EXPECT_LE(std::stoll(*pttl), 6001);
}

TEST_F(QuotaAllocatorRedisTest, ScriptRefusesBadArgumentsAndForeignState) {
  RedisQuotaAllocator redis(client_, {.key_prefix = "t:", .timeout = milliseconds(2000)});
  const QuotaReport a{.bucket = "x", .client = "a", .demand = 1, .limit = 10, .ttl = seconds(3)};
  ASSERT_TRUE(server_->Command({"HSET", redis.BucketKey("x"), "z", "not a record"}).ok());
  absl::StatusOr<QuotaShare> share = AllocateSync(redis, a);
  EXPECT_EQ(share.status().code(), absl::StatusCode::kInternal) << share.status();
  QuotaReport bad = a;
  bad.ttl = seconds(0);
  EXPECT_EQ(AllocateSync(redis, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
