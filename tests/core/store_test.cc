// Store's conveniences validate every input before the store's primitive sees it, and forward
// valid calls to Decide() unchanged. The store is a StrictMock: any call a test does not expect
// fails it.
#include "sluice/store.h"

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
using ::testing::HasSubstr;
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

// Answers a Decide() of one check with `d`.
auto AnswerOne(absl::StatusOr<Decision> d) {
  return [d = std::move(d)](std::span<const LimitCheck> checks,
                            Store::MultiDecisionCallback done) mutable {
    EXPECT_EQ(checks.size(), 1u);
    if (!d.ok()) return std::move(done)(d.status());
    std::move(done)(MultiDecision{.allowed = d->allowed, .decisions = {*d}});
  };
}

// One check of `key`, `limit` and `cost`.
auto IsOneCheck(std::string key, const Limit& limit, int64_t cost) {
  return ::testing::ElementsAre(::testing::AllOf(::testing::Field(&LimitCheck::key, key),
                                                 ::testing::Field(&LimitCheck::limit, limit),
                                                 ::testing::Field(&LimitCheck::cost, cost)));
}

// Runs CheckAsync and returns what its callback received; the callback must run exactly once.
absl::StatusOr<Decision> RunCheckAsync(Store& api, std::string_view key, const Limit& limit,
                                       int64_t cost) {
  std::optional<absl::StatusOr<Decision>> result;
  int calls = 0;
  api.CheckAsync(key, limit, cost, [&](absl::StatusOr<Decision> d) {
    ++calls;
    result = std::move(d);
  });
  EXPECT_EQ(calls, 1);
  return result.value_or(absl::InternalError("callback did not run"));
}

absl::StatusOr<MultiDecision> RunCheckAllAsync(Store& api, std::span<const LimitCheck> checks) {
  std::optional<absl::StatusOr<MultiDecision>> result;
  int calls = 0;
  api.CheckAllAsync(checks, [&](absl::StatusOr<MultiDecision> d) {
    ++calls;
    result = std::move(d);
  });
  EXPECT_EQ(calls, 1);
  return result.value_or(absl::InternalError("callback did not run"));
}

