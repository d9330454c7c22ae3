#include "src/store/redis/client/redis_reply_reader.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <malloc.h>

namespace sluice {
namespace {

// Bytes of heap in use (glibc: in the arenas plus mmapped blocks), to bound what the reader holds.
// Sanitizer builds have their own allocator and may report nothing, which only weakens the test.
size_t HeapBytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

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
  for (const std::string wire : {"*999999999\r\n", "*65537\r\n", "*1\r\n*2\r\n:1\r\n*65537\r\n"}) {
    RedisReplyReader reader;
    ASSERT_TRUE(reader.Feed(wire).ok());
    absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
    ASSERT_FALSE(next.ok()) << wire;
    EXPECT_EQ(next.status().code(), absl::StatusCode::kInternal) << wire;
    EXPECT_THAT(std::string(next.status().message()),
                ::testing::MatchesRegex("redis: protocol error: array of [0-9]+ elements is "
                                        "longer than the limit of 65536"))
        << wire;
    EXPECT_FALSE(reader.Feed("+OK\r\n").ok());
  }
}

// Verifies the boundary pair: an array of exactly kMaxArrayElements is read, one more is refused.
TEST(RedisReplyReader, ReadsAnArrayAtTheLimit) {
  static_assert(RedisReplyReader::kMaxArrayElements == 65536);
  std::string wire = "*65536\r\n";
  for (int i = 0; i < 65536; ++i) wire += ":" + std::to_string(i % 10) + "\r\n";
  RedisReplyReader reader;
  std::vector<RedisReply> replies = ParseAll(reader, wire);
  ASSERT_EQ(replies.size(), 1u);
  ASSERT_EQ(replies[0].elements().size(), 65536u);
  EXPECT_EQ(replies[0].elements()[65535], RedisReply::Integer(65535 % 10));
}

// Regression: CreateArray sized every array to its announced length before any element came, so
// the 8 bytes "*65536\r\n" allocated 4.7 MB (75 MB at the old limit of 2^20, and up to seven
// times that when nested). An announced length now reserves at most kMaxReservedElements and
// the reply waits, without error, for elements that may never come.
TEST(RedisReplyReader, AnnouncedLengthAllocatesNothingUntilElementsArrive) {
  // Three reservations, and generous room for the test's own allocations; a full-size array
  // would take 4.7 MB.
  constexpr size_t kBound =
      size_t{3} * RedisReplyReader::kMaxReservedElements * sizeof(RedisReply) + (64 << 10);
  RedisReplyReader reader;
  const size_t before = HeapBytesInUse();
  ASSERT_TRUE(reader.Feed("*65536\r\n:1\r\n*65536\r\n*65536\r\n").ok());
  absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
  const size_t after = HeapBytesInUse();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value());
  EXPECT_LE(after - std::min(after, before), kBound);
}

// Verifies that arrays longer than the initial reservation grow without disturbing what they
// hold: finished nested arrays move when their parent reallocates, and the array being filled,
// here the last element of a parent that is already past its reservation, does not.
TEST(RedisReplyReader, KeepsNestedArraysIntactWhileArraysGrow) {
  constexpr int kLong = RedisReplyReader::kMaxReservedElements * 2 + 1;
  std::string wire = "*" + std::to_string(kLong + 1) + "\r\n";
  for (int i = 0; i < kLong; ++i) wire += "*2\r\n:" + std::to_string(i) + "\r\n$1\r\nx\r\n";
  wire += "*" + std::to_string(kLong) + "\r\n";
  for (int i = 0; i < kLong; ++i) wire += ":" + std::to_string(i) + "\r\n";
  RedisReplyReader reader;
  std::vector<RedisReply> replies = ParseAll(reader, wire);
  ASSERT_EQ(replies.size(), 1u);
  const std::vector<RedisReply>& outer = replies[0].elements();
  ASSERT_EQ(outer.size(), static_cast<size_t>(kLong + 1));
  for (int i = 0; i < kLong; ++i) {
    ASSERT_EQ(outer[i].DebugString(), "[" + std::to_string(i) + ", \"x\"]") << i;
  }
  const std::vector<RedisReply>& last = outer[kLong].elements();
  ASSERT_EQ(last.size(), static_cast<size_t>(kLong));
  for (int i = 0; i < kLong; ++i) ASSERT_EQ(last[i], RedisReply::Integer(i)) << i;
}

// Feeds `wire` in `chunk`-byte pieces, draining replies after each, as a connection does; returns
// the first error, or OK with the replies.
absl::StatusOr<std::vector<RedisReply>> FeedInChunks(RedisReplyReader& reader,
                                                     std::string_view wire, size_t chunk) {
  std::vector<RedisReply> out;
  for (size_t at = 0; at < wire.size(); at += chunk) {
    if (absl::Status fed = reader.Feed(wire.substr(at, chunk)); !fed.ok()) return fed;
    while (true) {
      absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) break;
      out.push_back(**std::move(next));
    }
  }
  return out;
}

