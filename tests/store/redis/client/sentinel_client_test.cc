// SentinelClient against real Sentinels (tests/testing/redis_sentinel.h): discovery, credentials,
// Sentinels down, following a failover, and the one resend after READONLY. Real time is only a
// bound here (other processes' timers decide when a failover happens), never what is asserted.
#include "src/store/redis/client/sentinel/sentinel_client.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/store_url.h"

#include "src/store/redis/client/io_thread.h"
#include "src/store/redis/client/redis_router_factory.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_sentinel.h"

namespace sluice {
namespace {

using ::sluice::testing::Await;
using ::sluice::testing::Capture;
using ::sluice::testing::EndpointOf;
using ::sluice::testing::RedisSentinel;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using SteadyClock = std::chrono::steady_clock;

constexpr milliseconds kWait{10'000};

std::unique_ptr<RedisSentinel> StartSentinels(const RedisSentinel::Options& options = {}) {
  absl::StatusOr<std::unique_ptr<RedisSentinel>> sentinel = RedisSentinel::Start(options);
  EXPECT_TRUE(sentinel.ok()) << sentinel.status();
  return sentinel.ok() ? *std::move(sentinel) : nullptr;
}

SentinelClientOptions OptionsFor(const std::string& url) {
  absl::StatusOr<StoreUrl> parsed = ParseStoreUrl(url);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return {.node = {.endpoint = EndpointOf(parsed.ok() ? *parsed : StoreUrl{}),
                   .command_timeout = milliseconds(200)}};
}

std::shared_ptr<SentinelClient> Create(const SentinelClientOptions& options) {
  absl::StatusOr<std::shared_ptr<SentinelClient>> client = SentinelClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

absl::StatusOr<RedisReply> RouteSync(RedisRouter& router,
                                     std::initializer_list<std::string_view> argv,
                                     milliseconds timeout = milliseconds(200)) {
  auto [done, future] = Capture();
  router.Route(RedisCommand::Format(argv), "", timeout, std::move(done));
  return Await(future);
}

std::string Local(int port) { return absl::StrCat("127.0.0.1:", port); }

// Sentinels shared by the tests that do not fail anything over.
class SentinelClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { sentinel_ = StartSentinels().release(); }
  static void TearDownTestSuite() {
    delete sentinel_;
    sentinel_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(sentinel_, nullptr); }

  // The fixture's URL with the Sentinel list replaced by `hosts`.
  static std::string UrlWithSentinels(const std::string& hosts) {
    return absl::StrCat("redis-sentinel://", hosts, "/", sentinel_->primary_name());
  }
  static std::string AllSentinels() {
    std::vector<std::string> hosts;
    for (int port : sentinel_->sentinel_ports()) hosts.push_back(Local(port));
    return absl::StrJoin(hosts, ",");
  }

  static RedisSentinel* sentinel_;
};

RedisSentinel* SentinelClientTest::sentinel_ = nullptr;

TEST_F(SentinelClientTest, DiscoversThePrimaryAndSendsCommandsToIt) {
  std::shared_ptr<SentinelClient> client = Create(OptionsFor(sentinel_->Url()));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForConnection(kWait).ok());
  EXPECT_EQ(client->PrimaryAddress(), Local(sentinel_->primary_port()));
  ASSERT_EQ(client->Primaries().size(), 1u);
  EXPECT_EQ(*RouteSync(*client, {"SET", "discovered", "yes"}), RedisReply::Status("OK"));
  EXPECT_EQ(*sentinel_->Server(sentinel_->primary_port()).Command({"GET", "discovered"}), "yes");
  EXPECT_EQ(client->Describe(), sentinel_->Url());
  EXPECT_GE(client->Stats().discoveries, 1u);
  EXPECT_EQ(client->Stats().primary_changes, 0u);
  EXPECT_GE(client->RouterStats().commands_sent, 1u);
}

// Verifies that every client of the router (the primary's, and a query and a subscription client
// per Sentinel) runs on one I/O thread: the router starts exactly one, replies arrive on it, and
// it is joined when the router goes.
TEST_F(SentinelClientTest, EveryClientRunsOnOneSharedThread) {
  const int before = internal::IoThread::RunningForTest();
  std::shared_ptr<SentinelClient> client = Create(OptionsFor(UrlWithSentinels(AllSentinels())));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForConnection(kWait).ok());
  EXPECT_GE(sentinel_->sentinel_ports().size(), 2u);
  EXPECT_EQ(internal::IoThread::RunningForTest(), before + 1);
  std::promise<std::thread::id> id;
  std::future<std::thread::id> future = id.get_future();
  client->Route(RedisCommand::Format({"PING"}), "", milliseconds(2000),
                [&id](absl::StatusOr<RedisReply> reply) {
                  EXPECT_TRUE(reply.ok()) << reply.status();
                  id.set_value(std::this_thread::get_id());
                });
  ASSERT_EQ(future.wait_for(kWait), std::future_status::ready);
  EXPECT_NE(future.get(), std::this_thread::get_id());
  client.reset();
  EXPECT_EQ(internal::IoThread::RunningForTest(), before);
}

TEST_F(SentinelClientTest, IsWhatTheRouterFactoryMakesForASentinelUrl) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(sentinel_->Url());
  ASSERT_TRUE(url.ok());
  absl::StatusOr<std::shared_ptr<RedisRouter>> router =
      CreateRedisRouter({.endpoint = EndpointOf(*url)});
  ASSERT_TRUE(router.ok()) << router.status();
  EXPECT_NE(dynamic_cast<SentinelClient*>(router->get()), nullptr);
  ASSERT_TRUE((*router)->WaitForConnection(kWait).ok());
  EXPECT_EQ(*RouteSync(**router, {"PING"}), RedisReply::Status("PONG"));
}

