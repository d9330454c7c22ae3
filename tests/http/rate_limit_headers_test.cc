// Tests of the RateLimit, RateLimit-Policy and Retry-After formatting, against the examples of
// draft-ietf-httpapi-ratelimit-headers and the bounds of reliability.md T20.
#include "src/http/rate_limit_headers.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::http::internal {
namespace {

using std::chrono::microseconds;
using std::chrono::seconds;

TEST(RateLimitHeaders, PolicyMatchesTheDraftExample) {
  // RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400 (serialized with ", ").
  const std::vector<PolicyState> states = {
      {.name = "burst", .quota = 100, .window_seconds = 60},
      {.name = "daily", .quota = 1000, .window_seconds = 86400}};
  EXPECT_EQ(FormatRateLimitPolicy(states), R"("burst";q=100;w=60, "daily";q=1000;w=86400)");
  EXPECT_EQ(PolicyItem("burst", 100, 60), R"("burst";q=100;w=60)");
}

TEST(RateLimitHeaders, RateLimitMatchesTheDraftExample) {
  // RateLimit: "default";r=50;t=30
  const std::vector<PolicyState> one = {{.name = "default",
                                         .quota = 100,
                                         .window_seconds = 60,
                                         .remaining = 50,
                                         .reset_seconds = 30}};
  EXPECT_EQ(FormatRateLimit(one), R"("default";r=50;t=30)");
  const std::vector<PolicyState> two = {
      {.name = "burst", .quota = 100, .window_seconds = 60, .remaining = 50, .reset_seconds = 30},
      {.name = "daily",
       .quota = 1000,
       .window_seconds = 86400,
       .remaining = 0,
       .reset_seconds = 7200}};
  EXPECT_EQ(FormatRateLimit(two), R"("burst";r=50;t=30, "daily";r=0;t=7200)");
}

TEST(RateLimitHeaders, NeverWritesNegativeNumbers) {
  const std::vector<PolicyState> odd = {
      {.name = "p", .quota = 1, .window_seconds = 1, .remaining = -3, .reset_seconds = -1}};
  EXPECT_EQ(FormatRateLimit(odd), R"("p";r=0;t=0)");
}

// Verifies the presized writer at its bounds: a name that needs escaping, the largest integers.
TEST(RateLimitHeaders, RateLimitFitsEscapedNamesAndHugeNumbers) {
  const std::string quoted = SfString("q");
  const std::vector<PolicyState> states = {
      {.name = "a\"\\b", .remaining = INT64_MAX, .reset_seconds = INT64_MAX},
      {.name = "q", .quoted_name = quoted, .remaining = 0, .reset_seconds = 0}};
  EXPECT_EQ(FormatRateLimit(states),
            R"("a\"\\b";r=9223372036854775807;t=9223372036854775807, "q";r=0;t=0)");
  EXPECT_EQ(FormatRateLimit({}), "");
}

TEST(RateLimitHeaders, EscapesSfStrings) {
  EXPECT_EQ(SfString("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(SfString("tab\there\x7f"), R"("tab?here?")");
  EXPECT_EQ(SfString(""), R"("")");
}

TEST(RetryAfter, RoundsUpToWholeSeconds) {
  EXPECT_EQ(CeilSeconds(microseconds(0)), 0);
  EXPECT_EQ(CeilSeconds(microseconds(1)), 1);
  EXPECT_EQ(CeilSeconds(microseconds(999'999)), 1);
  EXPECT_EQ(CeilSeconds(microseconds(1'000'000)), 1);
  EXPECT_EQ(CeilSeconds(microseconds(1'000'001)), 2);
  EXPECT_EQ(CeilSeconds(microseconds(-5)), 0);
}

TEST(RetryAfter, IsAtLeastOneAndAtMostTheWindow) {
  EXPECT_EQ(RetryAfterSeconds(microseconds(0), {60, 60}), 1);
  EXPECT_EQ(RetryAfterSeconds(microseconds(1), {60, 60}), 1);
  EXPECT_EQ(RetryAfterSeconds(microseconds(999'999), {60, 60}), 1);
  EXPECT_EQ(RetryAfterSeconds(microseconds(1'000'001), {60, 60}), 2);
  EXPECT_EQ(RetryAfterSeconds(seconds(59) + microseconds(1), {60, 60}), 60);
  EXPECT_EQ(RetryAfterSeconds(seconds(60), {60, 60}), 60);
  EXPECT_EQ(RetryAfterSeconds(seconds(61), {60, 60}), 60);
  // A cost above the capacity can never pass: the window, not 0 or -1.
  EXPECT_EQ(RetryAfterSeconds(Decision::kNever, {60, 60}), 60);
  EXPECT_EQ(RetryAfterSeconds(microseconds(5), {0, 0}), 1);
}

TEST(RetryAfter, SlidingWindowWaitsUpToItsHorizon) {
  // A sliding window of 60 s remembers the previous window: waits of up to 120 s are exact.
  const PolicyWindow sliding{.window_seconds = 60, .horizon_seconds = 120};
  EXPECT_EQ(RetryAfterSeconds(seconds(100) + microseconds(1), sliding), 101);
  EXPECT_EQ(RetryAfterSeconds(seconds(500), sliding), 120);
  EXPECT_EQ(RetryAfterSeconds(Decision::kNever, sliding), 60);
}

TEST(RetryAfter, ResetOfADeniedPolicyIsItsRetryAfter) {
  // So that Retry-After never names a time before the refusing policy's reset.
  const Decision denied{.allowed = false,
                        .limit = 10,
                        .remaining = 0,
                        .reset_after = seconds(50),
                        .retry_after = microseconds(2'500'000)};
  EXPECT_EQ(ResetSeconds(denied, {60, 60}), 3);
  const Decision allowed{
      .allowed = true, .limit = 10, .remaining = 4, .reset_after = microseconds(29'000'001)};
  EXPECT_EQ(ResetSeconds(allowed, {60, 60}), 30);
  const Decision stale{.allowed = true, .limit = 10, .remaining = 4, .reset_after = seconds(120)};
  EXPECT_EQ(ResetSeconds(stale, {60, 60}), 60);
}

TEST(MostConstrained, PicksLowestRemainingThenLongestWait) {
  const std::vector<PolicyState> states = {{.name = "a", .remaining = 5, .reset_seconds = 10},
                                           {.name = "b", .remaining = 0, .reset_seconds = 3},
                                           {.name = "c", .remaining = 0, .reset_seconds = 30}};
  EXPECT_EQ(MostConstrained(states), 2u);
  EXPECT_EQ(MostConstrained(std::span<const PolicyState>(states).first(1)), 0u);
}

}  // namespace
}  // namespace sluice::http::internal
