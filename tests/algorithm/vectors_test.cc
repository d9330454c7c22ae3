// Replays tests/vectors/*.json (worked examples of docs/algorithms.md) through the C++ algorithms
// (credit steps through Credit*()), and tests/vectors/lease/*.json through their leases
// (src/algorithm/lease.h).
// tests/store/redis/lua_vectors_test.cc replays the same files through the Lua scripts.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/lease.h"
#include "tests/algorithm/algorithm_testing.h"
#include "tests/testing/test_vectors.h"

namespace sluice::algorithm {
namespace {

using ::sluice::testing::LoadAllVectors;
using ::sluice::testing::LoadLeaseVectors;
using ::sluice::testing::LoadLeaseVectorsFromDirectory;
using ::sluice::testing::LoadVectorsFromDirectory;
using ::sluice::testing::VectorCase;
using ::sluice::testing::VectorStep;
using ::testing::HasSubstr;

// The message as a std::string, so that gtest prints it as text.
std::string MessageOf(const absl::Status& status) { return std::string(status.message()); }

// Runs every step of `c` against one state of the case's algorithm (a credit step through its
// Credit*() function); returns the decisions.
std::vector<Decision> ReplayCase(const VectorCase& c) {
  std::vector<Decision> out;
  const auto run = [&](auto state, auto decide, auto credit) {
    for (const VectorStep& step : c.steps) {
      out.push_back(step.credit ? credit(c.limit, state, step.now_us, step.cost)
                                : decide(c.limit, state, step.now_us, step.cost));
    }
  };
  switch (c.limit.algorithm) {
    case Algorithm::kFixedWindow:
      run(FixedWindowState{}, &DecideFixedWindow, &CreditFixedWindow);
      break;
    case Algorithm::kSlidingWindow:
      run(SlidingWindowState{}, &DecideSlidingWindow, &CreditSlidingWindow);
      break;
    case Algorithm::kSlidingLog:
      run(SlidingLogState{}, &DecideSlidingLog, &CreditSlidingLog);
      break;
    case Algorithm::kTokenBucket:
      run(TokenBucketState{}, &DecideTokenBucket, &CreditTokenBucket);
      break;
    case Algorithm::kGcra:
      run(GcraState{}, &DecideGcra, &CreditGcra);
      break;
  }
  return out;
}

// What one step of a lease vector gave: the decision (checks), the grant (leasing checks) and the
// units given back (refunds).
struct LeaseStepResult {
  Decision decision;
  int64_t granted = 0;
  int64_t ends_us = 0;
  int64_t refunded = 0;
};

// Runs every step of the lease vector `c` against one state of its algorithm.
std::vector<LeaseStepResult> ReplayLeaseCase(const VectorCase& c) {
  std::vector<LeaseStepResult> out;
  const auto run = [&](auto state, auto decide, auto lease, auto refund, auto credit) {
    for (const VectorStep& step : c.steps) {
      LeaseStepResult r;
      if (step.credit) {
        r.decision = credit(c.limit, state, step.now_us, step.cost);
      } else if (step.refund.has_value()) {
        r.refunded =
            refund(c.limit, state, step.now_us,
                   GrantedLease{.ends_us = step.refund->ends_us, .granted = step.refund->granted},
                   step.refund->unspent);
      } else if (step.lease.has_value()) {
        const LeaseDecision d =
            lease(c.limit, state, step.now_us, step.cost, step.lease->want, step.lease->ttl_us);
        r.decision = d.decision;
        r.granted = d.granted;
        r.ends_us = d.ends_us;
      } else {
        r.decision = decide(c.limit, state, step.now_us, step.cost);
      }
      out.push_back(r);
    }
  };
  switch (c.limit.algorithm) {
    case Algorithm::kFixedWindow:
      run(FixedWindowState{}, &DecideFixedWindow, &LeaseFixedWindow, &RefundFixedWindow,
          &CreditFixedWindow);
      break;
    case Algorithm::kSlidingWindow:
      run(SlidingWindowState{}, &DecideSlidingWindow, &LeaseSlidingWindow, &RefundSlidingWindow,
          &CreditSlidingWindow);
      break;
    case Algorithm::kSlidingLog:
      run(SlidingLogState{}, &DecideSlidingLog, &LeaseSlidingLog, &RefundSlidingLog,
          &CreditSlidingLog);
      break;
    case Algorithm::kTokenBucket:
      run(TokenBucketState{}, &DecideTokenBucket, &LeaseTokenBucket, &RefundTokenBucket,
          &CreditTokenBucket);
      break;
    case Algorithm::kGcra:
      run(GcraState{}, &DecideGcra, &LeaseGcra, &RefundGcra, &CreditGcra);
      break;
  }
  return out;
}

TEST(Vectors, CoverEveryAlgorithm) {
  std::map<Algorithm, int> cases_per_algorithm;
  for (const VectorCase& c : LoadAllVectors()) {
    ++cases_per_algorithm[c.limit.algorithm];
  }
  for (int i = 0; i < kAlgorithmCount; ++i) {
    const auto algorithm = static_cast<Algorithm>(i);
    EXPECT_GE(cases_per_algorithm[algorithm], 6) << AlgorithmName(algorithm);
  }
}

// Verifies the contract every expected decision must satisfy, independently of any implementation,
// so that a typo in a hand-written vector is caught before it is blamed on the C++ or the Lua.
TEST(Vectors, ExpectationsAreWellFormed) {
  for (const VectorCase& c : LoadAllVectors()) {
    for (size_t i = 0; i < c.steps.size(); ++i) {
      SCOPED_TRACE(absl::StrCat(c.name, " step ", i));
      const VectorStep& step = c.steps[i];
      const Decision& d = step.expect;
      const int64_t capacity = c.limit.Capacity();
      EXPECT_GE(d.remaining, 0);
      EXPECT_LE(d.remaining, capacity);
      EXPECT_GE(d.reset_after.count(), 0);
      if (step.credit) {
        // Any number of units may be given back; a credit is always allowed.
        EXPECT_TRUE(d.allowed);
        EXPECT_EQ(d.retry_after.count(), 0);
      } else if (step.cost > capacity) {
        EXPECT_FALSE(d.allowed);
        EXPECT_EQ(d.retry_after, Decision::kNever);
      } else if (step.cost == 0 || d.allowed) {
        EXPECT_TRUE(d.allowed);
        EXPECT_EQ(d.retry_after.count(), 0);
      } else {
        EXPECT_GE(d.retry_after.count(), 1);
        EXPECT_LE(d.retry_after, d.reset_after);
      }
    }
  }
}

// Credits (docs/algorithms.md, "Credits") have worked examples for every algorithm: one to no
// state, and some giving units back.
TEST(Vectors, CoverCreditsOfEveryAlgorithm) {
  std::map<Algorithm, int> cases_with_credits;
  std::map<Algorithm, int> first_step_credits;
  for (const VectorCase& c : LoadAllVectors()) {
    const bool any = std::any_of(c.steps.begin(), c.steps.end(),
                                 [](const VectorStep& step) { return step.credit; });
    if (any) ++cases_with_credits[c.limit.algorithm];
    if (c.steps[0].credit && c.steps[0].cost > 0) ++first_step_credits[c.limit.algorithm];
  }
  for (int i = 0; i < kAlgorithmCount; ++i) {
    const auto algorithm = static_cast<Algorithm>(i);
    EXPECT_GE(cases_with_credits[algorithm], 2) << AlgorithmName(algorithm);
    EXPECT_GE(first_step_credits[algorithm], 1) << AlgorithmName(algorithm);
  }
}

TEST(LeaseVectors, CoverEveryAlgorithmWithGrantsAndRefunds) {
  std::map<Algorithm, int> grants;
  std::map<Algorithm, int> refunds;
  for (const VectorCase& c : LoadLeaseVectors()) {
    for (const VectorStep& step : c.steps) {
      if (step.lease.has_value() && step.lease->granted > 0) ++grants[c.limit.algorithm];
      if (step.refund.has_value() && step.refund->refunded > 0) ++refunds[c.limit.algorithm];
    }
  }
  for (int i = 0; i < kAlgorithmCount; ++i) {
    const auto algorithm = static_cast<Algorithm>(i);
    EXPECT_GE(grants[algorithm], 3) << AlgorithmName(algorithm);
    EXPECT_GE(refunds[algorithm], 2) << AlgorithmName(algorithm);
  }
}

// As ExpectationsAreWellFormed, for the lease vectors: a grant only to an admitted check, at most
// half of what remained (remaining = R - granted), and ends_us only with a grant.
TEST(LeaseVectors, ExpectationsAreWellFormed) {
  for (const VectorCase& c : LoadLeaseVectors()) {
    for (size_t i = 0; i < c.steps.size(); ++i) {
      SCOPED_TRACE(absl::StrCat(c.name, " step ", i));
      const VectorStep& step = c.steps[i];
      if (step.refund.has_value()) {
        EXPECT_LE(step.refund->refunded, step.refund->unspent);
        continue;
      }
      EXPECT_GE(step.expect.remaining, 0);
      EXPECT_LE(step.expect.remaining, c.limit.Capacity());
      if (step.credit) {
        EXPECT_TRUE(step.expect.allowed);
        EXPECT_EQ(step.expect.retry_after.count(), 0);
      }
      if (!step.lease.has_value()) continue;
      const int64_t granted = step.lease->granted;
      if (granted == 0) {
        EXPECT_EQ(step.lease->ends_us, 0);
        continue;
      }
      EXPECT_TRUE(step.expect.allowed);
      EXPECT_LE(granted, step.lease->want);
      EXPECT_LE(2 * granted, step.expect.remaining + granted);
      EXPECT_GT(step.lease->ends_us, step.now_us);
    }
  }
}

TEST(LeaseVectors, ReplayThroughTheCppReference) {
  const std::vector<VectorCase> cases = LoadLeaseVectors();
  ASSERT_FALSE(cases.empty());
  for (const VectorCase& c : cases) {
    const std::vector<LeaseStepResult> got = ReplayLeaseCase(c);
    ASSERT_EQ(got.size(), c.steps.size());
    for (size_t i = 0; i < c.steps.size(); ++i) {
      SCOPED_TRACE(absl::StrCat(c.name, " step ", i, " (now_us ", c.steps[i].now_us, ")"));
      const VectorStep& step = c.steps[i];
      if (step.refund.has_value()) {
        EXPECT_EQ(got[i].refunded, step.refund->refunded);
        continue;
      }
      EXPECT_EQ(got[i].decision, step.expect);
      if (step.lease.has_value()) {
        EXPECT_EQ(got[i].granted, step.lease->granted);
        EXPECT_EQ(got[i].ends_us, step.lease->ends_us);
      }
    }
  }
}

TEST(Vectors, ReplayThroughCppAlgorithms) {
  const std::vector<VectorCase> cases = LoadAllVectors();
  ASSERT_FALSE(cases.empty());
  for (const VectorCase& c : cases) {
    const std::vector<Decision> got = ReplayCase(c);
    ASSERT_EQ(got.size(), c.steps.size());
    for (size_t i = 0; i < c.steps.size(); ++i) {
      EXPECT_EQ(got[i], c.steps[i].expect)
          << c.name << " step " << i << " (now_us " << c.steps[i].now_us
          << (c.steps[i].credit ? ", credit " : ", cost ") << c.steps[i].cost << ")";
    }
  }
}

// The loader itself: a malformed file names the file and the field instead of passing silently.
class VectorLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("sluice_vectors_", info->name(), "_", ::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Write(std::string_view name, std::string_view text) { std::ofstream(dir_ / name) << text; }

  std::filesystem::path dir_;
};

constexpr absl::string_view kValidStep =
    R"({"now_us": 1700000000000000, "cost": 1, "allowed": true, "remaining": 0,
        "reset_after_us": 1000000, "retry_after_us": 0})";

