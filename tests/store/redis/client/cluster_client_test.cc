// ClusterClient against a real 3-primary Redis Cluster: routing by slot, MOVED after a slot moves,
// ASK during a migration, TRYAGAIN and CLUSTERDOWN resent within the deadline, and never a resend
// of a command whose outcome is unknown. Real time is only a watchdog or a deadline under test.
#include "src/store/redis/client/cluster/cluster_client.h"

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/store_url.h"

#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/store/redis/client/io_thread.h"
#include "src/store/redis/client/redis_error.h"
#include "src/store/redis/client/redis_router_factory.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_cluster.h"
#include "tests/testing/redis_endpoint_of.h"

namespace sluice {
namespace {

using ::sluice::testing::Await;
using ::sluice::testing::Capture;
using ::sluice::testing::EndpointOf;
using ::sluice::testing::kWatchdog;
using ::sluice::testing::RedisCluster;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using SteadyClock = std::chrono::steady_clock;

class ClusterClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Without full coverage, a slot nobody serves fails alone ("CLUSTERDOWN Hash slot not
    // served") instead of taking the whole cluster down: the CLUSTERDOWN test needs that.
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster = RedisCluster::Start(
        {.replicas_per_primary = 0, .config = {{"cluster-require-full-coverage", "no"}}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    client_ = Connect({});
    ASSERT_NE(client_, nullptr);
  }

  static std::shared_ptr<ClusterClient> Connect(ClusterClientOptions options) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(cluster_->Url());
    EXPECT_TRUE(url.ok()) << url.status();
    options.node.endpoint = EndpointOf(*url);
    // Deadlines here are about the cluster, not a loaded machine: generous unless under test.
    options.node.command_timeout = std::chrono::seconds(2);
    absl::StatusOr<std::shared_ptr<ClusterClient>> client = ClusterClient::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return nullptr;
    absl::Status connected = (*client)->WaitForConnection(kWatchdog);
    EXPECT_TRUE(connected.ok()) << connected;
    return *client;
  }

  absl::StatusOr<RedisReply> Run(std::initializer_list<std::string_view> argv, std::string_view key,
                                 milliseconds timeout = milliseconds(2000)) {
    auto [done, future] = Capture();
    client_->Route(RedisCommand::Format(argv), key, timeout, std::move(done));
    return Await(future);
  }

  // A primary other than the one serving `slot`.
  static int OtherPrimary(int slot) {
    const absl::StatusOr<int> from = cluster_->PrimaryForSlot(slot);
    const absl::StatusOr<std::vector<int>> primaries = cluster_->PrimaryPorts();
    if (!from.ok() || !primaries.ok()) return 0;
    for (int port : *primaries) {
      if (port != *from) return port;
    }
    return 0;
  }

  static RedisCluster* cluster_;
  std::shared_ptr<ClusterClient> client_;
};

RedisCluster* ClusterClientTest::cluster_ = nullptr;

TEST_F(ClusterClientTest, KnowsEveryPrimaryAndSlot) {
  EXPECT_EQ(client_->Primaries().size(), 3u);
  const ClusterClientStats stats = client_->Stats();
  EXPECT_EQ(stats.covered_slots, kClusterSlots);
  EXPECT_EQ(stats.primaries, 3);
  EXPECT_GE(stats.refreshes, 1u);
  EXPECT_THAT(client_->Describe(), HasSubstr("redis-cluster://127.0.0.1:"));
  EXPECT_EQ(client_->DefaultTimeout(), milliseconds(2000));
}

// Verifies that keys land on the primary that serves their slot, with no redirect on the way.
TEST_F(ClusterClientTest, RoutesEachKeyToThePrimaryOfItsSlot) {
  std::set<int> ports;
  for (int i = 0; i < 60; ++i) {
    const std::string key = absl::StrCat("{route:", i, "}:k");
    absl::StatusOr<RedisReply> set = Run({"SET", key, absl::StrCat(i)}, key);
    ASSERT_TRUE(set.ok()) << set.status();
    ASSERT_EQ(*set, RedisReply::Status("OK"));
    const int port = *cluster_->PrimaryForSlot(ClusterHashSlot(key));
    ports.insert(port);
    EXPECT_EQ(*cluster_->Command(port, {"GET", key}), absl::StrCat(i)) << key;
  }
  EXPECT_EQ(ports.size(), 3u);
  EXPECT_EQ(client_->Stats().moved, 0u);
  EXPECT_EQ(client_->Stats().asked, 0u);
}

TEST_F(ClusterClientTest, AnEmptyKeyGoesToAnyPrimary) {
  absl::StatusOr<RedisReply> pong = Run({"PING"}, "");
  ASSERT_TRUE(pong.ok()) << pong.status();
  EXPECT_EQ(*pong, RedisReply::Status("PONG"));
}

TEST_F(ClusterClientTest, CommandsSentBeforeTheMapIsKnownWaitForIt) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(cluster_->Url());
  ASSERT_TRUE(url.ok());
  absl::StatusOr<std::shared_ptr<ClusterClient>> fresh = ClusterClient::Create(
      {.node = {.endpoint = EndpointOf(*url), .command_timeout = std::chrono::seconds(2)}});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto [done, future] = Capture();
  (*fresh)->Route(RedisCommand::Format({"SET", "{early}", "1"}), "{early}", milliseconds(2000),
                  std::move(done));
  absl::StatusOr<RedisReply> reply = Await(future);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, RedisReply::Status("OK"));
}

