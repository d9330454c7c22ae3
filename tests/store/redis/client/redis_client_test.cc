// RedisClient against a real redis-server: replies, pipelining, callbacks and lifetime.
#include "src/store/redis/client/redis_client.h"

#include <atomic>
#include <future>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/store/redis/client/io_thread.h"
#include "src/store/redis/client/redis_error.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::Await;
using ::sluice::testing::Capture;
using ::sluice::testing::Connect;
using ::sluice::testing::EndpointOf;
using ::sluice::testing::kWatchdog;
using ::sluice::testing::OptionsFor;
using ::sluice::testing::RedisServer;
using ::sluice::testing::ReplyFuture;
using ::testing::HasSubstr;

class RedisClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    RedisClientOptions options = OptionsFor(*server_);
    // These tests are about replies, not deadlines: a slow sanitizer build must not time out.
    options.command_timeout = std::chrono::seconds(5);
    client_ = Connect(options);
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<RedisServer> server_;
  std::unique_ptr<RedisClient> client_;
};

TEST_F(RedisClientTest, ReturnsEveryReplyType) {
  EXPECT_EQ(*client_->SendSync({"PING"}), RedisReply::Status("PONG"));
  EXPECT_EQ(*client_->SendSync({"SET", "k", "v"}), RedisReply::Status("OK"));
  EXPECT_EQ(*client_->SendSync({"GET", "k"}), RedisReply::String("v"));
  EXPECT_TRUE(client_->SendSync({"GET", "missing"})->is_nil());
  EXPECT_EQ(*client_->SendSync({"INCRBY", "n", "-7"}), RedisReply::Integer(-7));
  EXPECT_EQ(client_->SendSync({"MGET", "k", "missing", "n"})->DebugString(),
            "[\"v\", nil, \"-7\"]");
  EXPECT_EQ(client_->SendSync({"LRANGE", "nolist", "0", "-1"})->DebugString(), "[]");
}

// Verifies that an error reply is a value for the caller to classify, not a failed status.
TEST_F(RedisClientTest, ErrorRepliesAreValues) {
  ASSERT_TRUE(client_->SendSync({"SET", "k", "text"}).ok());
  absl::StatusOr<RedisReply> reply = client_->SendSync({"INCR", "k"});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE(reply->is_error());
  EXPECT_THAT(reply->str(), HasSubstr("ERR value is not an integer"));
  reply = client_->SendSync({"EVALSHA", "0000000000000000000000000000000000000000", "0"});
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(IsNoScript(*reply));
}

TEST_F(RedisClientTest, ArgumentsAreBinarySafe) {
  const std::string value("a\0b\r\n$3\r\n*", 11);
  ASSERT_TRUE(client_->SendSync({"SET", "bin", value}).ok());
  EXPECT_EQ(client_->SendSync({"GET", "bin"})->str(), value);
  ASSERT_TRUE(client_->SendSync({"SET", "empty", ""}).ok());
  EXPECT_EQ(*client_->SendSync({"STRLEN", "empty"}), RedisReply::Integer(0));
}

TEST_F(RedisClientTest, AcceptsArgvVectorsAndFormattedCommands) {
  auto [done, future] = Capture();
  client_->Send(std::vector<std::string>{"ECHO", "vec"}, std::move(done));
  EXPECT_EQ(Await(future)->str(), "vec");
  EXPECT_EQ(client_->SendSync(RedisCommand::Format({"ECHO", "fmt"}))->str(), "fmt");
}

TEST_F(RedisClientTest, CallbacksRunOnTheIoThread) {
  std::promise<std::thread::id> ran_on;
  client_->Send({"PING"},
                [&](absl::StatusOr<RedisReply>) { ran_on.set_value(std::this_thread::get_id()); });
  std::future<std::thread::id> id = ran_on.get_future();
  ASSERT_EQ(id.wait_for(kWatchdog), std::future_status::ready);
  EXPECT_NE(id.get(), std::this_thread::get_id());
}