// Verifies that the Sentinels are asked in turn: dead ones (first in the list) are skipped.
TEST_F(SentinelClientTest, AsksTheNextSentinelWhenOneIsDown) {
  absl::StatusOr<int> dead1 = testing::FreeLoopbackPort();
  absl::StatusOr<int> dead2 = testing::FreeLoopbackPort();
  ASSERT_TRUE(dead1.ok() && dead2.ok());
  std::shared_ptr<SentinelClient> client = Create(OptionsFor(
      UrlWithSentinels(absl::StrCat(Local(*dead1), ",", Local(*dead2), ",", AllSentinels()))));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForConnection(kWait).ok());
  EXPECT_EQ(client->PrimaryAddress(), Local(sentinel_->primary_port()));
  EXPECT_EQ(client->Stats().discovery_failures, 0u);
}

TEST_F(SentinelClientTest, UnknownPrimaryNameIsNotFound) {
  std::shared_ptr<SentinelClient> client =
      Create(OptionsFor(absl::StrCat("redis-sentinel://", AllSentinels(), "/no-such-primary")));
  ASSERT_NE(client, nullptr);
  const auto start = SteadyClock::now();
  const absl::Status status = client->WaitForConnection(kWait);
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("monitors no primary named no-such-primary"));
  EXPECT_LT(SteadyClock::now() - start, kWait / 2);  // At once, not at the deadline.
}

// Verifies the deadline of a command that waits for a primary: with no Sentinel reachable it
// fails with DeadlineExceeded, never sent, close to its own deadline.
TEST(SentinelClientNoSentinel, CommandsWaitingForAPrimaryTimeOutAtTheirDeadline) {
  absl::StatusOr<int> dead = testing::FreeLoopbackPort();
  ASSERT_TRUE(dead.ok());
  std::shared_ptr<SentinelClient> client =
      Create(OptionsFor(absl::StrCat("redis-sentinel://", Local(*dead), "/p")));
  ASSERT_NE(client, nullptr);
  const auto start = SteadyClock::now();
  absl::StatusOr<RedisReply> reply = RouteSync(*client, {"PING"}, milliseconds(150));
  const auto took = SteadyClock::now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(reply.status())) << reply.status();
  EXPECT_THAT(reply.status().message(), HasSubstr("never sent"));
  EXPECT_GE(took, milliseconds(150));
  EXPECT_LT(took, milliseconds(150 + 250));
  EXPECT_EQ(client->Stats().wait_timeouts, 1u);
  const absl::Status connected = client->WaitForConnection(milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(connected)) << connected;
  EXPECT_THAT(connected.message(), HasSubstr("no Sentinel named primary p"));
}

