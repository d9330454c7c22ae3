#include "src/server/grpc/h2/grpc_framing.h"

#include <chrono>
#include <string>

#include "gtest/gtest.h"

namespace sluice::server::h2 {
namespace {

using std::string_literals::operator""s;

TEST(GrpcFraming, FramedMessageHasTheFlagAndBigEndianLength) {
  EXPECT_EQ(FramedMessage("ab"),
            "\0\0\0\0\x02"s
            "ab");
  EXPECT_EQ(FramedMessage(std::string(0x10203, 'x')).substr(0, 5), "\0\0\x01\x02\x03"s);
  EXPECT_EQ(DeclaredMessageLength("\0\0\x01\x02"s), std::nullopt);
  EXPECT_EQ(DeclaredMessageLength("\0\x01\0\0\0"s), 1u << 24);
}

TEST(GrpcFraming, UnaryMessageTakesExactlyOneMessage) {
  EXPECT_EQ(*UnaryMessage(FramedMessage("hello"), 100), "hello");
  EXPECT_EQ(*UnaryMessage(FramedMessage(""), 100), "");
  EXPECT_EQ(UnaryMessage("", 100).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(UnaryMessage("\0\0\0"s, 100).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(UnaryMessage(FramedMessage("hello").substr(0, 8), 100).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(UnaryMessage(FramedMessage("a") + FramedMessage("b"), 100).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(UnaryMessage("\x01\0\0\0\x01x"s, 100).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(UnaryMessage(FramedMessage(std::string(101, 'x')), 100).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(GrpcFraming, GrpcTimeoutUnits) {
  using namespace std::chrono_literals;
  EXPECT_EQ(ParseGrpcTimeout("2H"), 2h);
  EXPECT_EQ(ParseGrpcTimeout("3M"), 3min);
  EXPECT_EQ(ParseGrpcTimeout("10S"), std::chrono::seconds(10));
  EXPECT_EQ(ParseGrpcTimeout("250m"), 250ms);
  EXPECT_EQ(ParseGrpcTimeout("7u"), 7us);
  EXPECT_EQ(ParseGrpcTimeout("99999999n"), 99999999ns);
  for (const char* bad : {"", "S", "123456789S", "10s", "1.5S", "-1S", "10"}) {
    EXPECT_EQ(ParseGrpcTimeout(bad), std::nullopt) << bad;
  }
}

TEST(GrpcFraming, GrpcMessageIsPercentEncoded) {
  EXPECT_EQ(PercentEncodeGrpcMessage("plain text: ok"), "plain text: ok");
  EXPECT_EQ(PercentEncodeGrpcMessage("50% na\xc3\xafve\n"), "50%25 na%C3%AFve%0A");
}

TEST(GrpcFraming, HealthMessages) {
  EXPECT_EQ(*HealthCheckService(""), "");
  EXPECT_EQ(*HealthCheckService("\x0a\x09ratelimit"), "ratelimit");
  // Unknown fields of every wire type are skipped.
  EXPECT_EQ(*HealthCheckService("\x10\x96\x01\x19"
                                "12345678\x0a\x01x\x25"
                                "1234"),
            "x");
  for (const std::string& bad : {"\x0a\x09ratelim"s, "\x0a"s, "\x08"s, "\x0b"s, "\x00\x01"s}) {
    EXPECT_EQ(HealthCheckService(bad).status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(HealthCheckResponse(ServingStatus::kServing), "\x08\x01");
  EXPECT_EQ(HealthCheckResponse(ServingStatus::kNotServing), "\x08\x02");
}

}  // namespace
}  // namespace sluice::server::h2
