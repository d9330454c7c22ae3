// RedisClient's opt-in handshake steps, against real servers: require_primary (ROLE must say
// master), cluster_node_id (CLUSTER MYID must answer it) and subscriber mode (SUBSCRIBE as the last
// step, messages to on_message).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/store/redis/client/redis_client.h"
#include "src/util/mutex.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::Connect;
using ::sluice::testing::EndpointOf;
using ::sluice::testing::OptionsFor;
using ::sluice::testing::RedisServer;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

std::unique_ptr<RedisServer> StartServer() {
  absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// Messages a subscriber client received, as "kind channel payload-or-count".
class Inbox {
 public:
  std::function<void(const RedisReply&)> Callback() {
    return [this](const RedisReply& message) {
      std::string line;
      for (const RedisReply& e : message.elements()) {
        line +=
            (line.empty() ? "" : " ") + (e.is_integer() ? std::to_string(e.integer()) : e.str());
      }
      internal::MutexLock lock(&mu_);
      lines_.push_back(std::move(line));
    };
  }
  std::vector<std::string> lines() const {
    internal::MutexLock lock(&mu_);
    return lines_;
  }
  bool WaitForCount(size_t n) const {
    return testing::WaitFor([&] { return lines().size() >= n; }, 10'000);
  }

 private:
  mutable internal::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

TEST(RedisClientRequirePrimary, ConnectsToAPrimary) {
  std::unique_ptr<RedisServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  RedisClientOptions options = OptionsFor(*server);
  options.require_primary = true;
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"SET", "k", "v"}), RedisReply::Status("OK"));
}

// Verifies that no command reaches a replica: the connect fails on ROLE, again and again, and
// commands are refused without being sent.
TEST(RedisClientRequirePrimary, RefusesAReplicaAndSendsItNothing) {
  std::unique_ptr<RedisServer> primary = StartServer();
  std::unique_ptr<RedisServer> replica = StartServer();
  ASSERT_NE(primary, nullptr);
  ASSERT_NE(replica, nullptr);
  ASSERT_EQ(*replica->Command({"REPLICAOF", "127.0.0.1", std::to_string(primary->port())}), "OK");
  RedisClientOptions options = OptionsFor(*replica);
  options.require_primary = true;
  absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();

  const absl::Status connected = (*client)->WaitForConnection(milliseconds(500));
  EXPECT_TRUE(absl::IsDeadlineExceeded(connected)) << connected;
  EXPECT_THAT(connected.message(), HasSubstr("ROLE says slave, not master"));
  absl::StatusOr<RedisReply> reply = (*client)->SendSync({"SET", "k", "v"});
  EXPECT_TRUE(absl::IsUnavailable(reply.status())) << reply.status();
  EXPECT_GE((*client)->Stats().connect_failures, 2u);
  EXPECT_EQ((*client)->Stats().connects, 0u);

  // Promoted, it is accepted on the next attempt.
  ASSERT_EQ(*replica->Command({"REPLICAOF", "NO", "ONE"}), "OK");
  EXPECT_TRUE((*client)->WaitForConnection(testing::kWatchdog).ok());
  EXPECT_EQ(*(*client)->SendSync({"SET", "k", "v"}), RedisReply::Status("OK"));
}

TEST(RedisClientClusterNodeId, ConnectsToTheNodeWithThatId) {
  absl::StatusOr<std::unique_ptr<RedisServer>> node =
      RedisServer::Start({.config = {{"cluster-enabled", "yes"}}});
  ASSERT_TRUE(node.ok()) << node.status();
  absl::StatusOr<std::string> id = (*node)->Command({"CLUSTER", "MYID"});
  ASSERT_TRUE(id.ok()) << id.status();
  RedisClientOptions options = OptionsFor(**node);
  options.cluster_node_id = *id;
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
  EXPECT_EQ(client->ClusterNodeId(), *id);
}