// Verifies issue 13's attack: a server announcing a 3 GB bulk string is refused as soon as the
// header arrives, before anything of it is buffered, and the reader stays failed.
TEST(RedisReplyReader, RefusesABulkStringAnnouncedOverTheCapBeforeBufferingIt) {
  RedisReplyReader reader;
  const size_t before = HeapBytesInUse();
  ASSERT_TRUE(reader.Feed("$3000000000\r\n" + std::string(60'000, 'x')).ok());
  absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
  const size_t after = HeapBytesInUse();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(next.status().message(),
            "redis: protocol error: bulk string of 3000000000 bytes is longer than the limit of "
            "67108864");
  EXPECT_LE(after - std::min(after, before), size_t{1} << 20);
  EXPECT_FALSE(reader.Feed("+OK\r\n").ok());
  EXPECT_FALSE(reader.Next().ok());
}

// Verifies the boundary pair: a bulk string of exactly max_bulk_bytes is read, one byte more is
// refused, at the top level and inside an array.
TEST(RedisReplyReader, ReadsABulkStringAtTheCapAndRefusesOneByteMore) {
  const RedisReplyLimits limits{.max_bulk_bytes = 1024, .max_reply_bytes = 1 << 20};
  {
    RedisReplyReader reader(limits);
    absl::StatusOr<std::vector<RedisReply>> replies =
        FeedInChunks(reader, "$1024\r\n" + std::string(1024, 'a') + "\r\n", 100);
    ASSERT_TRUE(replies.ok()) << replies.status();
    ASSERT_EQ(replies->size(), 1u);
    EXPECT_EQ((*replies)[0].str().size(), 1024u);
  }
  for (const std::string wire : {"$1025\r\n", "*2\r\n$1\r\nx\r\n$1025\r\n"}) {
    RedisReplyReader reader(limits);
    absl::StatusOr<std::vector<RedisReply>> replies =
        FeedInChunks(reader, wire + std::string(1025, 'a') + "\r\n", 7);
    ASSERT_FALSE(replies.ok()) << wire;
    EXPECT_THAT(replies.status().message(),
                ::testing::HasSubstr("bulk string of 1025 bytes is longer than the limit of 1024"))
        << wire;
  }
}

TEST(RedisReplyReader, RefusesAStatusLineLongerThanTheBulkCap) {
  RedisReplyReader reader({.max_bulk_bytes = 1024, .max_reply_bytes = 1 << 20});
  absl::StatusOr<std::vector<RedisReply>> replies =
      FeedInChunks(reader, "+" + std::string(2000, 'a'), 100);
  ASSERT_FALSE(replies.ok());
  EXPECT_THAT(replies.status().message(),
              ::testing::HasSubstr("line of more than 1024 bytes without an end"));
}

// Verifies the aggregate cap: many small strings, each under the bulk cap, add up past the reply
// cap, whether they arrive in one piece or trickle in.
TEST(RedisReplyReader, RefusesAReplyWhoseElementsAddUpPastTheReplyCap) {
  const RedisReplyLimits limits{.max_bulk_bytes = 1024, .max_reply_bytes = 64 << 10};
  std::string wire = "*2000\r\n";
  for (int i = 0; i < 2000; ++i) wire += "$100\r\n" + std::string(100, 'v') + "\r\n";
  for (size_t chunk : {wire.size(), size_t{4096}, size_t{13}}) {
    RedisReplyReader reader(limits);
    absl::StatusOr<std::vector<RedisReply>> replies = FeedInChunks(reader, wire, chunk);
    ASSERT_FALSE(replies.ok()) << chunk;
    EXPECT_THAT(replies.status().message(),
                ::testing::HasSubstr("reply larger than the limit of 65536 bytes"))
        << chunk;
  }
}

// Verifies the cap is per reply: consecutive replies just under it are all read.
TEST(RedisReplyReader, ReplyCapCountsEachReplyOnItsOwn) {
  RedisReplyReader reader({.max_bulk_bytes = 4096, .max_reply_bytes = 4096});
  std::string wire;
  for (int i = 0; i < 50; ++i) wire += "$3000\r\n" + std::string(3000, 'z') + "\r\n";
  absl::StatusOr<std::vector<RedisReply>> replies = FeedInChunks(reader, wire, 1000);
  ASSERT_TRUE(replies.ok()) << replies.status();
  EXPECT_EQ(replies->size(), 50u);
  EXPECT_FALSE(reader.mid_reply());
  EXPECT_EQ(reader.pending_bytes(), 0u);
}

TEST(RedisReplyReader, ReportsAReplyInProgress) {
  RedisReplyReader reader;
  EXPECT_FALSE(reader.mid_reply());
  absl::StatusOr<std::vector<RedisReply>> replies =
      FeedInChunks(reader, "*2\r\n:1\r\n$5\r\nab", 64);
  ASSERT_TRUE(replies.ok());
  EXPECT_TRUE(replies->empty());
  EXPECT_TRUE(reader.mid_reply());
  EXPECT_GT(reader.pending_bytes(), 0u);
  replies = FeedInChunks(reader, "cde\r\n", 64);
  ASSERT_TRUE(replies.ok());
  ASSERT_EQ(replies->size(), 1u);
  EXPECT_FALSE(reader.mid_reply());
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
