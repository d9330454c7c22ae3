#include "src/store/redis/redis_reply_reader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

std::vector<RedisReply> ParseAll(RedisReplyReader& reader, std::string_view bytes) {
  EXPECT_TRUE(reader.Feed(bytes).ok());
  std::vector<RedisReply> out;
  while (true) {
    absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(**std::move(next));
  }
  return out;
}

TEST(RedisReplyReader, ParsesEveryType) {
  RedisReplyReader reader;
  std::vector<RedisReply> replies =
      ParseAll(reader, "+OK\r\n-ERR bad\r\n:-42\r\n$5\r\nhello\r\n$-1\r\n*-1\r\n*0\r\n$0\r\n\r\n");
  ASSERT_EQ(replies.size(), 8u);
  EXPECT_EQ(replies[0], RedisReply::Status("OK"));
  EXPECT_EQ(replies[1], RedisReply::Error("ERR bad"));
  EXPECT_EQ(replies[2], RedisReply::Integer(-42));
  EXPECT_EQ(replies[3], RedisReply::String("hello"));
  EXPECT_TRUE(replies[4].is_nil());
  EXPECT_TRUE(replies[5].is_nil());
  EXPECT_EQ(replies[6], RedisReply::Array({}));
  EXPECT_EQ(replies[7], RedisReply::String(""));
}

TEST(RedisReplyReader, ParsesNestedArrays) {
  RedisReplyReader reader;
  std::vector<RedisReply> replies =
      ParseAll(reader, "*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n-NOSCRIPT x\r\n");
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].DebugString(), "[1, [\"a\", nil], -NOSCRIPT x]");
}

// Verifies that a reply split at every possible byte boundary is assembled correctly, and that
// the reader keeps no state from one reply in the next.
TEST(RedisReplyReader, AssemblesRepliesFedByteByByte) {
  const std::string wire = "*2\r\n$3\r\nfoo\r\n*1\r\n:7\r\n+PONG\r\n";
  RedisReplyReader reader;
  std::vector<RedisReply> replies;
  for (char c : wire) {
    ASSERT_TRUE(reader.Feed(std::string_view(&c, 1)).ok());
    while (true) {
      absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      replies.push_back(**std::move(next));
    }
  }
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].DebugString(), "[\"foo\", [7]]");
  EXPECT_EQ(replies[1], RedisReply::Status("PONG"));
}

TEST(RedisReplyReader, KeepsBinaryData) {
  RedisReplyReader reader;
  std::vector<RedisReply> replies = ParseAll(reader, std::string("$4\r\na\0\r\n\r\n", 10));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].str(), std::string("a\0\r\n", 4));
}

TEST(RedisReplyReader, ParsesManyRepliesFromOneBuffer) {
  std::string wire;
  for (int i = 0; i < 5000; ++i) wire += ":" + std::to_string(i) + "\r\n";
  RedisReplyReader reader;
  std::vector<RedisReply> replies = ParseAll(reader, wire);
  ASSERT_EQ(replies.size(), 5000u);
  for (int i = 0; i < 5000; ++i) EXPECT_EQ(replies[i].integer(), i);
}

TEST(RedisReplyReader, RejectsProtocolErrors) {
  RedisReplyReader reader;
  ASSERT_TRUE(reader.Feed("!oops\r\n").ok());
  absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(next.status().message(), ::testing::HasSubstr("protocol error"));
  // The reader stays failed.
  EXPECT_FALSE(reader.Feed("+OK\r\n").ok());
}

TEST(RedisReplyReader, RefusesOversizedArrays) {
  RedisReplyReader reader;
  ASSERT_TRUE(reader.Feed("*999999999\r\n").ok());
  absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
  ASSERT_FALSE(next.ok());
  EXPECT_THAT(next.status().message(), ::testing::HasSubstr("array longer than the limit"));
}

TEST(RedisReply, TypedAccessorsReportTheActualType) {
  EXPECT_EQ(*RedisReply::Integer(5).AsInteger(), 5);
  EXPECT_EQ(*RedisReply::Status("OK").AsString(), "OK");
  absl::StatusOr<int64_t> wrong = RedisReply::Error("ERR boom").AsInteger();
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(wrong.status().message(), "redis reply: expected integer, got error: ERR boom");
  EXPECT_FALSE(RedisReply::Nil().AsArray().ok());
  EXPECT_EQ(RedisReply::Array({RedisReply::Integer(1)}).AsArray()->size(), 1u);
}

}  // namespace
}  // namespace sluice