TEST_F(VectorLoaderTest, LoadsAValidFile) {
  Write("a.json", absl::StrCat(R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000, "burst": 1}, "steps": [)",
                               kValidStep, "]}]}"));
  const auto cases = LoadVectorsFromDirectory(dir_);
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 1u);
  const VectorCase& c = (*cases)[0];
  EXPECT_EQ(c.name, "gcra/one");
  EXPECT_EQ(c.limit, (Limit{.algorithm = Algorithm::kGcra,
                            .limit = 1,
                            .period = std::chrono::seconds(1),
                            .burst = 1}));
  ASSERT_EQ(c.steps.size(), 1u);
  EXPECT_EQ(c.steps[0].now_us, 1'700'000'000'000'000);
  EXPECT_EQ(c.steps[0].expect, algorithm_testing::Allowed(1, 0, 1'000'000));
}

TEST_F(VectorLoaderTest, RejectsUnknownKey) {
  Write("a.json", R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000}, "steps": [{"now_us": 1, "cost": 1,
      "allowed": true, "remainig": 0, "reset_after_us": 0, "retry_after_us": 0}]}]})");
  const auto cases = LoadVectorsFromDirectory(dir_);
  EXPECT_EQ(cases.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(cases.status()), HasSubstr("a.json: cases[0].steps[0].remainig"));
}