// Verifies the one case where the callback runs inline: a command refused before queueing.
TEST_F(RedisClientTest, RejectsEmptyCommandsInline) {
  bool called = false;
  client_->Send(RedisCommand(), [&](absl::StatusOr<RedisReply> reply) {
    called = true;
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument);
  });
  EXPECT_TRUE(called);
}

// Verifies FIFO matching under concurrency: every one of 10k commands from 4 threads gets its
// own reply, and auto-pipelining writes them in far fewer socket writes.
TEST_F(RedisClientTest, ConcurrentSendsMatchRepliesAndCoalesceWrites) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2500;
  const RedisClientStats before = client_->Stats();
  std::atomic<int> matched{0};
  std::atomic<int> mismatched{0};
  std::latch all_done(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string payload = "t" + std::to_string(t) + "-" + std::to_string(i);
        client_->Send({"ECHO", payload}, [&, payload](absl::StatusOr<RedisReply> reply) {
          if (reply.ok() && reply->str() == payload) {
            matched.fetch_add(1);
          } else {
            mismatched.fetch_add(1);
          }
          all_done.count_down();
        });
      }
    });
  }
  for (std::thread& t : threads) t.join();
  all_done.wait();
  EXPECT_EQ(matched.load(), kThreads * kPerThread);
  EXPECT_EQ(mismatched.load(), 0);
  const RedisClientStats after = client_->Stats();
  const uint64_t commands = after.commands_sent - before.commands_sent;
  const uint64_t writes = after.writes - before.writes;
  EXPECT_EQ(commands, uint64_t{kThreads * kPerThread});
  EXPECT_LT(writes, commands);
  EXPECT_EQ(after.replies - before.replies, commands);
  EXPECT_EQ(after.timeouts, 0u);
  RecordProperty("writes", static_cast<int>(writes));
}

// Verifies coalescing deterministically: commands sent while the I/O thread is busy (here, inside
// a callback) all leave in one write.
TEST_F(RedisClientTest, CommandsIssuedWhileBusyGoOutInOneWrite) {
  constexpr int kCommands = 1000;
  std::latch all_done(kCommands);
  std::atomic<int> ok{0};
  const RedisClientStats before = client_->Stats();
  auto [first, first_future] = Capture();
  client_->Send({"PING"}, [&, first = std::move(first)](absl::StatusOr<RedisReply> r) mutable {
    for (int i = 0; i < kCommands; ++i) {
      client_->Send({"INCR", "burst"}, [&](absl::StatusOr<RedisReply> reply) {
        if (reply.ok() && reply->is_integer()) ok.fetch_add(1);
        all_done.count_down();
      });
    }
    std::move(first)(std::move(r));
  });
  ASSERT_TRUE(Await(first_future).ok());
  all_done.wait();
  EXPECT_EQ(ok.load(), kCommands);
  const RedisClientStats after = client_->Stats();
  EXPECT_EQ(after.commands_sent - before.commands_sent, uint64_t{kCommands + 1});
  EXPECT_EQ(after.writes - before.writes, 2u);  // The PING, then the whole burst.
  EXPECT_EQ(*client_->SendSync({"GET", "burst"}), RedisReply::String(std::to_string(kCommands)));
}

// Verifies that replies are delivered in the order commands were sent from one thread.
TEST_F(RedisClientTest, PreservesOrderFromOneThread) {
  constexpr int kCommands = 2000;
  std::mutex mu;  // Not absl::Mutex: Debian's Abseil is invisible to TSan.
  std::vector<int64_t> seen;
  std::latch all_done(kCommands);
  for (int i = 0; i < kCommands; ++i) {
    client_->Send({"INCR", "order"}, [&](absl::StatusOr<RedisReply> reply) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(reply.ok() ? reply->integer() : -1);
      all_done.count_down();
    });
  }
  all_done.wait();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), size_t{kCommands});
  for (int i = 0; i < kCommands; ++i) ASSERT_EQ(seen[i], i + 1);
}

