// The RedisCluster fixture itself: the cluster it builds is healthy, and it can move slots and
// lose a primary to its replica.
#include "tests/testing/redis_cluster.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/store/redis/client/cluster/cluster_slot.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(ParseClusterNodes, ReadsRolesSlotsAndMigrationMarks) {
  absl::StatusOr<std::vector<ClusterNodeInfo>> nodes = ParseClusterNodes(
      "07c3 127.0.0.1:30004@31004 slave e7d1 0 1426238317239 4 connected\n"
      "e7d1 127.0.0.1:30001@31001,host myself,master - 0 0 1 connected 0-5460 5462 "
      "[5461->-67ed]\n"
      "67ed 127.0.0.1:30002@31002 master,fail? - 1426238316232 1426238317741 2 connected\n");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_THAT(*nodes, SizeIs(3));
  EXPECT_FALSE((*nodes)[0].primary);
  EXPECT_EQ((*nodes)[0].primary_id, "e7d1");
  EXPECT_EQ((*nodes)[0].port, 30004);
  EXPECT_TRUE((*nodes)[1].myself);
  EXPECT_EQ((*nodes)[1].slots, (std::vector<std::pair<int, int>>{{0, 5460}, {5462, 5462}}));
  EXPECT_TRUE((*nodes)[2].failing);
  EXPECT_FALSE(ParseClusterNodes("garbage\n").ok());
}

class RedisClusterTest : public ::testing::Test {
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

  static RedisCluster* cluster_;
};

RedisCluster* RedisClusterTest::cluster_ = nullptr;

TEST_F(RedisClusterTest, StartsThreePrimariesEachWithAReplica) {
  absl::StatusOr<std::vector<int>> primaries = cluster_->PrimaryPorts();
  ASSERT_TRUE(primaries.ok()) << primaries.status();
  EXPECT_THAT(*primaries, SizeIs(3));
  for (int port : *primaries) EXPECT_TRUE(cluster_->ReplicaOf(port).ok()) << port;
  EXPECT_THAT(cluster_->Url(), HasSubstr("redis-cluster://127.0.0.1:"));
  EXPECT_THAT(cluster_->Ports(), SizeIs(6));
}

TEST_F(RedisClusterTest, MovesASlotWithItsKeys) {
  const std::string key = "{fixture}:k";
  const int slot = ClusterHashSlot(key);
  absl::StatusOr<int> from = cluster_->PrimaryForSlot(slot);
  ASSERT_TRUE(from.ok()) << from.status();
  ASSERT_EQ(*cluster_->Command(*from, {"SET", key, "v"}), "OK");
  absl::StatusOr<std::vector<int>> primaries = cluster_->PrimaryPorts();
  ASSERT_TRUE(primaries.ok());
  const int to = (*primaries)[0] != *from ? (*primaries)[0] : (*primaries)[1];

  ASSERT_TRUE(cluster_->BeginSlotMigration(slot, to).ok());
  // Half-way: the source still serves the key it has.
  EXPECT_EQ(*cluster_->Command(*from, {"GET", key}), "v");
  ASSERT_TRUE(cluster_->MigrateSlotKeys(slot).ok());
  // The key is gone from the source, which now sends the client to the target.
  EXPECT_THAT(*cluster_->Command(*from, {"GET", key}), HasSubstr("ASK"));
  ASSERT_TRUE(cluster_->FinishSlotMigration(slot).ok());
  EXPECT_THAT(*cluster_->Command(*from, {"GET", key}), HasSubstr("MOVED"));
  EXPECT_EQ(*cluster_->Command(to, {"GET", key}), "v");
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
  EXPECT_EQ(*cluster_->PrimaryForSlot(slot), to);
}

// Declared last, so it runs last: it leaves the cluster one node short.
TEST_F(RedisClusterTest, KilledPrimaryIsReplacedByItsReplica) {
  const int slot = ClusterHashSlot("{failover}");
  absl::StatusOr<int> primary = cluster_->PrimaryForSlot(slot);
  ASSERT_TRUE(primary.ok());
  absl::StatusOr<int> replica = cluster_->ReplicaOf(*primary);
  ASSERT_TRUE(replica.ok()) << replica.status();
  cluster_->Kill(*primary);
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
  EXPECT_EQ(*cluster_->PrimaryForSlot(slot), *replica);
}

}  // namespace
}  // namespace sluice::testing
