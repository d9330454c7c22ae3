// RedisConnection against a hostile or broken server (issue 13, points 5 and 7): a reply announced
// at 3 GB, a reply that trickles in long after its deadline, a server that drops connections. A
// scripted FakeRedisServer on loopback plays the server; real time is a watchdog only.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/clock.h"
#include "sluice/store_url.h"

#include "src/store/redis/client/redis_client.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/fake_redis_server.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/redis_endpoint_of.h"

namespace sluice {
namespace {

using ::sluice::testing::Await;
using ::sluice::testing::Capture;
using ::sluice::testing::EndpointOf;
using ::sluice::testing::FakeRedisServer;
using ::sluice::testing::kWatchdog;
using ::sluice::testing::LogCapture;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// Slack allowed past a deadline: timer wake-up and scheduling, generous for sanitizer builds.
constexpr milliseconds kSlack{400};

milliseconds Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::Real().Now() - start);
}

RedisClientOptions OptionsFor(const FakeRedisServer& server, std::string userinfo = "") {
  absl::StatusOr<StoreUrl> url =
      ParseStoreUrl("redis://" + userinfo + "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_TRUE(url.ok()) << url.status();
  RedisClientOptions options;
  if (url.ok()) options.endpoint = EndpointOf(*url);
  return options;
}

// Waits (under the watchdog) until `condition` holds.
template <typename Condition>
bool WaitUntil(Condition condition) {
  const auto start = Clock::Real().Now();
  while (!condition()) {
    if (Since(start) > kWatchdog) return false;
    std::this_thread::sleep_for(milliseconds(5));  // Polling a real server's effect, not time.
  }
  return true;
}

// Answers the handshake, then runs `on_command` for every other command.
FakeRedisServer::Handler AfterHandshake(FakeRedisServer::Handler on_command) {
  return [on_command = std::move(on_command)](FakeRedisServer::Connection& c,
                                              const std::vector<std::string>& argv) {
    if (argv[0] == "PING") {
      c.Write("+PONG\r\n");
    } else if (argv[0] == "AUTH") {
      c.Write("+OK\r\n");
    } else {
      on_command(c, argv);
    }
  };
}

// Verifies issue 13's attack: a reply announced at 3 GB fails the connection as soon as its
// header arrives (long before the command's deadline), with a clear error, instead of being
// buffered; the client then reconnects.
TEST(RedisConnectionHostile, ReplyAnnouncedAt3GbFailsTheConnectionAtOnce) {
  std::atomic<bool> done_writing{false};
  FakeRedisServer server(AfterHandshake([&](FakeRedisServer::Connection& c, const auto&) {
    c.Write("$3000000000\r\n");
    // Keep sending, as a server that really meant it would, until the client hangs up.
    const std::string chunk(64 << 10, 'x');
    for (int i = 0; i < 200 && !c.Stopping() && c.Write(chunk); ++i) {
    }
    done_writing = true;
  }));
  ASSERT_TRUE(server.ok());
  RedisClientOptions options = OptionsFor(server);
  options.command_timeout = std::chrono::seconds(5);
  std::unique_ptr<RedisClient> client = testing::Connect(options);
  ASSERT_NE(client, nullptr);

  const auto start = Clock::Real().Now();
  absl::StatusOr<RedisReply> reply = client->SendSync({"GET", "k"});
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable) << reply.status();
  EXPECT_THAT(reply.status().message(),
              HasSubstr("bulk string of 3000000000 bytes is longer than the limit of 67108864"));
  EXPECT_LT(Since(start), milliseconds(1000));
  EXPECT_EQ(client->Stats().disconnects, 1u);
  // The server saw the connection go: its writes failed well before 200 x 64 KB.
  EXPECT_TRUE(WaitUntil([&] { return done_writing.load(); }));
  ASSERT_TRUE(client->WaitForConnection(kWatchdog).ok());
}

