// RedisCommand::Pipeline() through a real connection: one request, several replies, one callback.
#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_error.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::Await;
using ::sluice::testing::Capture;
using ::sluice::testing::Connect;
using ::sluice::testing::OptionsFor;
using ::sluice::testing::RedisServer;
using ::testing::HasSubstr;

RedisCommand Pipeline(std::initializer_list<std::initializer_list<std::string_view>> commands) {
  std::vector<RedisCommand> parts;
  for (const auto& argv : commands) parts.push_back(RedisCommand::Format(argv));
  return RedisCommand::Pipeline(std::move(parts));
}

class RedisPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    RedisClientOptions options = OptionsFor(*server_);
    options.command_timeout = std::chrono::seconds(5);
    client_ = Connect(options);
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<RedisServer> server_;
  std::unique_ptr<RedisClient> client_;
};

TEST_F(RedisPipelineTest, CompletesOnceWithAnArrayOfEveryReply) {
  RedisCommand pipeline = Pipeline({{"SET", "k", "v"}, {"GET", "k"}});
  EXPECT_EQ(pipeline.reply_count(), 2u);
  EXPECT_EQ(pipeline.name(), "GET");
  absl::StatusOr<RedisReply> reply = client_->SendSync(std::move(pipeline));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->DebugString(), "[+OK, \"v\"]");
}

TEST_F(RedisPipelineTest, ErrorRepliesStayElementsOfTheArray) {
  absl::StatusOr<RedisReply> reply =
      client_->SendSync(Pipeline({{"SET", "k", "text"}, {"INCR", "k"}, {"GET", "k"}}));
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->elements().size(), 3u);
  EXPECT_TRUE(reply->elements()[1].is_error());
  EXPECT_THAT(reply->elements()[1].str(), HasSubstr("not an integer"));
  EXPECT_EQ(reply->elements()[2], RedisReply::String("text"));
}

TEST_F(RedisPipelineTest, APipelineOfOneCommandIsStillAnArray) {
  std::vector<RedisCommand> one;
  one.push_back(RedisCommand::Format({"PING"}));
  absl::StatusOr<RedisReply> reply = client_->SendSync(RedisCommand::Pipeline(std::move(one)));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->DebugString(), "[+PONG]");
}

TEST_F(RedisPipelineTest, RefusesNestedOrEmptyPipelines) {
  EXPECT_TRUE(RedisCommand::Pipeline({}).empty());
  std::vector<RedisCommand> nested;
  nested.push_back(Pipeline({{"PING"}, {"PING"}}));
  RedisCommand refused = RedisCommand::Pipeline(std::move(nested));
  EXPECT_TRUE(refused.empty());
  EXPECT_TRUE(absl::IsInvalidArgument(client_->SendSync(std::move(refused)).status()));
}

TEST_F(RedisPipelineTest, PrefixedFlattensAPipelineBehindItsFirstCommand) {
  RedisCommand prefixed = RedisCommand::Prefixed(RedisCommand::Format({"ECHO", "a"}),
                                                 Pipeline({{"ECHO", "b"}, {"INCR", "n"}}));
  EXPECT_EQ(prefixed.reply_count(), 3u);
  EXPECT_EQ(prefixed.name(), "INCR");
  absl::StatusOr<RedisReply> reply = client_->SendSync(std::move(prefixed));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->DebugString(), "[\"a\", \"b\", 1]");
  reply = client_->SendSync(
      RedisCommand::Prefixed(RedisCommand::Format({"ECHO", "a"}), RedisCommand::Format({"PING"})));
  EXPECT_EQ(reply->DebugString(), "[\"a\", +PONG]");
  EXPECT_TRUE(RedisCommand::Prefixed(Pipeline({{"PING"}}), RedisCommand::Format({"PING"})).empty());
}

TEST_F(RedisPipelineTest, ACloneIsAnIndependentCopy) {
  RedisCommand original = Pipeline({{"INCR", "n"}, {"GET", "n"}});
  RedisCommand copy = original.Clone();
  EXPECT_EQ(copy.resp(), original.resp());
  EXPECT_EQ(copy.reply_count(), 2u);
  EXPECT_TRUE(copy.is_pipeline());
  EXPECT_EQ(client_->SendSync(std::move(original))->DebugString(), "[1, \"1\"]");
  EXPECT_EQ(client_->SendSync(std::move(copy))->DebugString(), "[2, \"2\"]");
  EXPECT_TRUE(RedisCommand().Clone().empty());
}

