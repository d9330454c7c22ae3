#include "src/store/redis/client/redis_error.h"

#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <boost/asio/error.hpp>

#include "src/store/redis/client/redis_client.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

TEST(RedisError, ClassifiesReplyErrorsByFirstWord) {
  struct Case {
    const char* message;
    RedisErrorKind kind;
  };
  const Case cases[] = {
      {"NOSCRIPT No matching script. Please use EVAL.", RedisErrorKind::kNoScript},
      {"BUSY Redis is busy running a script.", RedisErrorKind::kBusy},
      {"OOM command not allowed when used memory > 'maxmemory'.", RedisErrorKind::kOom},
      {"NOAUTH Authentication required.", RedisErrorKind::kAuth},
      {"WRONGPASS invalid username-password pair or user is disabled.", RedisErrorKind::kAuth},
      {"NOPERM this user has no permissions to run the 'eval' command", RedisErrorKind::kAuth},
      {"ERR invalid password", RedisErrorKind::kAuth},
      {"MOVED 3999 127.0.0.1:6381", RedisErrorKind::kMoved},
      {"ASK 3999 127.0.0.1:6381", RedisErrorKind::kAsk},
      {"READONLY You can't write against a read only replica.", RedisErrorKind::kReadOnly},
      {"LOADING Redis is loading the dataset in memory", RedisErrorKind::kLoading},
      {"TRYAGAIN Multiple keys request during rehashing of slot", RedisErrorKind::kTryAgain},
      {"CLUSTERDOWN The cluster is down", RedisErrorKind::kClusterDown},
      {"MASTERDOWN Link with MASTER is down", RedisErrorKind::kTryAgain},
      {"ERR unknown command 'FOO'", RedisErrorKind::kOther},
      {"WRONGTYPE Operation against a key holding the wrong kind of value", RedisErrorKind::kOther},
      {"NOSCRIPTX lookalike", RedisErrorKind::kOther},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ClassifyReplyError(c.message), c.kind) << c.message;
  }
  EXPECT_EQ(ClassifyReply(RedisReply::Status("NOSCRIPT")), RedisErrorKind::kNone);
  EXPECT_EQ(ClassifyReply(RedisReply::Error("")), RedisErrorKind::kOther);
  EXPECT_TRUE(IsNoScript(RedisReply::Error("NOSCRIPT No matching script")));
  EXPECT_TRUE(IsRedirect(RedisReply::Error("ASK 1 h:1")));
  EXPECT_FALSE(IsNoScript(RedisReply::String("NOSCRIPT")));
}

TEST(RedisError, ParsesMovedAndAskRedirects) {
  std::optional<RedisRedirect> moved = ParseRedirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->kind, RedisErrorKind::kMoved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->host, "127.0.0.1");
  EXPECT_EQ(moved->port, 6381);
  std::optional<RedisRedirect> ask = ParseRedirect("ASK 0 redis-2.example:7000");
  ASSERT_TRUE(ask.has_value());
  EXPECT_EQ(ask->kind, RedisErrorKind::kAsk);
  EXPECT_EQ(ask->slot, 0);
  EXPECT_EQ(ask->host, "redis-2.example");
  EXPECT_EQ(ParseRedirect("MOVED 16383 ::1:7001")->host, "::1");
  EXPECT_EQ(ParseRedirect("MOVED 16383 [::1]:7001")->host, "::1");
  // An unknown endpoint: the host the command went to.
  EXPECT_EQ(ParseRedirect("MOVED 12 :7001")->host, "");
  EXPECT_EQ(ParseRedirect("MOVED 12 :7001")->port, 7001);
  for (const char* bad : {"MOVED", "MOVED 12", "MOVED x 127.0.0.1:1", "MOVED 16384 h:1",
                          "MOVED -1 h:1", "MOVED 1 h", "MOVED 1 h:0", "MOVED 1 h:65536",
                          "MOVED 1 h:1 extra", "ERR MOVED 1 h:1", "TRYAGAIN 1 h:1"}) {
    EXPECT_FALSE(ParseRedirect(bad).has_value()) << bad;
  }
}

TEST(RedisError, MapsReplyErrorsToCanonicalCodes) {
  EXPECT_EQ(ReplyErrorToStatus("EVALSHA", RedisReply::Error("BUSY running")).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ReplyErrorToStatus("EVALSHA", RedisReply::Error("OOM full")).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ReplyErrorToStatus("EVALSHA", RedisReply::Error("WRONGPASS no")).code(),
            absl::StatusCode::kPermissionDenied);
  const absl::Status other = ReplyErrorToStatus("EVALSHA", RedisReply::Error("ERR boom"));
  EXPECT_EQ(other.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(other.message(), "redis EVALSHA: ERR boom");
}

TEST(RedisError, TransportErrorsAreUnavailableWithContext) {
  const absl::Status refused =
      TransportError("10.0.0.5:6379", "connect", boost::asio::error::connection_refused);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.message(), HasSubstr("redis 10.0.0.5:6379: connect failed ("));
  EXPECT_TRUE(IsConnectionClosed(boost::asio::error::eof));
  EXPECT_TRUE(IsConnectionClosed(boost::asio::error::connection_reset));
  EXPECT_FALSE(IsConnectionClosed(boost::asio::error::timed_out));
}

TEST(RedisError, TimeoutMessageNamesCommandAndDeadline) {
  const absl::Status sent = CommandTimeoutError("EVALSHA", std::chrono::milliseconds(50));
  EXPECT_EQ(sent.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(sent.message(), "redis EVALSHA: timed out after 50ms");
  EXPECT_EQ(CommandTimeoutError("GET", std::chrono::milliseconds(7), false).message(),
            "redis GET: timed out after 7ms; never sent");
  const absl::Status lost = CommandLostError("SET", absl::UnavailableError("reset"));
  EXPECT_EQ(lost.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(lost.message(), HasSubstr("outcome unknown: reset"));
}

TEST(RedisError, CommandNameReadsTheFirstArgument) {
  EXPECT_EQ(CommandName(RedisCommand::Format({"EVALSHA", "abc", "1", "k"}).resp()), "EVALSHA");
  EXPECT_EQ(RedisCommand::Format({"PING"}).name(), "PING");
  EXPECT_EQ(CommandName(""), "command");
  EXPECT_EQ(CommandName("*1\r\n$10\r\nSHORT\r\n"), "command");
  EXPECT_EQ(CommandName("garbage"), "command");
}

TEST(RedisCommand, FormatsBinarySafeRespArrays) {
  EXPECT_EQ(RedisCommand::Format({"SET", "k", ""}).resp(),
            "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
  const std::string binary("a\0b", 3);
  EXPECT_EQ(RedisCommand::Format({"GET", binary}).resp(),
            std::string("*2\r\n$3\r\nGET\r\n$3\r\na\0b\r\n", 22));
  EXPECT_EQ(RedisCommand::Format(std::vector<std::string>{"PING"}).resp(), "*1\r\n$4\r\nPING\r\n");
  EXPECT_TRUE(RedisCommand::Format(std::vector<std::string>{}).empty());
}

}  // namespace
}  // namespace sluice