// Verifies the trickle: a reply that keeps arriving a few bytes at a time never trips the
// "no bytes for stall_timeout" check. The command fails at its deadline, and the connection is
// dropped once the reply is still incomplete stall_timeout after the last reply, instead of being
// read for as long as the server cares to send.
TEST(RedisConnectionHostile, TricklingReplyIsDroppedAfterItsDeadline) {
  std::atomic<bool> peer_gone{false};
  FakeRedisServer server(AfterHandshake([&](FakeRedisServer::Connection& c, const auto&) {
    c.Write("$1000000\r\n");
    const std::string drip(100, 'x');
    // 100 bytes every 10 ms: the whole reply would take 100 s.
    while (!c.Stopping() && c.Write(drip)) std::this_thread::sleep_for(milliseconds(10));
    peer_gone = !c.Stopping();
  }));
  ASSERT_TRUE(server.ok());
  LogCapture logs;
  RedisClientOptions options = OptionsFor(server);
  options.command_timeout = milliseconds(100);
  options.stall_timeout = milliseconds(300);
  std::unique_ptr<RedisClient> client = testing::Connect(options);
  ASSERT_NE(client, nullptr);

  const auto start = Clock::Real().Now();
  auto [done, future] = Capture();
  client->Send(RedisCommand::Format({"GET", "big"}), milliseconds(100), std::move(done));
  absl::StatusOr<RedisReply> reply = Await(future);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded) << reply.status();
  EXPECT_LE(Since(start), milliseconds(100) + kSlack);

  ASSERT_TRUE(WaitUntil([&] { return client->Stats().disconnects == 1; }));
  const milliseconds dropped_after = Since(start);
  EXPECT_GE(dropped_after, milliseconds(300));
  EXPECT_LE(dropped_after, milliseconds(300) + kSlack);
  EXPECT_TRUE(WaitUntil([&] { return peer_gone.load(); }));
  EXPECT_EQ(logs.Count("still incomplete 300ms after the last reply and past its deadline"), 1)
      << logs.Dump();
}

// Verifies point 5: a lost connection, the failed attempts that follow and the recovery give one
// line each (not one per attempt), the lines name the server by its redacted URL, and the
// counters count every event.
TEST(RedisConnectionHostile, ConnectionLossAndRecoveryAreLoggedOnceEachWithoutThePassword) {
  std::atomic<bool> refuse{false};
  FakeRedisServer server([&](FakeRedisServer::Connection& c, const std::vector<std::string>& argv) {
    if (refuse) {
      c.Close();  // During the handshake: the attempt fails.
      return;
    }
    if (argv[0] == "AUTH") {
      c.Write("+OK\r\n");
    } else if (argv[0] == "DROP") {
      refuse = true;
      c.Close();
    } else {
      c.Write("+PONG\r\n");
    }
  });
  ASSERT_TRUE(server.ok());
  LogCapture logs;
  RedisClientOptions options = OptionsFor(server, "user:s3cret-pw@");
  options.backoff_min = milliseconds(10);
  options.backoff_max = milliseconds(20);
  std::unique_ptr<RedisClient> client = testing::Connect(options);
  ASSERT_NE(client, nullptr);

  EXPECT_FALSE(client->SendSync({"DROP"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return client->Stats().connect_failures >= 5; }));
  refuse = false;
  ASSERT_TRUE(client->WaitForConnection(kWatchdog).ok());
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));

  const RedisClientStats stats = client->Stats();
  EXPECT_EQ(stats.disconnects, 1u);
  EXPECT_GE(stats.connect_failures, 5u);
  EXPECT_EQ(stats.connects, 2u);
  const std::string url = "redis://user:***@127.0.0.1:" + std::to_string(server.port());
  EXPECT_EQ(logs.Count("warning redis " + url + ": connection lost: "), 1) << logs.Dump();
  EXPECT_EQ(logs.Count("warning redis " + url + ": cannot connect: "), 1) << logs.Dump();
  EXPECT_EQ(logs.Count("info redis " + url + ": connected again after " +
                       std::to_string(stats.connect_failures) + " failed attempts"),
            1)
      << logs.Dump();
  EXPECT_EQ(logs.Count("s3cret-pw"), 0) << logs.Dump();
}

}  // namespace
}  // namespace sluice