TEST_F(VectorLoaderTest, RejectsBurstOnWindowAlgorithm) {
  Write("a.json", absl::StrCat(R"({"algorithm": "fixed_window", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000, "burst": 1}, "steps": [)",
                               kValidStep, "]}]}"));
  EXPECT_THAT(MessageOf(LoadVectorsFromDirectory(dir_).status()), HasSubstr("limit.burst"));
}

TEST_F(VectorLoaderTest, RejectsNonIntegerNumber) {
  Write("a.json", R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000}, "steps": [{"now_us": 1.5e15, "cost": 1,
      "allowed": true, "remaining": 0, "reset_after_us": 0, "retry_after_us": 0}]}]})");
  EXPECT_THAT(MessageOf(LoadVectorsFromDirectory(dir_).status()), HasSubstr("now_us"));
}

TEST_F(VectorLoaderTest, RejectsDuplicateCaseNames) {
  const std::string one = absl::StrCat(
      R"({"name": "one", "limit": {"limit": 1, "period_ms": 1000}, "steps": [)", kValidStep, "]}");
  Write("a.json", absl::StrCat(R"({"algorithm": "gcra", "cases": [)", one, ",", one, "]}"));
  EXPECT_THAT(MessageOf(LoadVectorsFromDirectory(dir_).status()), HasSubstr("duplicate"));
}