TEST(SentinelClientOptionsTest, RefusesAUrlThatIsNotASentinelUrl) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://127.0.0.1:6379");
  ASSERT_TRUE(url.ok());
  absl::StatusOr<std::shared_ptr<SentinelClient>> client =
      SentinelClient::Create({.node = {.endpoint = EndpointOf(*url)}});
  EXPECT_TRUE(absl::IsInvalidArgument(client.status())) << client.status();
}

TEST(SentinelClientAuth, UsesTheSentinelsPasswordAndTheDataServersPassword) {
  std::unique_ptr<RedisSentinel> sentinel =
      StartSentinels({.data_password = "data-pw", .sentinel_password = "sentinel-pw"});
  ASSERT_NE(sentinel, nullptr);
  std::shared_ptr<SentinelClient> client = Create(OptionsFor(sentinel->Url()));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForConnection(kWait).ok());
  EXPECT_EQ(*RouteSync(*client, {"SET", "k", "v"}), RedisReply::Status("OK"));

  // A wrong Sentinel password is refused at once, naming the Sentinels, never the password.
  std::string wrong_sentinel_pw = sentinel->Url();
  wrong_sentinel_pw.replace(wrong_sentinel_pw.find("sentinel-pw"), 11, "wrong-pw");
  std::shared_ptr<SentinelClient> refused = Create(OptionsFor(wrong_sentinel_pw));
  ASSERT_NE(refused, nullptr);
  absl::Status status = refused->WaitForConnection(kWait);
  EXPECT_TRUE(absl::IsPermissionDenied(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("sentinel 127.0.0.1:"));
  EXPECT_THAT(status.message(), ::testing::Not(HasSubstr("wrong-pw")));

  // A wrong data-server password: the Sentinels answer, the primary refuses.
  std::string wrong_data_pw = sentinel->Url();
  wrong_data_pw.replace(wrong_data_pw.find("data-pw"), 7, "bad-data");
  std::shared_ptr<SentinelClient> refused_by_primary = Create(OptionsFor(wrong_data_pw));
  ASSERT_NE(refused_by_primary, nullptr);
  status = refused_by_primary->WaitForConnection(kWait);
  EXPECT_TRUE(absl::IsPermissionDenied(status)) << status;
  EXPECT_THAT(status.message(), ::testing::Not(HasSubstr("bad-data")));
}

