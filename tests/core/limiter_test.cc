// Limiter validates every input before the store sees it, and forwards valid calls unchanged.
// The store is a StrictMock: any call a test does not expect fails it.
#include "sluice/limiter.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/store.h"

#include "tests/mocks/mock_store.h"

namespace sluice {
namespace {

using ::sluice::testing::MockStore;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Return;
using ::testing::StrictMock;

// The message as a std::string, so that gtest prints it as text.
std::string MessageOf(const absl::Status& status) { return std::string(status.message()); }

Limit ValidLimit() {
  return Limit{.algorithm = Algorithm::kGcra, .limit = 10, .period = std::chrono::seconds(1)};
}

// limit.limit out of range.
Limit BadLimit() {
  return Limit{.algorithm = Algorithm::kGcra, .limit = 0, .period = std::chrono::seconds(1)};
}

// A burst on an algorithm that takes none.
Limit BurstOnWindow() {
  return Limit{.algorithm = Algorithm::kFixedWindow,
               .limit = 10,
               .period = std::chrono::seconds(1),
               .burst = 5};
}

// Runs CheckAsync and returns what its callback received; the callback must run exactly once.
absl::StatusOr<Decision> RunCheckAsync(Limiter& limiter, std::string_view key, const Limit& limit,
                                       int64_t cost) {
  std::optional<absl::StatusOr<Decision>> result;
  int calls = 0;
  limiter.CheckAsync(key, limit, cost, [&](absl::StatusOr<Decision> d) {
    ++calls;
    result = std::move(d);
  });
  EXPECT_EQ(calls, 1);
  return result.value_or(absl::InternalError("callback did not run"));
}

absl::StatusOr<MultiDecision> RunCheckAllAsync(Limiter& limiter,
                                               std::span<const LimitCheck> checks) {
  std::optional<absl::StatusOr<MultiDecision>> result;
  int calls = 0;
  limiter.CheckAllAsync(checks, [&](absl::StatusOr<MultiDecision> d) {
    ++calls;
    result = std::move(d);
  });
  EXPECT_EQ(calls, 1);
  return result.value_or(absl::InternalError("callback did not run"));
}

TEST(Limiter, CheckRejectsInvalidInputWithoutCallingStore) {
  StrictMock<MockStore> store;
  Limiter limiter(store);
  EXPECT_EQ(limiter.Check("", ValidLimit()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(limiter.Check("", ValidLimit()).status()), HasSubstr("key"));
  EXPECT_THAT(MessageOf(limiter.Check("k", BadLimit()).status()), HasSubstr("limit.limit"));
  EXPECT_THAT(MessageOf(limiter.Check("k", BurstOnWindow()).status()), HasSubstr("limit.burst"));
  EXPECT_THAT(MessageOf(limiter.Check("k", ValidLimit(), -1).status()), HasSubstr("cost"));
  EXPECT_EQ(limiter.Check("k", ValidLimit(), kMaxCost + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Limiter, CheckForwardsValidInputAndReturnsStoreResult) {
  StrictMock<MockStore> store;
  Limiter limiter(store);
  const Decision decision{.allowed = true, .limit = 10, .remaining = 9};
  EXPECT_CALL(store, Check(Eq("user:42"), ValidLimit(), 1)).WillOnce(Return(decision));
  EXPECT_CALL(store, Check(Eq("user:42"), ValidLimit(), 0)).WillOnce(Return(decision));
  EXPECT_CALL(store, Check(Eq("user:42"), ValidLimit(), kMaxCost))
      .WillOnce(Return(absl::UnavailableError("redis down")));
  EXPECT_EQ(limiter.Check("user:42", ValidLimit()).value(), decision);  // the default cost is 1
  EXPECT_EQ(limiter.Check("user:42", ValidLimit(), 0).value(), decision);
  EXPECT_EQ(limiter.Check("user:42", ValidLimit(), kMaxCost).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(Limiter, CheckAsyncRejectsInvalidInputInlineWithoutCallingStore) {
  StrictMock<MockStore> store;
  Limiter limiter(store);
  EXPECT_THAT(MessageOf(RunCheckAsync(limiter, "", ValidLimit(), 1).status()), HasSubstr("key"));
  EXPECT_THAT(MessageOf(RunCheckAsync(limiter, "k", BadLimit(), 1).status()),
              HasSubstr("limit.limit"));
  EXPECT_THAT(MessageOf(RunCheckAsync(limiter, "k", ValidLimit(), -1).status()), HasSubstr("cost"));
}

TEST(Limiter, CheckAsyncForwardsValidInput) {
  StrictMock<MockStore> store;
  Limiter limiter(store);
  const Decision decision{.allowed = false, .limit = 10, .retry_after = std::chrono::seconds(1)};
  EXPECT_CALL(store, CheckAsync(Eq("k"), ValidLimit(), 3, _))
      .WillOnce([&](std::string_view, const Limit&, int64_t, Store::DecisionCallback done) {
        std::move(done)(decision);
      });
  EXPECT_EQ(RunCheckAsync(limiter, "k", ValidLimit(), 3).value(), decision);
}

TEST(Limiter, CheckAllRejectsInvalidInputWithoutCallingStore) {
  StrictMock<MockStore> store;
  Limiter limiter(store);
  EXPECT_THAT(MessageOf(limiter.CheckAll({}).status()), HasSubstr("at least one"));
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = ValidLimit(), .cost = 1},
                                          {.key = "b", .limit = BadLimit(), .cost = 1}};
  const absl::Status status = limiter.CheckAll(checks).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(status), HasSubstr("checks[1].limit.limit"));
  const std::vector<LimitCheck> bad_cost = {{.key = "a", .limit = ValidLimit(), .cost = -1}};
  EXPECT_THAT(MessageOf(limiter.CheckAll(bad_cost).status()), HasSubstr("checks[0].cost"));
}

TEST(Limiter, CheckAllForwardsValidInput) {
  StrictMock<MockStore> store;
  Limiter limiter(store);
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = ValidLimit(), .cost = 1},
                                          {.key = "b", .limit = ValidLimit(), .cost = 0}};
  const MultiDecision result{.allowed = true, .decisions = {Decision{.allowed = true}}};
  EXPECT_CALL(store, CheckAll(_)).WillOnce([&](std::span<const LimitCheck> got) {
    EXPECT_EQ(got.data(), checks.data());
    EXPECT_EQ(got.size(), checks.size());
    return absl::StatusOr<MultiDecision>(result);
  });
  const absl::StatusOr<MultiDecision> got = limiter.CheckAll(checks);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->allowed);
  EXPECT_THAT(got->decisions, ElementsAre(Decision{.allowed = true}));
}

TEST(Limiter, CheckAllAsyncRejectsInvalidInputInlineWithoutCallingStore) {
  StrictMock<MockStore> store;
  Limiter limiter(store);
  EXPECT_EQ(RunCheckAllAsync(limiter, {}).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<LimitCheck> checks = {{.key = "", .limit = ValidLimit(), .cost = 1}};
  EXPECT_THAT(MessageOf(RunCheckAllAsync(limiter, checks).status()), HasSubstr("checks[0].key"));
}

TEST(Limiter, CheckAllAsyncForwardsValidInput) {
  StrictMock<MockStore> store;
  Limiter limiter(store);
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = ValidLimit(), .cost = 2}};
  EXPECT_CALL(store, CheckAllAsync(_, _))
      .WillOnce([](std::span<const LimitCheck> got, Store::MultiDecisionCallback done) {
        EXPECT_EQ(got.size(), 1u);
        std::move(done)(absl::DeadlineExceededError("slow"));
      });
  EXPECT_EQ(RunCheckAllAsync(limiter, checks).status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace sluice
