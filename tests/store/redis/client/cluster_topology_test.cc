// Parsing CLUSTER SHARDS and CLUSTER SLOTS replies into a slot map (no server).
#include "src/store/redis/client/cluster/cluster_topology.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/store/redis/client/cluster/cluster_slot.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

RedisReply S(std::string s) { return RedisReply::String(std::move(s)); }
RedisReply I(int64_t v) { return RedisReply::Integer(v); }
RedisReply A(std::vector<RedisReply> e) { return RedisReply::Array(std::move(e)); }

// One node of a CLUSTER SHARDS reply, as Redis 7.0 writes it.
RedisReply ShardNode(std::string ip, int64_t port, std::string role, std::string health = "online",
                     std::string endpoint = "") {
  return A({S("id"), S("id-" + std::to_string(port)), S("port"), I(port), S("ip"), S(ip),
            S("endpoint"), S(endpoint.empty() ? ip : endpoint), S("role"), S(std::move(role)),
            S("replication-offset"), I(72156), S("health"), S(std::move(health))});
}

RedisReply Shard(std::vector<RedisReply> slots, std::vector<RedisReply> nodes) {
  return A({S("slots"), A(std::move(slots)), S("nodes"), A(std::move(nodes))});
}

RedisNode N(std::string host, int port) { return {.host = std::move(host), .port = port}; }

TEST(ParseClusterShards, ReadsPrimariesSlotsAndOnlineReplicas) {
  const RedisReply reply = A({
      Shard({I(0), I(5460), I(16000), I(16383)},
            {ShardNode("10.0.0.1", 7000, "master"), ShardNode("10.0.0.4", 7003, "replica"),
             ShardNode("10.0.0.7", 7006, "replica", "loading")}),
      Shard({I(5461), I(15999)},
            {ShardNode("10.0.0.5", 7004, "replica"), ShardNode("10.0.0.2", 7001, "master")}),
      // A primary that lost its slots (failed over): not routed to.
      Shard({}, {ShardNode("10.0.0.3", 7002, "master", "failed")}),
  });
  absl::StatusOr<ClusterMap> map = ParseClusterShards(reply, "seed", /*tls=*/false);
  ASSERT_TRUE(map.ok()) << map.status();
  ASSERT_EQ(map->shards.size(), 2u);
  EXPECT_EQ(map->shards[0].primary, N("10.0.0.1", 7000));
  EXPECT_THAT(map->shards[0].slots, ElementsAre(std::pair(0, 5460), std::pair(16000, 16383)));
  EXPECT_THAT(map->shards[0].replicas, ElementsAre(N("10.0.0.4", 7003)));
  EXPECT_EQ(map->shards[1].primary, N("10.0.0.2", 7001));
  EXPECT_THAT(map->shards[1].replicas, ElementsAre(N("10.0.0.5", 7004)));
  EXPECT_EQ(map->CoveredSlots(), kClusterSlots);
  // The node ids, which every connect checks (CLUSTER MYID).
  EXPECT_EQ(map->shards[0].primary_id, "id-7000");
  EXPECT_THAT(map->shards[0].replica_ids, ElementsAre("id-7003"));
  EXPECT_EQ(map->shards[1].primary_id, "id-7001");
  EXPECT_THAT(map->shards[1].replica_ids, ElementsAre("id-7004"));

  absl::StatusOr<std::vector<int16_t>> table = ClusterSlotTable(*map);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)[0], 0);
  EXPECT_EQ((*table)[5460], 0);
  EXPECT_EQ((*table)[5461], 1);
  EXPECT_EQ((*table)[15999], 1);
  EXPECT_EQ((*table)[16000], 0);
}

TEST(ParseClusterShards, PrefersTheEndpointAndFallsBackToTheAskedHost) {
  const RedisReply reply = A({
      Shard({I(0), I(99)}, {ShardNode("10.0.0.1", 7000, "master", "online", "redis-a.internal")}),
      Shard({I(100), I(199)}, {ShardNode("", 7001, "master", "online", "?")}),
  });
  absl::StatusOr<ClusterMap> map = ParseClusterShards(reply, "seed.example", false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->shards[0].primary, N("redis-a.internal", 7000));
  EXPECT_EQ(map->shards[1].primary, N("seed.example", 7001));
  EXPECT_EQ(map->CoveredSlots(), 200);
}

TEST(ParseClusterShards, UsesTheTlsPortOverTls) {
  RedisReply node =
      A({S("id"), S("x"), S("port"), I(7000), S("tls-port"), I(7100), S("ip"), S("10.0.0.1"),
         S("endpoint"), S("10.0.0.1"), S("role"), S("master"), S("health"), S("online")});
  const RedisReply reply = A({Shard({I(0), I(16383)}, {node})});
  EXPECT_EQ(ParseClusterShards(reply, "", /*tls=*/true)->shards[0].primary.port, 7100);
  EXPECT_EQ(ParseClusterShards(reply, "", /*tls=*/false)->shards[0].primary.port, 7000);
}