// Verifies that a killed primary is followed: within a few seconds of the Sentinels' failover the
// client sends to the promoted replica, and every command meanwhile ends within its deadline.
TEST(SentinelClientFailover, FollowsTheNewPrimaryAfterTheOldOneIsKilled) {
  std::unique_ptr<RedisSentinel> sentinel = StartSentinels();
  ASSERT_NE(sentinel, nullptr);
  std::shared_ptr<SentinelClient> client = Create(OptionsFor(sentinel->Url()));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForConnection(kWait).ok());
  const int old_primary = sentinel->primary_port();
  const int replica = sentinel->replica_port();

  constexpr milliseconds kDeadline{50};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> slowest_us{0};
  std::atomic<int64_t> first_ok_on_new_us{-1};
  std::atomic<int> failures{0};
  const auto killed_at = SteadyClock::now() + milliseconds(200);
  std::thread load([&] {
    while (!stop.load()) {
      const auto start = SteadyClock::now();
      absl::StatusOr<RedisReply> reply = RouteSync(*client, {"INCR", "n"}, kDeadline);
      const auto end = SteadyClock::now();
      const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(end - start).count();
      if (us > slowest_us.load()) slowest_us.store(us);
      if (!reply.ok() || reply->is_error()) {
        failures.fetch_add(1);
      } else if (end > killed_at && client->PrimaryAddress() == Local(replica) &&
                 first_ok_on_new_us.load() < 0) {
        first_ok_on_new_us.store(
            std::chrono::duration_cast<std::chrono::microseconds>(end - killed_at).count());
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
  });
  std::this_thread::sleep_until(killed_at);
  sentinel->KillPrimary();
  absl::StatusOr<int> promoted = sentinel->WaitForFailover(old_primary);
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  const auto failed_over_at = SteadyClock::now();
  EXPECT_EQ(*promoted, replica);
  ASSERT_TRUE(testing::WaitFor([&] { return first_ok_on_new_us.load() >= 0; }, 5'000));
  stop.store(true);
  load.join();

  const double failover_ms =
      std::chrono::duration<double, std::milli>(failed_over_at - killed_at).count();
  const double followed_ms = static_cast<double>(first_ok_on_new_us.load()) / 1000.0;
  std::printf(
      "killed -> sentinels agree %.0f ms; killed -> first command on the new primary %.0f "
      "ms; slowest call %.1f ms (deadline %lld ms); failed calls %d\n",
      failover_ms, followed_ms, static_cast<double>(slowest_us.load()) / 1000.0,
      static_cast<long long>(kDeadline.count()), failures.load());
  // Within a few seconds of the Sentinels' switch (the subscription makes it milliseconds).
  EXPECT_LT(followed_ms, failover_ms + 2000);
  // Every call ended within its deadline; the bound is 10x to stay clear of scheduling noise on a
  // loaded machine (the figure printed above is the measurement).
  EXPECT_LT(slowest_us.load(), (kDeadline * 10).count() * 1000);
  EXPECT_EQ(client->PrimaryAddress(), Local(replica));
  EXPECT_EQ(client->Stats().primary_changes, 1u);
  EXPECT_GE(client->Stats().switch_messages, 1u);
}

// Verifies the one resend after READONLY. The primary is demoted behind the client's back (no
// +switch-master, its connection left open), and the Sentinels are told the new primary: the
// next command is refused READONLY by the old primary, the client asks the Sentinels and resends
// it to the new one, within its deadline, exactly once.
TEST(SentinelClientReadOnly, ResendsOnceToTheNewPrimaryAfterReadOnly) {
  std::unique_ptr<RedisSentinel> sentinel = StartSentinels();
  ASSERT_NE(sentinel, nullptr);
  SentinelClientOptions options = OptionsFor(sentinel->Url());
  options.poll_interval = std::chrono::minutes(10);  // Only READONLY may prompt the rediscovery.
  std::shared_ptr<SentinelClient> client = Create(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForConnection(kWait).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return client->Stats().subscriptions == 3; }, 5'000));
  ASSERT_EQ(client->Stats().discoveries, 1u);  // Nothing else may have asked the Sentinels.
  const int old_primary = sentinel->primary_port();
  const int new_primary = sentinel->replica_port();
  ASSERT_EQ(*RouteSync(*client, {"SET", "n", "1"}), RedisReply::Status("OK"));
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return sentinel->Server(new_primary).Command({"GET", "n"}).value_or("") == "1";
      },
      5'000));

  // Swap the roles by hand and re-point every Sentinel (SENTINEL REMOVE + MONITOR announce no
  // +switch-master, and REPLICAOF leaves the client's connection open).
  ASSERT_EQ(*sentinel->Server(new_primary).Command({"REPLICAOF", "NO", "ONE"}), "OK");
  ASSERT_EQ(*sentinel->Server(old_primary)
                 .Command({"REPLICAOF", "127.0.0.1", std::to_string(new_primary)}),
            "OK");
  for (size_t i = 0; i < sentinel->sentinel_ports().size(); ++i) {
    ASSERT_EQ(*sentinel->SentinelCommand(i, {"SENTINEL", "REMOVE", sentinel->primary_name()}),
              "OK");
    ASSERT_EQ(*sentinel->SentinelCommand(i, {"SENTINEL", "MONITOR", sentinel->primary_name(),
                                             "127.0.0.1", std::to_string(new_primary), "2"}),
              "OK");
    ASSERT_EQ(sentinel->SentinelPrimaryPort(i).value_or(0), new_primary);
  }
  // The old primary answers writes with READONLY once it has synced from the new one.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const std::string info =
            sentinel->Server(old_primary).Command({"INFO", "replication"}).value_or("");
        return info.find("master_link_status:up") != std::string::npos;
      },
      5'000));
  ASSERT_THAT(*sentinel->Server(old_primary).Command({"SET", "x", "y"}), HasSubstr("READONLY"));

  absl::StatusOr<RedisReply> reply = RouteSync(*client, {"INCR", "n"}, milliseconds(2000));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, RedisReply::Integer(2));  // Ran once, on the new primary.
  EXPECT_EQ(*sentinel->Server(new_primary).Command({"GET", "n"}), "2");
  EXPECT_EQ(client->PrimaryAddress(), Local(new_primary));
  const SentinelClientStats stats = client->Stats();
  EXPECT_EQ(stats.readonly_replies, 1u);
  EXPECT_EQ(stats.resends, 1u);
  EXPECT_EQ(stats.primary_changes, 1u);
  EXPECT_EQ(stats.switch_messages, 0u);
  EXPECT_EQ(stats.discoveries, 2u);
}

