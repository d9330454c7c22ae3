#include "tests/testing/redis_sentinel.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace sluice::testing {
namespace {

// Verifies that the fixture's Sentinels fail the primary over to the replica when it is killed,
// and that the replica then takes writes.
TEST(RedisSentinelFixture, PromotesTheReplicaWhenThePrimaryIsKilled) {
  auto sentinel = RedisSentinel::Start({.data_password = "datapw", .sentinel_password = "sentpw"});
  ASSERT_TRUE(sentinel.ok()) << sentinel.status();
  RedisSentinel& s = **sentinel;
  const int old_primary = s.primary_port();
  const int replica = s.replica_port();
  EXPECT_TRUE(absl::StartsWith(s.Url(), "redis-sentinel://:datapw@127.0.0.1:")) << s.Url();
  EXPECT_TRUE(absl::EndsWith(s.Url(), "/sluice-primary?sentinel_password=sentpw")) << s.Url();
  for (size_t i = 0; i < s.sentinel_ports().size(); ++i) {
    EXPECT_EQ(s.SentinelPrimaryPort(i).value_or(0), old_primary);
  }
  EXPECT_EQ(s.Server(replica).Command({"SET", "k", "v"}).value_or(""),
            "ERR:READONLY You can't write against a read only replica.");

  const auto killed_at = std::chrono::steady_clock::now();
  s.KillPrimary();
  absl::StatusOr<int> promoted = s.WaitForFailover(old_primary);
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - killed_at);
  EXPECT_EQ(*promoted, replica);
  EXPECT_EQ(s.primary_port(), replica);
  EXPECT_EQ(s.Server(replica).Command({"SET", "k", "v"}).value_or(""), "OK");
  RecordProperty("failover_ms", absl::StrCat(took.count()));
  std::printf("failover: every sentinel names the replica %lld ms after the kill\n",
              static_cast<long long>(took.count()));
}

}  // namespace
}  // namespace sluice::testing