TEST(Store, CheckRejectsInvalidInputWithoutCallingStore) {
  StrictMock<MockStore> store;
  Store& api = store;
  EXPECT_EQ(api.Check("", ValidLimit()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(api.Check("", ValidLimit()).status()), HasSubstr("key"));
  EXPECT_THAT(MessageOf(api.Check("k", BadLimit()).status()), HasSubstr("limit.limit"));
  EXPECT_THAT(MessageOf(api.Check("k", BurstOnWindow()).status()), HasSubstr("limit.burst"));
  EXPECT_THAT(MessageOf(api.Check("k", ValidLimit(), -1).status()), HasSubstr("cost"));
  EXPECT_EQ(api.Check("k", ValidLimit(), kMaxCost + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Store, CheckForwardsValidInputAndReturnsStoreResult) {
  StrictMock<MockStore> store;
  Store& api = store;
  const Decision decision{.allowed = true, .limit = 10, .remaining = 9};
  EXPECT_CALL(store, Decide(IsOneCheck("user:42", ValidLimit(), 1), _))
      .WillOnce(AnswerOne(decision));
  EXPECT_CALL(store, Decide(IsOneCheck("user:42", ValidLimit(), 0), _))
      .WillOnce(AnswerOne(decision));
  EXPECT_CALL(store, Decide(IsOneCheck("user:42", ValidLimit(), kMaxCost), _))
      .WillOnce(AnswerOne(absl::UnavailableError("redis down")));
  EXPECT_EQ(api.Check("user:42", ValidLimit()).value(), decision);  // the default cost is 1
  EXPECT_EQ(api.Check("user:42", ValidLimit(), 0).value(), decision);
  EXPECT_EQ(api.Check("user:42", ValidLimit(), kMaxCost).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(Store, CheckAsyncRejectsInvalidInputInlineWithoutCallingStore) {
  StrictMock<MockStore> store;
  Store& api = store;
  EXPECT_THAT(MessageOf(RunCheckAsync(api, "", ValidLimit(), 1).status()), HasSubstr("key"));
  EXPECT_THAT(MessageOf(RunCheckAsync(api, "k", BadLimit(), 1).status()), HasSubstr("limit.limit"));
  EXPECT_THAT(MessageOf(RunCheckAsync(api, "k", ValidLimit(), -1).status()), HasSubstr("cost"));
}

TEST(Store, CheckAsyncForwardsValidInput) {
  StrictMock<MockStore> store;
  Store& api = store;
  const Decision decision{.allowed = false, .limit = 10, .retry_after = std::chrono::seconds(1)};
  EXPECT_CALL(store, Decide(IsOneCheck("k", ValidLimit(), 3), _)).WillOnce(AnswerOne(decision));
  EXPECT_EQ(RunCheckAsync(api, "k", ValidLimit(), 3).value(), decision);
}

TEST(Store, CheckAllRejectsInvalidInputWithoutCallingStore) {
  StrictMock<MockStore> store;
  Store& api = store;
  EXPECT_THAT(MessageOf(api.CheckAll({}).status()), HasSubstr("at least one"));
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = ValidLimit(), .cost = 1},
                                          {.key = "b", .limit = BadLimit(), .cost = 1}};
  const absl::Status status = api.CheckAll(checks).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(status), HasSubstr("checks[1].limit.limit"));
  const std::vector<LimitCheck> bad_cost = {{.key = "a", .limit = ValidLimit(), .cost = -1}};
  EXPECT_THAT(MessageOf(api.CheckAll(bad_cost).status()), HasSubstr("checks[0].cost"));
}

// Verifies that counting rejected hits is refused beside another check and on algorithms other
// than the fixed window.
TEST(Store, CheckAllRefusesCountingRejectedHitsOutsideASingleFixedWindow) {
  StrictMock<MockStore> store;
  Store& api = store;
  Limit window = ValidLimit();
  window.algorithm = Algorithm::kFixedWindow;
  const std::vector<LimitCheck> two = {
      {.key = "a", .limit = window, .cost = 1},
      {.key = "b", .limit = window, .cost = 1, .count_rejected = true}};
  EXPECT_THAT(
      MessageOf(api.CheckAll(two).status()),
      HasSubstr("checks[1].count_rejected: a check counting rejected hits must be the only"));
  const std::vector<LimitCheck> other = {
      {.key = "a", .limit = ValidLimit(), .cost = 1, .count_rejected = true}};
  EXPECT_THAT(MessageOf(api.CheckAll(other).status()),
              HasSubstr("only a fixed_window limit counts rejected hits"));
}

TEST(Store, CheckAllForwardsValidInput) {
  StrictMock<MockStore> store;
  Store& api = store;
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = ValidLimit(), .cost = 1},
                                          {.key = "b", .limit = ValidLimit(), .cost = 0}};
  const MultiDecision result{.allowed = true, .decisions = {Decision{.allowed = true}}};
  EXPECT_CALL(store, Decide(_, _))
      .WillOnce([&](std::span<const LimitCheck> got, Store::MultiDecisionCallback done) {
        EXPECT_EQ(got.data(), checks.data());
        EXPECT_EQ(got.size(), checks.size());
        std::move(done)(result);
      });
  const absl::StatusOr<MultiDecision> got = api.CheckAll(checks);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->allowed);
  EXPECT_THAT(got->decisions, ElementsAre(Decision{.allowed = true}));
}

TEST(Store, CheckAllAsyncRejectsInvalidInputInlineWithoutCallingStore) {
  StrictMock<MockStore> store;
  Store& api = store;
  EXPECT_EQ(RunCheckAllAsync(api, {}).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<LimitCheck> checks = {{.key = "", .limit = ValidLimit(), .cost = 1}};
  EXPECT_THAT(MessageOf(RunCheckAllAsync(api, checks).status()), HasSubstr("checks[0].key"));
}

TEST(Store, CheckAllAsyncForwardsValidInput) {
  StrictMock<MockStore> store;
  Store& api = store;
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = ValidLimit(), .cost = 2}};
  EXPECT_CALL(store, Decide(_, _))
      .WillOnce([](std::span<const LimitCheck> got, Store::MultiDecisionCallback done) {
        EXPECT_EQ(got.size(), 1u);
        std::move(done)(absl::DeadlineExceededError("slow"));
      });
  EXPECT_EQ(RunCheckAllAsync(api, checks).status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace sluice