TEST_F(VectorLoaderTest, LeaseStepsOnlyInLeaseFiles) {
  const std::string file = absl::StrCat(R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000}, "steps": [
      {"now_us": 1, "cost": 0, "want": 1, "ttl_us": 1000, "allowed": true, "remaining": 0,
       "reset_after_us": 0, "retry_after_us": 0, "granted": 0, "ends_us": 0},
      {"now_us": 2, "refund": {"ends_us": 5, "granted": 2, "unspent": 1}, "refunded": 1}]}]})");
  Write("a.json", file);
  EXPECT_THAT(MessageOf(LoadVectorsFromDirectory(dir_).status()), HasSubstr("want"));
  const auto cases = LoadLeaseVectorsFromDirectory(dir_);
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 1u);
  EXPECT_EQ((*cases)[0].name, "lease/gcra/one");
  ASSERT_EQ((*cases)[0].steps.size(), 2u);
  ASSERT_TRUE((*cases)[0].steps[0].lease.has_value());
  EXPECT_EQ((*cases)[0].steps[0].lease->ttl_us, 1000);
  ASSERT_TRUE((*cases)[0].steps[1].refund.has_value());
  EXPECT_EQ((*cases)[0].steps[1].refund->unspent, 1);
}

TEST_F(VectorLoaderTest, ReadsCreditSteps) {
  Write("a.json", R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000}, "steps": [
      {"now_us": 1, "credit": true, "cost": 4294967296, "allowed": true, "remaining": 1,
       "reset_after_us": 0, "retry_after_us": 0},
      {"now_us": 1, "credit": false, "cost": 1, "allowed": true, "remaining": 0,
       "reset_after_us": 1000000, "retry_after_us": 0}]}]})");
  const auto cases = LoadVectorsFromDirectory(dir_);
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ((*cases)[0].steps.size(), 2u);
  EXPECT_TRUE((*cases)[0].steps[0].credit);
  EXPECT_EQ((*cases)[0].steps[0].cost, int64_t{1} << 32);
  EXPECT_FALSE((*cases)[0].steps[1].credit);
}

TEST_F(VectorLoaderTest, RejectsADeniedCreditAndACreditWithAWant) {
  Write("a.json", R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000}, "steps": [{"now_us": 1, "credit": true,
      "cost": 1, "allowed": false, "remaining": 0, "reset_after_us": 0, "retry_after_us": 1}]}]})");
  EXPECT_THAT(MessageOf(LoadVectorsFromDirectory(dir_).status()), HasSubstr("credit"));
  Write("a.json", R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000}, "steps": [{"now_us": 1, "credit": 1, "cost": 1,
      "allowed": true, "remaining": 0, "reset_after_us": 0, "retry_after_us": 0}]}]})");
  EXPECT_THAT(MessageOf(LoadVectorsFromDirectory(dir_).status()), HasSubstr("steps[0].credit"));
  Write("a.json", R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000}, "steps": [{"now_us": 1, "credit": true,
      "cost": 1, "want": 1, "ttl_us": 1000, "allowed": true, "remaining": 0,
      "reset_after_us": 0, "retry_after_us": 0, "granted": 0, "ends_us": 0}]}]})");
  EXPECT_THAT(MessageOf(LoadLeaseVectorsFromDirectory(dir_).status()), HasSubstr("want"));
}

TEST_F(VectorLoaderTest, RejectsAGrantWithoutAWant) {
  Write("a.json", R"({"algorithm": "gcra", "cases": [{"name": "one",
      "limit": {"limit": 1, "period_ms": 1000}, "steps": [{"now_us": 1, "cost": 0,
      "allowed": true, "remaining": 0, "reset_after_us": 0, "retry_after_us": 0,
      "granted": 0}]}]})");
  EXPECT_THAT(MessageOf(LoadLeaseVectorsFromDirectory(dir_).status()), HasSubstr("want"));
}

TEST_F(VectorLoaderTest, MissingDirectoryIsNotFound) {
  EXPECT_EQ(LoadVectorsFromDirectory(dir_ / "absent").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadVectorsFromDirectory(dir_).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice::algorithm