TEST_F(RedisClientTest, SelectsTheDatabaseFromTheUrl) {
  std::unique_ptr<RedisClient> db3 = Connect(OptionsFor(*server_, "/3"));
  ASSERT_NE(db3, nullptr);
  ASSERT_TRUE(db3->SendSync({"SET", "where", "three"}).ok());
  EXPECT_EQ(db3->SendSync({"GET", "where"})->str(), "three");
  EXPECT_TRUE(client_->SendSync({"GET", "where"})->is_nil());
  EXPECT_EQ(*db3->SendSync({"DBSIZE"}), RedisReply::Integer(1));
}

TEST_F(RedisClientTest, RejectsAnOutOfRangeDatabase) {
  absl::StatusOr<std::unique_ptr<RedisClient>> client =
      RedisClient::Create(OptionsFor(*server_, "/99"));
  ASSERT_TRUE(client.ok());
  absl::Status connected = (*client)->WaitForConnection(kWatchdog);
  EXPECT_EQ(connected.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(connected.message(), HasSubstr("SELECT 99 failed"));
}

TEST_F(RedisClientTest, ResolvesHostNames) {
  RedisClientOptions options = OptionsFor(*server_);
  options.endpoint.host = "localhost";  // May resolve to ::1 first, where nothing listens.
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
}

TEST_F(RedisClientTest, SpreadsCommandsOverSeveralConnections) {
  RedisClientOptions options = OptionsFor(*server_);
  options.command_timeout = std::chrono::seconds(5);
  options.connections = 4;
  options.io_threads = 2;
  options.client_name = "sluice-test";
  std::unique_ptr<RedisClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  constexpr int kCommands = 4000;
  std::atomic<int> matched{0};
  std::latch all_done(kCommands);
  for (int i = 0; i < kCommands; ++i) {
    std::string payload = std::to_string(i);
    client->Send({"ECHO", payload}, [&, payload](absl::StatusOr<RedisReply> reply) {
      if (reply.ok() && reply->str() == payload) matched.fetch_add(1);
      all_done.count_down();
    });
  }
  all_done.wait();
  EXPECT_EQ(matched.load(), kCommands);
  const RedisClientStats stats = client->Stats();
  EXPECT_EQ(stats.connections, 4);
  // Connections come up independently; WaitForConnection() waited for the first only.
  EXPECT_GE(stats.connects, 1u);
  EXPECT_LE(stats.connects, 4u);
  absl::StatusOr<std::string> clients = server_->Command({"CLIENT", "LIST"});
  ASSERT_TRUE(clients.ok());
  EXPECT_THAT(*clients, HasSubstr("name=sluice-test"));
}

TEST_F(RedisClientTest, HonoursPerCallTimeouts) {
  // CLIENT PAUSE holds our commands on the server without stopping it.
  ASSERT_TRUE(server_->Command({"CLIENT", "PAUSE", "300", "ALL"}).ok());
  auto [done, future] = Capture();
  client_->Send(RedisCommand::Format({"PING"}), std::chrono::milliseconds(20), std::move(done));
  absl::StatusOr<RedisReply> reply = Await(future);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(reply.status().message(), "redis PING: timed out after 20ms");
  // The late PONG is discarded, not handed to the next command.
  EXPECT_EQ(
      client_->SendSync(RedisCommand::Format({"ECHO", "next"}), std::chrono::seconds(5))->str(),
      "next");
  EXPECT_EQ(client_->Stats().late_replies, 1u);
}

TEST_F(RedisClientTest, SendSyncRefusesToRunOnTheIoThread) {
  std::promise<absl::Status> result;
  client_->Send({"PING"}, [&](absl::StatusOr<RedisReply>) {
    result.set_value(client_->SendSync({"PING"}).status());
  });
  std::future<absl::Status> status = result.get_future();
  ASSERT_EQ(status.wait_for(kWatchdog), std::future_status::ready);
  EXPECT_EQ(status.get().code(), absl::StatusCode::kFailedPrecondition);
}

// Verifies that the client can be destroyed from its own callback without deadlock, and that the
// commands still pending then complete with Unavailable.
TEST_F(RedisClientTest, CanBeDestroyedFromItsOwnCallback) {
  server_->Pause();  // Keeps the first command pending.
  auto [pending, pending_future] = Capture();
  client_->Send(RedisCommand::Format({"PING"}), std::chrono::seconds(10), std::move(pending));
  std::promise<void> destroyed;
  RedisClient* raw = client_.get();
  auto doomed = std::move(client_);
  // Rejected commands complete inline; a failing command completes on the I/O thread. Force the
  // latter by sending to the paused server with a short timeout.
  raw->Send(RedisCommand::Format({"PING"}), std::chrono::milliseconds(10),
            [&, doomed = std::move(doomed)](absl::StatusOr<RedisReply>) mutable {
              doomed.reset();
              destroyed.set_value();
            });
  std::future<void> done = destroyed.get_future();
  ASSERT_EQ(done.wait_for(kWatchdog), std::future_status::ready);
  absl::StatusOr<RedisReply> reply = Await(pending_future);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(reply.status().message(), HasSubstr("client shut down"));
  server_->Resume();
}

TEST_F(RedisClientTest, DestructionFailsPendingCommands) {
  server_->Pause();
  std::vector<ReplyFuture> futures;
  for (int i = 0; i < 10; ++i) {
    auto [done, future] = Capture();
    client_->Send(RedisCommand::Format({"PING"}), std::chrono::seconds(10), std::move(done));
    futures.push_back(std::move(future));
  }
  client_.reset();
  for (ReplyFuture& f : futures) {
    EXPECT_EQ(Await(f).status().code(), absl::StatusCode::kUnavailable);
  }
  server_->Resume();
}

// Clients of a router made on one shared IoThread (as ClusterClient and SentinelClient make their
// node clients).
class SharedIoThreadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    threads_before_ = internal::IoThread::RunningForTest();
    io_ = internal::IoThread::Start("test-shared-io");
  }

  std::unique_ptr<RedisClient> MakeClient() {
    RedisClientOptions options = OptionsFor(*server_);
    options.command_timeout = std::chrono::seconds(5);
    absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(options, io_);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return nullptr;
    EXPECT_TRUE((*client)->WaitForConnection(kWatchdog).ok());
    return *std::move(client);
  }

  // The thread `client`'s callback runs on.
  static std::thread::id CallbackThread(RedisClient& client) {
    std::promise<std::thread::id> id;
    std::future<std::thread::id> future = id.get_future();
    client.Send({"PING"}, [&id](absl::StatusOr<RedisReply> reply) {
      EXPECT_TRUE(reply.ok()) << reply.status();
      id.set_value(std::this_thread::get_id());
    });
    EXPECT_EQ(future.wait_for(kWatchdog), std::future_status::ready);
    return future.get();
  }

  std::unique_ptr<RedisServer> server_;
  int threads_before_ = 0;
  std::shared_ptr<internal::IoThread> io_;
};