// Verifies that a pipeline is written in one piece and matched with exactly its own replies while
// other threads send single commands and pipelines on the same connection: nothing runs between
// a pipeline's SET and GET of a key every thread writes, and every single command gets its reply.
TEST_F(RedisPipelineTest, ConcurrentSendersNeverSplitAPipeline) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::atomic<int> split{0};
  std::atomic<int> mismatched{0};
  std::atomic<int> failed{0};
  std::latch all_done(kThreads * kPerThread * 2);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string token = absl::StrCat(t, ":", i);
        client_->Send(Pipeline({{"SET", "shared", token}, {"ECHO", "mid"}, {"GET", "shared"}}),
                      [&, token](absl::StatusOr<RedisReply> reply) {
                        if (!reply.ok()) {
                          ++failed;
                        } else if (reply->elements().size() != 3 ||
                                   reply->elements()[1] != RedisReply::String("mid") ||
                                   reply->elements()[2] != RedisReply::String(token)) {
                          ++split;
                        }
                        all_done.count_down();
                      });
        client_->Send({"SET", "shared", "single-" + token}, [&](absl::StatusOr<RedisReply> reply) {
          if (!reply.ok()) {
            ++failed;
          } else if (*reply != RedisReply::Status("OK")) {
            ++mismatched;
          }
          all_done.count_down();
        });
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  all_done.wait();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(split.load(), 0);
  EXPECT_EQ(mismatched.load(), 0);
  const RedisClientStats stats = client_->Stats();
  // Three commands per pipeline, one per single command, plus the handshake's PING.
  EXPECT_EQ(stats.commands_sent, uint64_t{kThreads} * kPerThread * 4 + 1);
}

// Verifies that a pipeline that times out after one of its replies arrived still consumes exactly
// its own replies: the next command gets its own reply, not a leftover of the pipeline.
TEST_F(RedisPipelineTest, TimedOutPipelineConsumesExactlyItsReplies) {
  auto [done, future] = Capture();
  client_->Send(Pipeline({{"ECHO", "first"}, {"BLPOP", "nolist", "0.3"}, {"ECHO", "last"}}),
                std::chrono::milliseconds(50), std::move(done));
  absl::StatusOr<RedisReply> timed_out = Await(future);
  EXPECT_TRUE(absl::IsDeadlineExceeded(timed_out.status())) << timed_out.status();
  EXPECT_THAT(timed_out.status().message(), HasSubstr("ECHO"));
  absl::StatusOr<RedisReply> next = client_->SendSync({"ECHO", "next"});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, RedisReply::String("next"));
  const RedisClientStats stats = client_->Stats();
  EXPECT_EQ(stats.late_replies, 1u);
  EXPECT_EQ(stats.timeouts, 1u);
}

// Verifies that a pipeline in flight when its connection drops fails once, as outcome unknown.
TEST_F(RedisPipelineTest, LostConnectionFailsThePipelineOnce) {
  std::atomic<int> calls{0};
  std::promise<absl::Status> result;
  std::future<absl::Status> future = result.get_future();
  client_->Send(Pipeline({{"ECHO", "first"}, {"BLPOP", "nolist", "5"}}),
                [&](absl::StatusOr<RedisReply> reply) {
                  if (++calls == 1) result.set_value(reply.status());
                });
  // Let the pipeline reach the server before killing it (real time only as a watchdog).
  const auto watchdog = std::chrono::steady_clock::now() + testing::kWatchdog;
  while (client_->Stats().in_flight == 0 && std::chrono::steady_clock::now() < watchdog) {
    std::this_thread::yield();
  }
  ASSERT_EQ(client_->Stats().in_flight, 1u);
  server_->Kill();
  ASSERT_EQ(future.wait_for(testing::kWatchdog), std::future_status::ready);
  const absl::Status status = future.get();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("outcome unknown"));
  client_.reset();
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace sluice