// Verifies that a server that is not the node the id names is sent nothing: another cluster node
// answers another id, and a server without cluster mode an error; each connect fails, again and
// again, with Unavailable (transient, as a failover may move the address), and commands are
// refused without being sent.
TEST(RedisClientClusterNodeId, RefusesAnotherNodeAndAServerWithoutClusterMode) {
  absl::StatusOr<std::unique_ptr<RedisServer>> other =
      RedisServer::Start({.config = {{"cluster-enabled", "yes"}}});
  ASSERT_TRUE(other.ok()) << other.status();
  std::unique_ptr<RedisServer> plain = StartServer();
  ASSERT_NE(plain, nullptr);
  const std::string wanted(40, 'a');
  for (RedisServer* server : {other->get(), plain.get()}) {
    SCOPED_TRACE(server->Url());
    RedisClientOptions options = OptionsFor(*server);
    options.cluster_node_id = wanted;
    absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    const absl::Status connected = (*client)->WaitForConnection(milliseconds(500));
    EXPECT_TRUE(absl::IsDeadlineExceeded(connected)) << connected;
    EXPECT_THAT(connected.message(),
                HasSubstr(server == plain.get() ? "cluster support disabled"
                                                : "not the cluster node the slot map names"));
    absl::StatusOr<RedisReply> reply = (*client)->SendSync({"SET", "k", "v"});
    EXPECT_TRUE(absl::IsUnavailable(reply.status())) << reply.status();
    EXPECT_GE((*client)->Stats().connect_failures, 2u);
    EXPECT_EQ((*client)->Stats().connects, 0u);
  }
  EXPECT_EQ(*plain->Command({"DBSIZE"}), "0");
  EXPECT_EQ(*(*other)->Command({"DBSIZE"}), "0");
}

TEST(RedisClientSubscriber, DeliversConfirmationsAndMessages) {
  std::unique_ptr<RedisServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  Inbox inbox;
  RedisClientOptions options = OptionsFor(*server);
  options.subscribe = {"+switch-master", "other"};
  options.on_message = inbox.Callback();
  std::unique_ptr<RedisClient> subscriber = Connect(options);
  ASSERT_NE(subscriber, nullptr);
  ASSERT_TRUE(inbox.WaitForCount(2));

  ASSERT_EQ(*server->Command({"PUBLISH", "+switch-master", "p 127.0.0.1 1 127.0.0.1 2"}), "1");
  ASSERT_EQ(*server->Command({"PUBLISH", "other", "x"}), "1");
  ASSERT_EQ(*server->Command({"PUBLISH", "unsubscribed", "y"}), "0");
  ASSERT_TRUE(inbox.WaitForCount(4));
  EXPECT_THAT(inbox.lines(),
              ::testing::ElementsAre("subscribe +switch-master 1", "subscribe other 2",
                                     "message +switch-master p 127.0.0.1 1 127.0.0.1 2",
                                     "message other x"));
}

// Verifies that a reconnect subscribes again, and says so, since messages were missed meanwhile.
TEST(RedisClientSubscriber, SubscribesAgainAfterReconnecting) {
  std::unique_ptr<RedisServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  Inbox inbox;
  RedisClientOptions options = OptionsFor(*server);
  options.subscribe = {"events"};
  options.on_message = inbox.Callback();
  std::unique_ptr<RedisClient> subscriber = Connect(options);
  ASSERT_NE(subscriber, nullptr);
  ASSERT_TRUE(inbox.WaitForCount(1));

  ASSERT_TRUE(server->Restart().ok());
  ASSERT_TRUE(inbox.WaitForCount(2));
  // Published until the new subscription hears it (the reconnect may still be in backoff).
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        (void)server->Command({"PUBLISH", "events", "after"});
        return inbox.lines().size() >= 3;
      },
      10'000));
  EXPECT_EQ(inbox.lines()[1], "subscribe events 1");
  EXPECT_EQ(inbox.lines()[2], "message events after");
}

TEST(RedisClientSubscriber, RefusesSubscribeWithoutCallbackAndTheReverse) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://127.0.0.1:1");
  ASSERT_TRUE(url.ok());
  absl::StatusOr<std::unique_ptr<RedisClient>> no_callback =
      RedisClient::Create({.endpoint = EndpointOf(*url), .subscribe = {"c"}});
  EXPECT_TRUE(absl::IsInvalidArgument(no_callback.status())) << no_callback.status();
  absl::StatusOr<std::unique_ptr<RedisClient>> no_channel =
      RedisClient::Create({.endpoint = EndpointOf(*url), .on_message = [](const RedisReply&) {}});
  EXPECT_TRUE(absl::IsInvalidArgument(no_channel.status())) << no_channel.status();
}

}  // namespace
}  // namespace sluice