// Verifies MOVED: after a slot moves, the old primary answers MOVED; the client resends to the
// node named (the command did not run) and refreshes its map, so later commands go straight.
TEST_F(ClusterClientTest, FollowsMovedAfterASlotMoves) {
  const std::string key = "{moved}:counter";
  const int slot = ClusterHashSlot(key);
  ASSERT_EQ(*Run({"INCR", key}, key), RedisReply::Integer(1));
  const int to = OtherPrimary(slot);
  ASSERT_TRUE(cluster_->MoveSlot(slot, to).ok());

  EXPECT_EQ(*Run({"INCR", key}, key), RedisReply::Integer(2));
  EXPECT_EQ(client_->Stats().moved, 1u);
  EXPECT_EQ(*cluster_->Command(to, {"GET", key}), "2");
  // The refresh the MOVED asked for installs the new map; then nothing is redirected.
  ASSERT_TRUE(testing::WaitFor([&] { return client_->Stats().refreshes >= 2; },
                               static_cast<int>(kWatchdog.count() * 1000)));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Run({"INCR", key}, key).ok());
  EXPECT_EQ(client_->Stats().moved, 1u);
  EXPECT_EQ(*cluster_->Command(to, {"GET", key}), "12");
}

// Verifies that a pipeline is redirected as a whole when its first command is.
TEST_F(ClusterClientTest, RedirectsAPipelineAsAWhole) {
  const std::string key = "{moved-pipeline}:n";
  const int slot = ClusterHashSlot(key);
  ASSERT_TRUE(cluster_->MoveSlot(slot, OtherPrimary(slot)).ok());
  std::vector<RedisCommand> parts;
  parts.push_back(RedisCommand::Format({"INCR", key}));
  parts.push_back(RedisCommand::Format({"ECHO", "after"}));
  auto [done, future] = Capture();
  client_->Route(RedisCommand::Pipeline(std::move(parts)), key, milliseconds(2000),
                 std::move(done));
  absl::StatusOr<RedisReply> reply = Await(future);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->DebugString(), "[1, \"after\"]");
  EXPECT_EQ(client_->Stats().moved, 1u);
}

