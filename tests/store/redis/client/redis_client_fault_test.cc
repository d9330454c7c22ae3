// RedisClient under faults: a hung server (SIGSTOP), a dead one (SIGKILL) and a restart.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <hiredis/hiredis.h>

#include "sluice/clock.h"

#include "src/store/redis/client/redis_client.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::Await;
using ::sluice::testing::Capture;
using ::sluice::testing::Connect;
using ::sluice::testing::kWatchdog;
using ::sluice::testing::OptionsFor;
using ::sluice::testing::RedisServer;
using ::sluice::testing::ReplyFuture;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// Slack allowed past a deadline: timer wake-up and scheduling, generous for sanitizer builds.
constexpr milliseconds kSlack{250};

milliseconds Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::Real().Now() - start);
}

class RedisClientFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Resume();
  }

  std::unique_ptr<RedisServer> server_;
};

// Verifies T9's hard case: the server hangs with the connection open. Commands fail with
// DeadlineExceeded at their deadline, are not resent, and their replies (which arrive after
// Resume) are discarded in order instead of being handed to later commands.
TEST_F(RedisClientFaultTest, HungServerTimesOutAndLateRepliesAreDiscarded) {
  RedisClientOptions options = OptionsFor(*server_);
  options.command_timeout = milliseconds(100);
  options.stall_timeout = std::chrono::seconds(30);
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  server_->Pause();
  constexpr int kHung = 5;
  std::vector<ReplyFuture> futures;
  const auto start = Clock::Real().Now();
  for (int i = 0; i < kHung; ++i) {
    auto [done, future] = Capture();
    client->Send({"INCR", "hung"}, std::move(done));
    futures.push_back(std::move(future));
  }
  for (ReplyFuture& f : futures) {
    absl::StatusOr<RedisReply> reply = Await(f);
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_EQ(reply.status().message(), "redis INCR: timed out after 100ms");
  }
  const milliseconds elapsed = Since(start);
  EXPECT_GE(elapsed, milliseconds(100));
  EXPECT_LE(elapsed, milliseconds(100) + kSlack);
  server_->Resume();
  // The five INCRs did run (the client cannot know that, hence "never resent"); the next
  // command gets its own reply, not one of theirs.
  EXPECT_EQ(client->SendSync({"ECHO", "fresh"})->str(), "fresh");
  EXPECT_EQ(*client->SendSync({"GET", "hung"}), RedisReply::String(std::to_string(kHung)));
  const RedisClientStats stats = client->Stats();
  EXPECT_EQ(stats.timeouts, uint64_t{kHung});
  EXPECT_EQ(stats.late_replies, uint64_t{kHung});
  EXPECT_EQ(stats.disconnects, 0u);
}

// Verifies that a connection that stays silent past stall_timeout is abandoned: commands still
// waiting fail with Unavailable, and the client reconnects once the server answers again.
TEST_F(RedisClientFaultTest, StalledConnectionIsReplaced) {
  RedisClientOptions options = OptionsFor(*server_);
  options.stall_timeout = milliseconds(300);
  options.connect_timeout = milliseconds(200);
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  server_->Pause();
  auto [done, future] = Capture();
  const auto start = Clock::Real().Now();
  client->Send(RedisCommand::Format({"PING"}), std::chrono::seconds(10), std::move(done));
  absl::StatusOr<RedisReply> reply = Await(future);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(reply.status().message(), HasSubstr("outcome unknown"));
  EXPECT_THAT(reply.status().message(), HasSubstr("no reply for 300ms"));
  EXPECT_LE(Since(start), milliseconds(300) + kSlack);
  server_->Resume();
  ASSERT_TRUE(client->WaitForConnection(kWatchdog).ok());
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
  EXPECT_EQ(client->Stats().disconnects, 1u);
}

TEST_F(RedisClientFaultTest, KilledServerFailsFastWithUnavailable) {
  RedisClientOptions options = OptionsFor(*server_);
  options.command_timeout = std::chrono::seconds(5);  // Failing fast must not mean timing out.
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  server_->Kill();
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::Real().Now();
    absl::StatusOr<RedisReply> reply = client->SendSync({"PING"});
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable) << reply.status();
    EXPECT_LT(Since(start), milliseconds(1000));
  }
  EXPECT_EQ(client->Stats().connections_ready, 0);
  EXPECT_EQ(client->Stats().timeouts, 0u);
}

// Verifies that commands in flight when the connection drops fail with "outcome unknown".
TEST_F(RedisClientFaultTest, InFlightCommandsFailWhenTheConnectionDrops) {
  RedisClientOptions options = OptionsFor(*server_);
  options.stall_timeout = std::chrono::seconds(30);
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  // Writes are held by the server (and so is everything after them on the same connection)...
  ASSERT_TRUE(server_->Command({"CLIENT", "PAUSE", "10000", "WRITE"}).ok());
  auto [done, future] = Capture();
  client->Send(RedisCommand::Format({"INCR", "x"}), std::chrono::seconds(10), std::move(done));
  // A later command that times out *after being sent* proves the INCR was written too (FIFO).
  auto [probe, probe_future] = Capture();
  client->Send(RedisCommand::Format({"PING"}), milliseconds(50), std::move(probe));
  EXPECT_EQ(Await(probe_future).status().message(), "redis PING: timed out after 50ms");
  // ...then the server drops the connection.
  ASSERT_TRUE(server_->Command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}).ok());
  absl::StatusOr<RedisReply> reply = Await(future);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(reply.status().message(),
              HasSubstr("redis INCR: connection lost after the command was sent; outcome unknown"));
  EXPECT_EQ(client->Stats().lost, 1u);
}

