// Property test of Retry-After (reliability.md T20) over random rules and request sequences, on
// the memory store with a manual clock: on every rejection Retry-After is an integer >= 1, at most
// the horizon of a refusing policy (its window; two for the sliding window), equal to the `t` of
// the refusing policy with the longest wait and to X-RateLimit-Reset, and waiting it out admits
// the request.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/http/middleware.h"
#include "sluice/memory_store.h"

#include "src/http/spec_validation.h"
#include "tests/http/http_test_util.h"
#include "tests/testing/manual_clock.h"

namespace sluice::http {
namespace {

using ::sluice::http::testing::Send;
using ::sluice::http::testing::TestRequest;
using std::chrono::microseconds;
using std::chrono::seconds;

constexpr int64_t kPeriods[] = {1, 2, 5, 10, 60, 3600};
constexpr Algorithm kAlgorithms[] = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                     Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                     Algorithm::kGcra};

struct Scenario {
  MiddlewareSpec spec;
  // Horizon of each policy, by name.
  std::vector<std::pair<std::string, int64_t>> policies;
};

Scenario RandomScenario(std::mt19937_64& rng) {
  Scenario s;
  s.spec.response.legacy_headers = true;
  auto random_limit = [&](int index, bool global) {
    Limit limit{.algorithm = kAlgorithms[rng() % 5],
                .limit = static_cast<int64_t>(1 + rng() % 12),
                .period = seconds(kPeriods[rng() % 6])};
    if (limit.algorithm == Algorithm::kTokenBucket || limit.algorithm == Algorithm::kGcra) {
      if (rng() % 2 == 0) limit.burst = static_cast<int64_t>(1 + rng() % (3 * limit.limit));
    }
    const std::string name = absl::StrCat(global ? "g" : "r", index);
    s.policies.push_back({name, internal::PolicyHorizonSeconds(limit)});
    return PolicySpec{.name = name, .limit = limit};
  };
  if (rng() % 2 == 0) {
    s.spec.global = RuleSpec{.tiers = {{.tier = "*", .limits = {random_limit(0, true)}}}};
  }
  RuleSpec route{.name = "r", .path = "/r", .tiers = {{.tier = "*", .limits = {}}}};
  const int count = 1 + static_cast<int>(rng() % 3);
  int64_t capacity = kMaxLimit;
  for (int i = 0; i < count; ++i) {
    route.tiers[0].limits.push_back(random_limit(i, false));
    capacity = std::min(capacity, route.tiers[0].limits.back().limit.Capacity());
  }
  // Costs up to the smallest capacity, so that every request can pass some day.
  route.cost = 1 + static_cast<int64_t>(rng() % std::min<int64_t>(capacity, 3));
  s.spec.routes.push_back(std::move(route));
  return s;
}

// Parses a RateLimit field value: "name" -> (r, t).
std::map<std::string, std::pair<int64_t, int64_t>> ParseRateLimit(std::string_view value) {
  std::map<std::string, std::pair<int64_t, int64_t>> items;
  while (!value.empty()) {
    const size_t close = value.find('"', 1);
    const std::string name(value.substr(1, close - 1));
    const size_t r = value.find(";r=", close);
    const size_t t = value.find(";t=", close);
    const size_t end = std::min(value.find(", ", close), value.size());
    int64_t remaining = -1;
    int64_t reset = -1;
    std::from_chars(value.data() + r + 3, value.data() + t, remaining);
    std::from_chars(value.data() + t + 3, value.data() + end, reset);
    items[name] = {remaining, reset};
    value.remove_prefix(std::min(end + 2, value.size()));
  }
  return items;
}

int64_t Integer(const std::string* text) {
  int64_t value = -1;
  if (text == nullptr) return -1;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  return ec == std::errc() && end == text->data() + text->size() ? value : -1;
}

TEST(RetryAfterProperty, BoundedConsistentAndSufficientOverRandomSequences) {
  std::mt19937_64 rng(0x5eed);
  int rejections = 0;
  int waited_out = 0;
  for (int round = 0; round < 400; ++round) {
    Scenario scenario = RandomScenario(rng);
    sluice::testing::ManualClock clock(seconds(1'700'000'000) +
                                       microseconds(rng() % 10'000'000'000));
    std::unique_ptr<MemoryStore> store = MemoryStore::Create({.clock = &clock}).value();
    absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
        MiddlewareConfig::Create(scenario.spec);
    ASSERT_TRUE(config.ok()) << config.status();
    std::unique_ptr<Middleware> middleware =
        Middleware::Create({.store = store.get(), .config = *config, .clock = &clock}).value();
    const int64_t max_period =
        std::chrono::duration_cast<seconds>(scenario.spec.routes[0].tiers[0].limits[0].limit.period)
            .count();
    for (int step = 0; step < 250; ++step) {
      // Mostly bursts, sometimes long pauses.
      const int64_t pause_us = rng() % 4 == 0
                                   ? static_cast<int64_t>(rng() % (max_period * 1'500'000))
                                   : static_cast<int64_t>(rng() % 200'000);
      clock.Advance(microseconds(pause_us));
      const Verdict verdict = Send(*middleware, TestRequest{.path = "/r"});
      if (verdict.passed()) continue;
      ++rejections;
      ASSERT_EQ(verdict.status, 429);
      const int64_t retry_after = Integer(verdict.FindHeader("Retry-After"));
      ASSERT_GE(retry_after, 1) << "round " << round << " step " << step;
      EXPECT_EQ(Integer(verdict.FindHeader("X-RateLimit-Reset")), retry_after)
          << *verdict.FindHeader("RateLimit-Policy") << " | " << *verdict.FindHeader("RateLimit")
          << " | " << verdict.body << " cost " << scenario.spec.routes[0].cost;
      // Each refusing policy's t (its own wait) is in [1, horizon]; Retry-After is the longest.
      const std::map<std::string, std::pair<int64_t, int64_t>> items =
          ParseRateLimit(*verdict.FindHeader("RateLimit"));
      int64_t longest = 0;
      for (const auto& [name, horizon] : scenario.policies) {
        if (verdict.body.find(absl::StrCat("\"", name, "\"")) == std::string::npos) continue;
        ASSERT_TRUE(items.contains(name)) << *verdict.FindHeader("RateLimit");
        const int64_t t = items.at(name).second;
        ASSERT_GE(t, 1);
        ASSERT_LE(t, horizon) << name;
        longest = std::max(longest, t);
      }
      ASSERT_EQ(retry_after, longest) << verdict.body;
      if (rng() % 2 != 0) continue;
      // Wait exactly Retry-After: the request passes.
      clock.Advance(seconds(retry_after));
      ++waited_out;
      const Verdict again = Send(*middleware, TestRequest{.path = "/r"});
      ASSERT_TRUE(again.passed()) << "round " << round << " step " << step
                                  << "\nfirst: " << *verdict.FindHeader("RateLimit") << " "
                                  << verdict.body << "\nagain: " << again.body;
    }
  }
  // The sequences must actually exercise rejections.
  EXPECT_GT(rejections, 20'000);
  EXPECT_GT(waited_out, 10'000);
  RecordProperty("rejections", rejections);
}

}  // namespace
}  // namespace sluice::http