// Verifies that clients made on one IoThread start no thread of their own: both run their
// callbacks on that thread, and only it is running.
TEST_F(SharedIoThreadTest, ClientsOnOneIoThreadRunOnIt) {
  std::unique_ptr<RedisClient> a = MakeClient();
  std::unique_ptr<RedisClient> b = MakeClient();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(internal::IoThread::RunningForTest(), threads_before_ + 1);
  EXPECT_EQ(CallbackThread(*a), io_->thread_id());
  EXPECT_EQ(CallbackThread(*b), io_->thread_id());
}

// Verifies shutdown with commands pending on a shared thread: destroying one client fails each of
// its pending commands once, with Unavailable, before the destructor returns, and leaves the
// other client (and its pending command) working on the same thread.
TEST_F(SharedIoThreadTest, DestroyingOneClientFailsItsPendingCommandsBeforeReturning) {
  std::unique_ptr<RedisClient> doomed = MakeClient();
  std::unique_ptr<RedisClient> survivor = MakeClient();
  ASSERT_NE(doomed, nullptr);
  ASSERT_NE(survivor, nullptr);
  server_->Pause();  // Keeps every command pending.
  constexpr int kCommands = 50;
  std::atomic<int> completions{0};
  std::atomic<int> unavailable{0};
  for (int i = 0; i < kCommands; ++i) {
    doomed->Send(RedisCommand::Format({"INCR", "doomed"}), std::chrono::seconds(10),
                 [&](absl::StatusOr<RedisReply> reply) {
                   if (absl::IsUnavailable(reply.status())) unavailable.fetch_add(1);
                   completions.fetch_add(1);
                 });
  }
  auto [pending, pending_future] = Capture();
  survivor->Send(RedisCommand::Format({"INCR", "survivor"}), std::chrono::seconds(10),
                 std::move(pending));
  doomed.reset();
  EXPECT_EQ(completions.load(), kCommands);
  EXPECT_EQ(unavailable.load(), kCommands);
  server_->Resume();
  absl::StatusOr<RedisReply> reply = Await(pending_future);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, RedisReply::Integer(1));
  EXPECT_EQ(CallbackThread(*survivor), io_->thread_id());
  EXPECT_EQ(completions.load(), kCommands);  // Nothing completed twice.
}