TEST(ParseClusterShards, RefusesMalformedReplies) {
  const std::vector<RedisReply> bad = {
      S("not an array"),
      A({A({S("slots"), A({I(0)}), S("nodes"), A({ShardNode("h", 1, "master")})})}),
      A({Shard({I(0), I(16384)}, {ShardNode("h", 1, "master")})}),
      A({Shard({I(10), I(5)}, {ShardNode("h", 1, "master")})}),
      A({Shard({I(0), I(10)}, {ShardNode("h", 0, "master")})}),
      A({Shard({I(0), I(10)}, {ShardNode("h", 1, "replica")})}),
      A({Shard({S("0"), S("10")}, {ShardNode("h", 1, "master")})}),
      A({A({S("nodes"), A({})})}),
      // Two primaries claiming slot 10.
      A({Shard({I(0), I(10)}, {ShardNode("a", 1, "master")}),
         Shard({I(10), I(20)}, {ShardNode("b", 1, "master")})}),
  };
  for (const RedisReply& reply : bad) {
    absl::StatusOr<ClusterMap> map = ParseClusterShards(reply, "seed", false);
    EXPECT_TRUE(absl::IsInternal(map.status())) << reply.DebugString();
    EXPECT_THAT(map.status().message(), HasSubstr("CLUSTER SHARDS")) << reply.DebugString();
  }
}

TEST(ParseClusterSlots, MergesRangesOfOnePrimary) {
  const RedisReply reply = A({
      A({I(0), I(5460), A({S("127.0.0.1"), I(30001), S("id1"), A({})}),
         A({S("127.0.0.1"), I(30004), S("id4"), A({})})}),
      A({I(5461), I(10922), A({S("127.0.0.1"), I(30002), S("id2")})}),
      A({I(10923), I(16383), A({S("127.0.0.1"), I(30001), S("id1")}),
         A({S("127.0.0.1"), I(30004), S("id4")})}),
  });
  absl::StatusOr<ClusterMap> map = ParseClusterSlots(reply, "seed");
  ASSERT_TRUE(map.ok()) << map.status();
  ASSERT_EQ(map->shards.size(), 2u);
  EXPECT_EQ(map->shards[0].primary, N("127.0.0.1", 30001));
  EXPECT_THAT(map->shards[0].slots, ElementsAre(std::pair(0, 5460), std::pair(10923, 16383)));
  EXPECT_THAT(map->shards[0].replicas, ElementsAre(N("127.0.0.1", 30004)));
  EXPECT_EQ(map->CoveredSlots(), kClusterSlots);
  EXPECT_EQ(map->shards[0].primary_id, "id1");
  EXPECT_THAT(map->shards[0].replica_ids, ElementsAre("id4"));
  EXPECT_EQ(map->shards[1].primary_id, "id2");
  EXPECT_TRUE(map->shards[1].replica_ids.empty());
}

TEST(ParseClusterSlots, ANodeWithoutAnIdHasAnEmptyOne) {
  // Servers before Redis 4 report [host, port] only: nothing to check a connect against.
  const RedisReply reply =
      A({A({I(0), I(16383), A({S("127.0.0.1"), I(30001)}), A({S("127.0.0.1"), I(30004)})})});
  absl::StatusOr<ClusterMap> map = ParseClusterSlots(reply, "seed");
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->shards[0].primary_id, "");
  EXPECT_THAT(map->shards[0].replica_ids, ElementsAre(""));
}

TEST(ParseClusterSlots, AnUnknownEndpointIsTheAskedHost) {
  const RedisReply reply = A({
      A({I(0), I(16383), A({RedisReply::Nil(), I(30001), S("id1")})}),
  });
  EXPECT_EQ(ParseClusterSlots(reply, "seed")->shards[0].primary, N("seed", 30001));
  const RedisReply question = A({A({I(0), I(16383), A({S("?"), I(30001), S("id1")})})});
  EXPECT_EQ(ParseClusterSlots(question, "seed")->shards[0].primary, N("seed", 30001));
}

TEST(ParseClusterSlots, RefusesMalformedReplies) {
  const std::vector<RedisReply> bad = {
      I(1),
      A({A({I(0), I(16383)})}),
      A({A({I(0), I(16383), A({S("h")})})}),
      A({A({I(0), I(16383), A({S("h"), I(70000)})})}),
      A({A({I(0), I(16383), A({I(1), I(1)})})}),
      A({A({I(-1), I(5), A({S("h"), I(1)})})}),
      A({A({I(0), I(5), A({S("h"), I(1)}), S("junk")})}),
  };
  for (const RedisReply& reply : bad) {
    EXPECT_TRUE(absl::IsInternal(ParseClusterSlots(reply, "seed").status())) << reply.DebugString();
  }
}

TEST(ClusterSlotTable, LeavesUnservedSlotsEmpty) {
  ClusterMap map{.shards = {ClusterShard{.primary = N("a", 1), .slots = {{0, 0}, {16383, 16383}}}}};
  absl::StatusOr<std::vector<int16_t>> table = ClusterSlotTable(map);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)[0], 0);
  EXPECT_EQ((*table)[1], -1);
  EXPECT_EQ((*table)[16383], 0);
  EXPECT_EQ(map.CoveredSlots(), 2);
}

}  // namespace
}  // namespace sluice
