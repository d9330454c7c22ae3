// JsonLogFormatter (src/server/json_log_format.h): the reference's LOG_FORMAT=json lines.
#include "src/server/stats/json_log_format.h"

#include <chrono>
#include <optional>
#include <string>

#include "boost/json/parse.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/details/log_msg.h"

namespace sluice::server {
namespace {

// Formats one message; fails the test when the line is not a single JSON object.
boost::json::object Format(spdlog::level::level_enum level, std::string_view text,
                           std::optional<spdlog::log_clock::time_point> time = std::nullopt) {
  JsonLogFormatter formatter;
  spdlog::details::log_msg msg("sluiced", level, spdlog::string_view_t(text.data(), text.size()));
  if (time.has_value()) msg.time = *time;
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  const std::string line(out.data(), out.size());
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line per message: " << line;
  boost::system::error_code error;
  boost::json::value v = boost::json::parse(line, error);
  EXPECT_FALSE(error) << line;
  if (error || !v.is_object()) return {};
  return v.as_object();
}

TEST(JsonLogFormatter, WritesOneValidObjectWithTheReferencesKeys) {
  boost::json::object o = Format(spdlog::level::warn, "a \"quoted\"\nline\\ \x01");
  EXPECT_EQ(o.at("level").as_string(), "warning");
  EXPECT_EQ(o.at("@message").as_string(), "a \"quoted\"\nline\\ \x01");
  EXPECT_THAT(std::string(o.at("@timestamp").as_string()),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}(\\.[0-9]{1,9})?Z"));
}

TEST(JsonLogFormatter, LevelsCarryLogrusNames) {
  EXPECT_EQ(Format(spdlog::level::trace, "m").at("level").as_string(), "trace");
  EXPECT_EQ(Format(spdlog::level::debug, "m").at("level").as_string(), "debug");
  EXPECT_EQ(Format(spdlog::level::info, "m").at("level").as_string(), "info");
  EXPECT_EQ(Format(spdlog::level::err, "m").at("level").as_string(), "error");
  EXPECT_EQ(Format(spdlog::level::critical, "m").at("level").as_string(), "fatal");
}

// Verifies the timestamp is Go's RFC3339Nano, as the reference prints it: the fraction without
// trailing zeros, and no fraction at all on a whole second.
TEST(JsonLogFormatter, TimestampIsRfc3339NanoInUtc) {
  const spdlog::log_clock::time_point second{std::chrono::seconds(1'796'292'000)};
  EXPECT_EQ(Format(spdlog::level::info, "m", second).at("@timestamp").as_string(),
            "2026-12-03T10:00:00Z");
  EXPECT_EQ(Format(spdlog::level::info, "m",
                   second + std::chrono::duration_cast<spdlog::log_clock::duration>(
                                std::chrono::milliseconds(120)))
                .at("@timestamp")
                .as_string(),
            "2026-12-03T10:00:00.12Z");
}

// Verifies a message carrying bytes that are not UTF-8 (a descriptor value echoed in a log line)
// still makes a valid JSON line: each bad byte becomes U+FFFD, valid multibyte text is kept.
TEST(JsonLogFormatter, InvalidUtf8BecomesReplacementCharacters) {
  boost::json::object o =
      Format(spdlog::level::info, "caf\xc3\xa9 \xff\xfe ok \xe2\x82 \xed\xa0\x80 \xf0\x9f\x98\x80");
  EXPECT_EQ(o.at("@message").as_string(),
            "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd ok \xef\xbf\xbd\xef\xbf\xbd "
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80");
}

}  // namespace
}  // namespace sluice::server