// Verifies that the last holder stops the thread: a client keeps the shared thread running after
// the router's handle is gone, and the thread is joined when the client goes.
TEST_F(SharedIoThreadTest, TheLastHolderStopsTheThread) {
  std::unique_ptr<RedisClient> client = MakeClient();
  ASSERT_NE(client, nullptr);
  const std::thread::id thread = io_->thread_id();
  io_.reset();
  EXPECT_EQ(CallbackThread(*client), thread);
  EXPECT_EQ(internal::IoThread::RunningForTest(), threads_before_ + 1);
  client.reset();
  EXPECT_EQ(internal::IoThread::RunningForTest(), threads_before_);
}

// Verifies that a client on a shared thread can be destroyed from its own callback: its pending
// command then fails with Unavailable, and the other client keeps working.
TEST_F(SharedIoThreadTest, AClientCanBeDestroyedFromItsOwnCallback) {
  std::unique_ptr<RedisClient> doomed = MakeClient();
  std::unique_ptr<RedisClient> survivor = MakeClient();
  ASSERT_NE(doomed, nullptr);
  ASSERT_NE(survivor, nullptr);
  server_->Pause();
  auto [pending, pending_future] = Capture();
  doomed->Send(RedisCommand::Format({"PING"}), std::chrono::seconds(10), std::move(pending));
  std::promise<void> destroyed;
  RedisClient* raw = doomed.get();
  raw->Send(RedisCommand::Format({"PING"}), std::chrono::milliseconds(10),
            [&, doomed = std::move(doomed)](absl::StatusOr<RedisReply>) mutable {
              doomed.reset();
              destroyed.set_value();
            });
  std::future<void> done = destroyed.get_future();
  ASSERT_EQ(done.wait_for(kWatchdog), std::future_status::ready);
  absl::StatusOr<RedisReply> reply = Await(pending_future);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(reply.status().message(), HasSubstr("client shut down"));
  server_->Resume();
  EXPECT_EQ(CallbackThread(*survivor), io_->thread_id());
}

TEST(RedisClientOptions, RejectsBadOptions) {
  RedisClientOptions options{.endpoint = EndpointOf(*ParseStoreUrl("redis://127.0.0.1:1"))};
  options.connections = 0;
  EXPECT_EQ(RedisClient::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.connections = 2;
  options.io_threads = 3;
  // io_threads is capped at connections.
  EXPECT_TRUE(RedisClient::Create(options).ok());
  options.backoff_min = std::chrono::milliseconds(100);
  options.backoff_max = std::chrono::milliseconds(10);
  EXPECT_EQ(RedisClient::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RedisClient::Create(RedisClientOptions{}).status().code(),
            absl::StatusCode::kInvalidArgument);  // A memory URL.
}

}  // namespace
}  // namespace sluice