// Keeps `in_flight` PINGs going through `router` for `duration`; returns {commands per second,
// this process's CPU microseconds per command}.
std::pair<double, double> Saturate(RedisRouter& router, int in_flight, milliseconds duration) {
  std::atomic<int64_t> done{0};
  std::atomic<bool> stop{false};
  std::atomic<int> outstanding{0};
  std::function<void()> send = [&] {
    outstanding.fetch_add(1);
    router.Route(RedisCommand::Format({"PING"}), "", milliseconds(1000),
                 [&](absl::StatusOr<RedisReply>) {
                   done.fetch_add(1);
                   if (!stop.load()) send();
                   outstanding.fetch_sub(1);
                 });
  };
  timespec cpu0{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
  const auto start = SteadyClock::now();
  for (int i = 0; i < in_flight; ++i) send();
  std::this_thread::sleep_for(duration);
  stop.store(true);
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  timespec cpu1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
  const int64_t n = done.load();
  testing::WaitFor([&] { return outstanding.load() == 0; }, 5'000);
  const double cpu_us = static_cast<double>(cpu1.tv_sec - cpu0.tv_sec) * 1e6 +
                        static_cast<double>(cpu1.tv_nsec - cpu0.tv_nsec) / 1e3;
  return {static_cast<double>(n) / seconds, cpu_us / static_cast<double>(n)};
}

// A measurement, not run by default (--gtest_also_run_disabled_tests): what routing through the
// Sentinel client costs over the primary's own RedisClient (a lock, a copy of the command for a
// READONLY resend, a shared_ptr per command), 64 PINGs in flight, three runs each, alternating.
TEST(SentinelClientOverhead, DISABLED_RouteCostsAboutWhatTheClientCosts) {
  std::unique_ptr<RedisSentinel> sentinel = StartSentinels();
  ASSERT_NE(sentinel, nullptr);
  std::shared_ptr<SentinelClient> routed = Create(OptionsFor(sentinel->Url()));
  ASSERT_NE(routed, nullptr);
  ASSERT_TRUE(routed->WaitForConnection(kWait).ok());
  absl::StatusOr<StoreUrl> direct_url =
      ParseStoreUrl(absl::StrCat("redis://", Local(sentinel->primary_port())));
  ASSERT_TRUE(direct_url.ok());
  absl::StatusOr<std::unique_ptr<RedisClient>> direct =
      RedisClient::Create({.endpoint = EndpointOf(*direct_url)});
  ASSERT_TRUE(direct.ok());
  ASSERT_TRUE((*direct)->WaitForConnection(kWait).ok());
  for (int run = 0; run < 3; ++run) {
    const auto [direct_rate, direct_cpu] = Saturate(**direct, 64, milliseconds(2000));
    const auto [routed_rate, routed_cpu] = Saturate(*routed, 64, milliseconds(2000));
    std::printf("RedisClient %.0f/s %.2f us CPU each; SentinelClient %.0f/s %.2f us CPU each\n",
                direct_rate, direct_cpu, routed_rate, routed_cpu);
  }
}

}  // namespace
}  // namespace sluice
