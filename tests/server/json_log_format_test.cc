#include "src/server/json_log_format.h"

#include <string>

#include "boost/json/parse.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/details/log_msg.h"

namespace sluice::server {
namespace {

TEST(JsonLogFormatter, WritesOneValidObjectWithTheReferencesKeys) {
  JsonLogFormatter formatter;
  spdlog::details::log_msg msg("sluiced", spdlog::level::warn, "a \"quoted\"\nline\\ \x01");
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  const std::string line(out.data(), out.size());
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  boost::system::error_code error;
  const boost::json::value v = boost::json::parse(line, error);
  ASSERT_FALSE(error) << line;
  EXPECT_EQ(v.at("level").as_string(), "warning");
  EXPECT_EQ(v.at("@message").as_string(), "a \"quoted\"\nline\\ \x01");
  EXPECT_THAT(std::string(v.at("@timestamp").as_string()),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{9}Z"));
}

}  // namespace
}  // namespace sluice::server