// Verifies ASK: while a slot migrates, a key already moved is answered with ASK by the source;
// the client sends ASKING + the command to the target, once, without touching its map.
TEST_F(ClusterClientTest, FollowsAskDuringAMigration) {
  const std::string moved_key = "{ask}:moved";
  const std::string staying_key = "{ask}:staying";
  const std::string new_key = "{ask}:new";
  const int slot = ClusterHashSlot(moved_key);
  const int from = *cluster_->PrimaryForSlot(slot);
  const int to = OtherPrimary(slot);
  ASSERT_EQ(*Run({"SET", moved_key, "m"}, moved_key), RedisReply::Status("OK"));
  ASSERT_EQ(*Run({"SET", staying_key, "s"}, staying_key), RedisReply::Status("OK"));
  ASSERT_TRUE(cluster_->BeginSlotMigration(slot, to).ok());
  ASSERT_EQ(
      *cluster_->Command(from, {"MIGRATE", "127.0.0.1", absl::StrCat(to), moved_key, "0", "5000"}),
      "OK");

  EXPECT_EQ(*Run({"GET", moved_key}, moved_key), RedisReply::String("m"));
  EXPECT_EQ(client_->Stats().asked, 1u);
  // A key still on the source is served there.
  EXPECT_EQ(*Run({"GET", staying_key}, staying_key), RedisReply::String("s"));
  // A key nobody has yet is created on the target.
  EXPECT_EQ(*Run({"SET", new_key, "n"}, new_key), RedisReply::Status("OK"));
  // (The source sends anyone asking for it to the target.)
  EXPECT_THAT(*cluster_->Command(from, {"GET", new_key}), HasSubstr("ASK"));
  EXPECT_EQ(client_->Stats().asked, 2u);
  EXPECT_EQ(client_->Stats().moved, 0u);

  ASSERT_TRUE(cluster_->MigrateSlotKeys(slot).ok());
  ASSERT_TRUE(cluster_->FinishSlotMigration(slot).ok());
  EXPECT_EQ(*cluster_->Command(to, {"GET", new_key}), "n");
  EXPECT_EQ(*Run({"GET", staying_key}, staying_key), RedisReply::String("s"));
}

