#include "sluice/http/prometheus.h"

#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::http {
namespace {

using ::testing::HasSubstr;

constexpr MiddlewareStats kStats{.enabled = 10,
                                 .enforced = 3,
                                 .over_limit = 4,
                                 .ok = 6,
                                 .error = 2,
                                 .local_fallback = 1,
                                 .ambiguous_path = 18446744073709551615u};

TEST(PrometheusText, RendersEveryCounterWithHelpAndType) {
  EXPECT_EQ(PrometheusText(kStats),
            "# HELP sluice_http_enabled_total Requests at least one rate limit applied to.\n"
            "# TYPE sluice_http_enabled_total counter\n"
            "sluice_http_enabled_total 10\n"
            "# HELP sluice_http_enforced_total Requests the rate limiter rejected (429 or 503); "
            "never in dry run.\n"
            "# TYPE sluice_http_enforced_total counter\n"
            "sluice_http_enforced_total 3\n"
            "# HELP sluice_http_over_limit_total Requests over a rate limit, rejected or (dry "
            "run) not.\n"
            "# TYPE sluice_http_over_limit_total counter\n"
            "sluice_http_over_limit_total 4\n"
            "# HELP sluice_http_ok_total Requests within all their rate limits.\n"
            "# TYPE sluice_http_ok_total counter\n"
            "sluice_http_ok_total 6\n"
            "# HELP sluice_http_error_total Requests the store could not decide (a store error or "
            "a failure policy answer).\n"
            "# TYPE sluice_http_error_total counter\n"
            "sluice_http_error_total 2\n"
            "# HELP sluice_http_local_fallback_total Requests decided by the middleware's local "
            "limiter during a store error.\n"
            "# TYPE sluice_http_local_fallback_total counter\n"
            "sluice_http_local_fallback_total 1\n"
            "# HELP sluice_http_ambiguous_path_total Requests refused with 400 for a path a router "
            "could read two ways.\n"
            "# TYPE sluice_http_ambiguous_path_total counter\n"
            "sluice_http_ambiguous_path_total 18446744073709551615\n");
}

TEST(PrometheusText, UsesThePrefix) {
  const std::string text = PrometheusText({}, "shop_");
  EXPECT_THAT(text, HasSubstr("\nshop_over_limit_total 0\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE shop_enabled_total counter\n"));
  EXPECT_EQ(text.find("sluice_http_"), std::string::npos);
}

// Verifies that a prefix with characters a metric name may not hold still gives valid names.
TEST(PrometheusText, ReplacesCharactersANameMayNotHold) {
  const std::string text = PrometheusText({}, "9my-app.http ");
  EXPECT_THAT(text, HasSubstr("\n_my_app_http_ok_total 0\n"));
}

// Verifies the text as the exposition format (0.0.4) requires: every line is a HELP, a TYPE or
// a sample; a metric's HELP and TYPE come once each, before its sample; names match
// [a-zA-Z_:][a-zA-Z0-9_:]*; values are numbers; the text ends with a newline.
TEST(PrometheusText, ParsesAsTheTextFormat) {
  for (const std::string& text :
       {PrometheusText(kStats), PrometheusText({}, ""), PrometheusText(kStats, "a-b")}) {
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
    const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) [^\n\\]*)");
    const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|untyped))");
    const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*) ([0-9]+))");
    std::map<std::string, int> helps, types, samples;
    std::istringstream lines(text);
    std::string line;
    int count = 0;
    while (std::getline(lines, line)) {
      std::smatch m;
      if (std::regex_match(line, m, help)) {
        EXPECT_EQ(samples.count(m[1]), 0u) << line;
        ++helps[m[1]];
      } else if (std::regex_match(line, m, type)) {
        EXPECT_EQ(samples.count(m[1]), 0u) << line;
        EXPECT_EQ(m[2], "counter");
        ++types[m[1]];
      } else if (std::regex_match(line, m, sample)) {
        EXPECT_EQ(helps[m[1]], 1) << line;
        EXPECT_EQ(types[m[1]], 1) << line;
        EXPECT_TRUE(std::string(m[1]).ends_with("_total")) << line;
        ++samples[m[1]];
      } else {
        ADD_FAILURE() << "not a line of the text format: '" << line << "'";
      }
      ++count;
    }
    EXPECT_EQ(samples.size(), 7u);
    for (const auto& [name, n] : samples) EXPECT_EQ(n, 1) << name;
    EXPECT_EQ(count, 21);
  }
}

}  // namespace
}  // namespace sluice::http