TEST_F(RedisClientFaultTest, ReconnectsAfterRestart) {
  std::unique_ptr<RedisClient> client = Connect(OptionsFor(*server_));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->SendSync({"SET", "k", "before"}).ok());
  server_->Kill();
  EXPECT_EQ(client->SendSync({"PING"}).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(server_->Restart().ok());
  ASSERT_TRUE(client->WaitForConnection(kWatchdog).ok());
  absl::StatusOr<RedisReply> reply = client->SendSync({"GET", "k"});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE(reply->is_nil());  // A restarted server starts empty.
  const RedisClientStats stats = client->Stats();
  EXPECT_EQ(stats.connects, 2u);
  EXPECT_EQ(stats.disconnects, 1u);
}

// Verifies T10's rule: while the server is down, connection attempts follow the backoff instead of
// spinning. With backoff 50 ms .. 200 ms and full jitter, 600 ms allows a handful of attempts.
TEST_F(RedisClientFaultTest, ReconnectAttemptsBackOff) {
  RedisClientOptions options = OptionsFor(*server_);
  options.backoff_min = milliseconds(50);
  options.backoff_max = milliseconds(200);
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  server_->Kill();
  // Fails only once the client has seen the connection drop.
  EXPECT_EQ(client->SendSync({"PING"}).status().code(), absl::StatusCode::kUnavailable);
  // Blocks for the full 600 ms (nothing can connect): a bounded observation window, not a sleep.
  const absl::Status waited = client->WaitForConnection(milliseconds(600));
  EXPECT_EQ(waited.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(waited.message(), HasSubstr("connect failed"));
  const RedisClientStats stats = client->Stats();
  EXPECT_GE(stats.connect_failures, 2u);
  EXPECT_LE(stats.connect_failures, 40u);
}

// Verifies that queued commands never outlive their deadline while the client is connecting to a
// server that accepts TCP connections but does not answer.
TEST_F(RedisClientFaultTest, CommandsQueuedWhileConnectingHonourTheirDeadline) {
  server_->Pause();
  RedisClientOptions options = OptionsFor(*server_);
  options.command_timeout = milliseconds(80);
  options.connect_timeout = std::chrono::seconds(5);
  absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(options);
  ASSERT_TRUE(client.ok());
  auto [done, future] = Capture();
  const auto start = Clock::Real().Now();
  (*client)->Send({"PING"}, std::move(done));
  absl::StatusOr<RedisReply> reply = Await(future);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(reply.status().message(), "redis PING: timed out after 80ms; never sent");
  EXPECT_LE(Since(start), milliseconds(80) + kSlack);
}

// Verifies that a server that cannot serve yet (here BUSY running a script; LOADING is alike) makes
// the connection attempt retry with backoff instead of failing for good, and that the client
// connects once the server is free.
TEST_F(RedisClientFaultTest, BusyServerDuringHandshakeIsRetried) {
  ASSERT_TRUE(server_->Command({"CONFIG", "SET", "busy-reply-threshold", "20"}).ok());
  // A script that never ends, on its own connection, until SCRIPT KILL.
  std::thread busy([port = server_->port()] {
    redisContext* c = redisConnect("127.0.0.1", port);
    if (c == nullptr || c->err != 0) return;
    void* reply = redisCommand(c, "EVAL %s 0", "while true do end");
    if (reply != nullptr) freeReplyObject(reply);
    redisFree(c);
  });
  auto free_server = absl::MakeCleanup([&] {
    (void)server_->Command({"SCRIPT", "KILL"});
    busy.join();
  });
  // Bounded poll until the script holds the server.
  bool is_busy = false;
  for (int i = 0; i < 2000 && !is_busy; ++i) {
    absl::StatusOr<std::string> pong = server_->Command({"PING"});
    is_busy = pong.ok() && pong->starts_with("ERR:BUSY");
  }
  ASSERT_TRUE(is_busy);
  absl::StatusOr<std::unique_ptr<RedisClient>> client =
      RedisClient::Create(OptionsFor(*server_, "/3"));  // SELECT gets -BUSY.
  ASSERT_TRUE(client.ok());
  const absl::Status waited = (*client)->WaitForConnection(milliseconds(300));
  EXPECT_EQ(waited.code(), absl::StatusCode::kDeadlineExceeded) << waited;
  EXPECT_THAT(waited.message(), HasSubstr("SELECT failed: BUSY"));
  std::move(free_server).Invoke();
  EXPECT_TRUE((*client)->WaitForConnection(kWatchdog).ok());
  EXPECT_EQ(*(*client)->SendSync({"PING"}), RedisReply::Status("PONG"));
}

}  // namespace
}  // namespace sluice