// Verifies TRYAGAIN: a multi-key command whose keys a migration has split is refused with
// TRYAGAIN; the client resends after a backoff and succeeds once the migration moves on.
TEST_F(ClusterClientTest, ResendsTryAgainUntilTheMigrationMovesOn) {
  const std::string a = "{tryagain}:a";
  const std::string b = "{tryagain}:b";
  const int slot = ClusterHashSlot(a);
  const int from = *cluster_->PrimaryForSlot(slot);
  const int to = OtherPrimary(slot);
  ASSERT_TRUE(Run({"SET", a, "1"}, a).ok());
  ASSERT_TRUE(Run({"SET", b, "2"}, b).ok());
  ASSERT_TRUE(cluster_->BeginSlotMigration(slot, to).ok());
  ASSERT_EQ(*cluster_->Command(from, {"MIGRATE", "127.0.0.1", absl::StrCat(to), a, "0", "5000"}),
            "OK");
  ASSERT_THAT(*cluster_->Command(from, {"MGET", a, b}), HasSubstr("TRYAGAIN"));

  auto [done, future] = Capture();
  client_->Route(RedisCommand::Format({"MGET", a, b}), a, milliseconds(5000), std::move(done));
  // Once the client has been told TRYAGAIN, let the migration move the other key.
  ASSERT_TRUE(testing::WaitFor([&] { return client_->Stats().retries > 0; }, 10'000));
  ASSERT_TRUE(cluster_->MigrateSlotKeys(slot).ok());
  absl::StatusOr<RedisReply> reply = Await(future);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->DebugString(), "[\"1\", \"2\"]");
  ASSERT_TRUE(cluster_->FinishSlotMigration(slot).ok());
}

// Verifies the bound: while TRYAGAIN persists, the call returns the error reply once its deadline
// leaves no room for another attempt, and not much later than the deadline.
TEST_F(ClusterClientTest, ReturnsTryAgainWhenTheDeadlineRunsOut) {
  const std::string a = "{tryagain-deadline}:a";
  const std::string b = "{tryagain-deadline}:b";
  const int slot = ClusterHashSlot(a);
  const int from = *cluster_->PrimaryForSlot(slot);
  const int to = OtherPrimary(slot);
  ASSERT_TRUE(Run({"SET", a, "1"}, a).ok());
  ASSERT_TRUE(Run({"SET", b, "2"}, b).ok());
  ASSERT_TRUE(cluster_->BeginSlotMigration(slot, to).ok());
  ASSERT_EQ(*cluster_->Command(from, {"MIGRATE", "127.0.0.1", absl::StrCat(to), a, "0", "5000"}),
            "OK");

  const auto start = SteadyClock::now();
  absl::StatusOr<RedisReply> reply = Run({"MGET", a, b}, a, milliseconds(100));
  const auto took = SteadyClock::now() - start;
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(ClassifyReply(*reply), RedisErrorKind::kTryAgain) << reply->DebugString();
  EXPECT_GE(client_->Stats().retries, 3u);
  EXPECT_LT(took, milliseconds(100) + milliseconds(50));
  ASSERT_TRUE(cluster_->MigrateSlotKeys(slot).ok());
  ASSERT_TRUE(cluster_->FinishSlotMigration(slot).ok());
}

// Verifies CLUSTERDOWN: a slot nobody serves is retried (with refreshes) within the deadline and
// served as soon as a primary takes it back; with the slot still unserved, the reply stands at the
// deadline.
TEST_F(ClusterClientTest, ResendsClusterDownWithinTheDeadline) {
  const std::string key = "{clusterdown}:k";
  const std::string slot = absl::StrCat(ClusterHashSlot(key));
  const int owner = *cluster_->PrimaryForSlot(ClusterHashSlot(key));
  ASSERT_EQ(*cluster_->Command(owner, {"CLUSTER", "DELSLOTS", slot}), "OK");

  // Unserved until the deadline: the last CLUSTERDOWN reply stands, or, when the last resend
  // (sent with at least 1 ms left) is not answered in time, as on a loaded machine, the call
  // ends DeadlineExceeded. Either way it ends by the deadline and was retried.
  const uint64_t retries_before = client_->Stats().retries;
  const auto start = SteadyClock::now();
  absl::StatusOr<RedisReply> down = Run({"SET", key, "v"}, key, milliseconds(100));
  const auto took = SteadyClock::now() - start;
  if (down.ok()) {
    EXPECT_EQ(ClassifyReply(*down), RedisErrorKind::kClusterDown) << down->DebugString();
  } else {
    EXPECT_TRUE(absl::IsDeadlineExceeded(down.status())) << down.status();
  }
  EXPECT_GT(client_->Stats().retries, retries_before);
  EXPECT_LT(took, milliseconds(100) + milliseconds(50));

  auto [done, future] = Capture();
  client_->Route(RedisCommand::Format({"SET", key, "v"}), key, milliseconds(5000), std::move(done));
  const uint64_t retries = client_->Stats().retries;
  ASSERT_TRUE(testing::WaitFor([&] { return client_->Stats().retries > retries; }, 10'000));
  ASSERT_EQ(*cluster_->Command(owner, {"CLUSTER", "ADDSLOTS", slot}), "OK");
  absl::StatusOr<RedisReply> reply = Await(future);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, RedisReply::Status("OK"));
  EXPECT_EQ(*cluster_->Command(owner, {"GET", key}), "v");
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
}

// Verifies that a command that timed out after being written is not resent: the paused primary
// runs it once when it resumes, and the counter shows one increment.
TEST_F(ClusterClientTest, NeverResendsACommandWhoseOutcomeIsUnknown) {
  const std::string key = "{unknown-outcome}:n";
  const int port = *cluster_->PrimaryForSlot(ClusterHashSlot(key));
  cluster_->Node(port).Pause();
  absl::StatusOr<RedisReply> reply = Run({"INCR", key}, key, milliseconds(50));
  // Shorter than cluster-node-timeout: the paused primary is not failed over.
  std::this_thread::sleep_for(milliseconds(100));
  cluster_->Node(port).Resume();
  EXPECT_TRUE(absl::IsDeadlineExceeded(reply.status())) << reply.status();
  // The client reads the late reply; the INCR ran exactly once.
  EXPECT_EQ(*Run({"GET", key}, key), RedisReply::String("1"));
}

TEST_F(ClusterClientTest, DestructionCompletesPendingCommandsOnce) {
  std::shared_ptr<ClusterClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  constexpr int kCommands = 20;
  std::atomic<int> completions{0};
  std::atomic<int> unavailable{0};
  for (int i = 0; i < kCommands; ++i) {
    const std::string key = absl::StrCat("{blocked:", i, "}");
    client->Route(RedisCommand::Format({"BLPOP", key, "5"}), key, milliseconds(10'000),
                  [&](absl::StatusOr<RedisReply> reply) {
                    completions.fetch_add(1);
                    if (absl::IsUnavailable(reply.status())) unavailable.fetch_add(1);
                  });
  }
  client.reset();
  EXPECT_EQ(completions.load(), kCommands);
  EXPECT_EQ(unavailable.load(), kCommands);
}

// Verifies that a cluster client runs every primary's connection on one I/O thread: it starts
// exactly one thread, replies from all three primaries arrive on it, and it is joined when the
// client goes.
TEST_F(ClusterClientTest, EveryPrimaryRepliesOnOneSharedThread) {
  const int before = internal::IoThread::RunningForTest();
  std::shared_ptr<ClusterClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->Primaries().size(), 3u);
  EXPECT_EQ(internal::IoThread::RunningForTest(), before + 1);
  std::set<int> ports;
  std::set<std::thread::id> threads;
  for (int i = 0; i < 30; ++i) {
    const std::string key = absl::StrCat("{shared-thread:", i, "}");
    std::promise<std::thread::id> id;
    std::future<std::thread::id> future = id.get_future();
    client->Route(RedisCommand::Format({"SET", key, "v"}), key, milliseconds(2000),
                  [&id](absl::StatusOr<RedisReply> reply) {
                    EXPECT_TRUE(reply.ok()) << reply.status();
                    id.set_value(std::this_thread::get_id());
                  });
    ASSERT_EQ(future.wait_for(testing::kWatchdog), std::future_status::ready);
    threads.insert(future.get());
    ports.insert(*cluster_->PrimaryForSlot(ClusterHashSlot(key)));
  }
  EXPECT_EQ(ports.size(), 3u);
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
  client.reset();
  EXPECT_EQ(internal::IoThread::RunningForTest(), before);
}

// Verifies shutdown with commands pending everywhere: written and unanswered on every primary
// (BLPOP), and waiting out a retry backoff (CLUSTERDOWN for an unserved slot). Each completes
// once, with Unavailable, before the destructor returns, which does not wait out the backoff.
TEST_F(ClusterClientTest, ShutdownFailsCommandsInFlightAndInBackoffBeforeReturning) {
  std::shared_ptr<ClusterClient> client = Connect({.retry_backoff_min = std::chrono::seconds(20),
                                                   .retry_backoff_max = std::chrono::seconds(20)});
  ASSERT_NE(client, nullptr);
  const std::string down_key = "{shutdown-backoff}:k";
  const std::string slot = absl::StrCat(ClusterHashSlot(down_key));
  const int owner = *cluster_->PrimaryForSlot(ClusterHashSlot(down_key));
  ASSERT_EQ(*cluster_->Command(owner, {"CLUSTER", "DELSLOTS", slot}), "OK");

  std::atomic<int> completions{0};
  std::atomic<int> unavailable{0};
  auto count = [&](absl::StatusOr<RedisReply> reply) {
    if (absl::IsUnavailable(reply.status())) unavailable.fetch_add(1);
    completions.fetch_add(1);
  };
  client->Route(RedisCommand::Format({"SET", down_key, "v"}), down_key, milliseconds(60'000),
                count);
  ASSERT_TRUE(testing::WaitFor([&] { return client->Stats().retries > 0; }, 10'000));
  std::set<int> ports;
  constexpr int kBlocked = 30;
  for (int i = 0; i < kBlocked; ++i) {
    const std::string key = absl::StrCat("{shutdown-blocked:", i, "}");
    ports.insert(*cluster_->PrimaryForSlot(ClusterHashSlot(key)));
    client->Route(RedisCommand::Format({"BLPOP", key, "30"}), key, milliseconds(60'000), count);
  }
  EXPECT_EQ(ports.size(), 3u);
  const auto start = SteadyClock::now();
  client.reset();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(10));  // The backoff is 20 s.
  EXPECT_EQ(completions.load(), kBlocked + 1);
  EXPECT_EQ(unavailable.load(), kBlocked + 1);
  ASSERT_EQ(*cluster_->Command(owner, {"CLUSTER", "ADDSLOTS", slot}), "OK");
  ASSERT_TRUE(cluster_->WaitUntilHealthy().ok());
}

TEST_F(ClusterClientTest, TellsTheListenerAboutEveryPrimary) {
  std::mutex mu;
  std::set<std::string> told;
  client_->SetPrimaryListener([&](const std::shared_ptr<RedisClient>& primary) {
    std::lock_guard<std::mutex> lock(mu);
    told.insert(primary->Endpoint());
  });
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return told.size() == 3;
      },
      10'000));
  client_->SetPrimaryListener(nullptr);
  const absl::StatusOr<std::vector<int>> primaries = cluster_->PrimaryPorts();
  ASSERT_TRUE(primaries.ok());
  for (int port : *primaries) {
    EXPECT_EQ(told.count(absl::StrCat("redis://127.0.0.1:", port)), 1u) << port;
  }
}

TEST_F(ClusterClientTest, TheFactoryMakesAClusterClientForClusterUrls) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(cluster_->Url());
  ASSERT_TRUE(url.ok());
  absl::StatusOr<std::shared_ptr<RedisRouter>> router =
      CreateRedisRouter({.endpoint = EndpointOf(*url)});
  ASSERT_TRUE(router.ok()) << router.status();
  ASSERT_TRUE((*router)->WaitForConnection(kWatchdog).ok());
  EXPECT_EQ((*router)->Primaries().size(), 3u);
  EXPECT_NE(dynamic_cast<ClusterClient*>(router->get()), nullptr);
}

TEST(ClusterClient, RefusesUrlsThatAreNotClusterUrls) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://127.0.0.1:6379");
  ASSERT_TRUE(url.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      ClusterClient::Create({.node = {.endpoint = EndpointOf(*url)}}).status()));
  absl::StatusOr<StoreUrl> cluster = ParseStoreUrl("redis-cluster://127.0.0.1:1");
  ASSERT_TRUE(cluster.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      ClusterClient::Create({.node = {.endpoint = EndpointOf(*cluster)}, .max_redirects = 0})
          .status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      ClusterClient::Create(
          {.node = {.endpoint = EndpointOf(*cluster), .command_timeout = milliseconds(0)}})
          .status()));
}

TEST(ClusterClient, WaitForConnectionNamesWhatIsMissing) {
  absl::StatusOr<int> port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(absl::StrCat("redis-cluster://127.0.0.1:", *port));
  ASSERT_TRUE(url.ok());
  absl::StatusOr<std::shared_ptr<ClusterClient>> client = ClusterClient::Create(
      {.node = {.endpoint = EndpointOf(*url), .command_timeout = milliseconds(50)}});
  ASSERT_TRUE(client.ok()) << client.status();
  const absl::Status status = (*client)->WaitForConnection(milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("no complete slot map"));
  // A command routed meanwhile fails within its deadline.
  auto [done, future] = Capture();
  (*client)->Route(RedisCommand::Format({"GET", "k"}), "k", milliseconds(50), std::move(done));
  absl::StatusOr<RedisReply> reply = Await(future);
  EXPECT_TRUE(absl::IsUnavailable(reply.status())) << reply.status();
}

}  // namespace
}  // namespace sluice
