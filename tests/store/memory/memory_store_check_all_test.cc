// CheckAll() in the memory store: all or nothing, over any keys and shards.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"
#include "sluice/store.h"

#include "tests/store/memory/memory_store_test_util.h"
#include "tests/testing/manual_clock.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CheckAllOk;
using testing::CheckOk;
using testing::ManualClock;
using testing::NewStore;
using testing::Peek;

constexpr Limit kFixed3{.algorithm = Algorithm::kFixedWindow, .limit = 3, .period = seconds(1)};
constexpr Limit kGcra{.algorithm = Algorithm::kGcra, .limit = 10, .period = seconds(1), .burst = 5};
constexpr Limit kLog{.algorithm = Algorithm::kSlidingLog, .limit = 2, .period = seconds(1)};

TEST(MemoryStoreCheckAll, AllPassingRecordsEveryCost) {
  ManualClock clock;
  auto store = NewStore(clock);
  const std::vector<LimitCheck> checks = {
      {.key = "a", .limit = kFixed3, .cost = 1},
      {.key = "b", .limit = kGcra, .cost = 2},
      {.key = "c", .limit = kLog, .cost = 1},
  };
  const MultiDecision result = CheckAllOk(*store, checks);
  EXPECT_TRUE(result.allowed);
  ASSERT_EQ(result.decisions.size(), 3u);
  EXPECT_EQ(result.decisions[0].remaining, 2);
  EXPECT_EQ(result.decisions[1].remaining, 3);
  EXPECT_EQ(result.decisions[2].remaining, 1);
  EXPECT_EQ(Peek(*store, "a", kFixed3).remaining, 2);
  EXPECT_EQ(Peek(*store, "b", kGcra).remaining, 3);
  EXPECT_EQ(Peek(*store, "c", kLog).remaining, 1);
  EXPECT_EQ(store->Stats().entries, 3u);
}

// Verifies that one denial records nothing anywhere, the denied check reports its own denial and
// every check that would have passed reports what a peek sees.
TEST(MemoryStoreCheckAll, OneDenialRecordsNothingAndPassingChecksReportPeeks) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit one{.limit = 1, .period = seconds(1)};
  ASSERT_TRUE(CheckOk(*store, "b", one).allowed);
  ASSERT_TRUE(CheckOk(*store, "a", kFixed3).allowed);
  clock.Advance(milliseconds(250));
  const std::vector<LimitCheck> checks = {
      {.key = "a", .limit = kFixed3, .cost = 1},
      {.key = "b", .limit = one, .cost = 1},
      {.key = "c", .limit = kGcra, .cost = 2},
      {.key = "d", .limit = kLog, .cost = 0},
  };
  const MultiDecision result = CheckAllOk(*store, checks);
  EXPECT_FALSE(result.allowed);
  ASSERT_EQ(result.decisions.size(), 4u);
  EXPECT_EQ(result.decisions[0], Peek(*store, "a", kFixed3));
  EXPECT_EQ(result.decisions[0].remaining, 2);
  EXPECT_FALSE(result.decisions[1].allowed);
  EXPECT_EQ(result.decisions[1].retry_after, milliseconds(750));
  EXPECT_EQ(result.decisions[2], Peek(*store, "c", kGcra));
  EXPECT_EQ(result.decisions[2].remaining, 5);
  EXPECT_EQ(result.decisions[3], Peek(*store, "d", kLog));
  EXPECT_EQ(store->Stats().entries, 2u);  // c was not created.
}

TEST(MemoryStoreCheckAll, RepeatedKeyAppliesItsChecksInSequence) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit four{.limit = 4, .period = seconds(1)};
  const std::vector<LimitCheck> fits = {{.key = "k", .limit = four, .cost = 2},
                                        {.key = "k", .limit = four, .cost = 2}};
  MultiDecision result = CheckAllOk(*store, fits);
  EXPECT_TRUE(result.allowed);
  EXPECT_EQ(result.decisions[0].remaining, 2);
  EXPECT_EQ(result.decisions[1].remaining, 0);
  EXPECT_EQ(Peek(*store, "k", four).remaining, 0);

  // The second check sees the first one's cost, so 2 + 2 > 3 fails and nothing is recorded.
  const std::vector<LimitCheck> too_much = {{.key = "j", .limit = kFixed3, .cost = 2},
                                            {.key = "j", .limit = kFixed3, .cost = 2}};
  result = CheckAllOk(*store, too_much);
  EXPECT_FALSE(result.allowed);
  EXPECT_EQ(result.decisions[0], Peek(*store, "j", kFixed3));
  EXPECT_EQ(result.decisions[0].remaining, 3);
  EXPECT_FALSE(result.decisions[1].allowed);
  EXPECT_EQ(result.decisions[1].remaining, 1);
  EXPECT_EQ(Peek(*store, "j", kFixed3).remaining, 3);
}

// Verifies that a CheckAll() that passes leaves the same state and decisions as its checks applied
// one by one with Check(), including a key used by two algorithms and by two limits in one call.
TEST(MemoryStoreCheckAll, PassingCallEqualsItsChecksInSequence) {
  ManualClock clock;
  auto all = NewStore(clock);
  auto one_by_one = NewStore(clock);
  const Limit fixed5{.limit = 5, .period = seconds(1)};
  const Limit fixed4{.limit = 4, .period = seconds(1)};
  const std::vector<LimitCheck> checks = {
      {.key = "k", .limit = fixed5, .cost = 3}, {.key = "x", .limit = kLog, .cost = 1},
      {.key = "k", .limit = fixed4, .cost = 1}, {.key = "m", .limit = kFixed3, .cost = 1},
      {.key = "m", .limit = kGcra, .cost = 2},  {.key = "x", .limit = kLog, .cost = 1},
  };
  const MultiDecision result = CheckAllOk(*all, checks);
  ASSERT_TRUE(result.allowed);
  for (size_t i = 0; i < checks.size(); ++i) {
    EXPECT_EQ(result.decisions[i],
              CheckOk(*one_by_one, checks[i].key, checks[i].limit, checks[i].cost))
        << i;
  }
  for (const LimitCheck& check : checks) {
    EXPECT_EQ(Peek(*all, check.key, check.limit), Peek(*one_by_one, check.key, check.limit))
        << check.key << " " << Describe(check.limit);
  }
  EXPECT_EQ(Peek(*all, "k", fixed4).remaining, 0);
  EXPECT_EQ(Peek(*all, "m", kFixed3).remaining, 3);  // The GCRA admission replaced it.
  EXPECT_EQ(all->Stats().entries, 3u);
}

// Verifies all-or-nothing across shards: 64 keys in a 64-shard store (the chance that they all
// share one shard is 2^-378), with the last one exhausted.
TEST(MemoryStoreCheckAll, IsAllOrNothingAcrossShards) {
  ManualClock clock;
  auto store = NewStore(clock, {.shards = 64});
  const Limit one{.limit = 1, .period = seconds(10)};
  std::vector<LimitCheck> checks;
  checks.reserve(64);
  for (int i = 0; i < 64; ++i) checks.push_back({.key = absl::StrCat("key", i), .limit = one});
  ASSERT_TRUE(CheckOk(*store, "key63", one).allowed);
  MultiDecision result = CheckAllOk(*store, checks);
  EXPECT_FALSE(result.allowed);
  for (int i = 0; i < 63; ++i) {
    EXPECT_TRUE(result.decisions[i].allowed);
    EXPECT_EQ(result.decisions[i].remaining, 1);
  }
  EXPECT_FALSE(result.decisions[63].allowed);
  EXPECT_EQ(store->Stats().entries, 1u);

  checks.pop_back();
  result = CheckAllOk(*store, checks);
  EXPECT_TRUE(result.allowed);
  EXPECT_EQ(store->Stats().entries, 64u);
  for (const LimitCheck& check : checks) EXPECT_EQ(Peek(*store, check.key, one).remaining, 0);
}

// Verifies that past kPairwiseKeyLimit checks, where keys are grouped by a hash map, repeated keys
// still share one state.
TEST(MemoryStoreCheckAll, ManyChecksWithRepeatedKeys) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit ten{.limit = 10, .period = seconds(1)};
  std::vector<LimitCheck> checks;
  checks.reserve(100);
  for (int i = 0; i < 100; ++i) checks.push_back({.key = absl::StrCat("k", i % 10), .limit = ten});
  EXPECT_TRUE(CheckAllOk(*store, checks).allowed);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Peek(*store, absl::StrCat("k", i), ten).remaining, 0);
  checks.push_back({.key = "k3", .limit = ten});
  checks.front().key = "fresh";
  EXPECT_FALSE(CheckAllOk(*store, checks).allowed);
  EXPECT_EQ(Peek(*store, "fresh", ten).remaining, 10);
}

TEST(MemoryStoreCheckAll, InvalidInputIsInvalidArgumentAndRecordsNothing) {
  ManualClock clock;
  auto store = NewStore(clock);
  EXPECT_EQ(store->CheckAll({}).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = kFixed3, .cost = 1},
                                          {.key = "b", .limit = kFixed3, .cost = -1}};
  EXPECT_EQ(store->CheckAll(checks).status().code(), absl::StatusCode::kInvalidArgument);
  std::optional<absl::Status> async_status;
  store->CheckAllAsync(checks,
                       [&](const absl::StatusOr<MultiDecision>& r) { async_status = r.status(); });
  ASSERT_TRUE(async_status.has_value());
  EXPECT_EQ(async_status->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Stats().entries, 0u);
}

TEST(MemoryStoreCheckAll, CheckAllAsyncRunsItsCallbackInline) {
  ManualClock clock;
  auto store = NewStore(clock);
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = kFixed3, .cost = 1}};
  std::optional<absl::StatusOr<MultiDecision>> result;
  store->CheckAllAsync(checks, [&](absl::StatusOr<MultiDecision> r) { result = std::move(r); });
  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(result->ok());
  EXPECT_TRUE((*result)->allowed);
}

TEST(MemoryStoreCheckAll, DenyNewKeysDeniesTheCallWhenANewKeyHasNoRoom) {
  ManualClock clock;
  auto store = NewStore(clock, {.max_entries = 2,
                                .overflow_policy = OverflowPolicy::kDenyNewKeys,
                                .sweep_interval = milliseconds(500)});
  ASSERT_TRUE(CheckOk(*store, "a", kFixed3).allowed);
  ASSERT_TRUE(CheckOk(*store, "b", kFixed3).allowed);
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = kFixed3, .cost = 1},
                                          {.key = "c", .limit = kFixed3, .cost = 1}};
  const MultiDecision result = CheckAllOk(*store, checks);
  EXPECT_FALSE(result.allowed);
  EXPECT_EQ(result.decisions[0], Peek(*store, "a", kFixed3));
  EXPECT_FALSE(result.decisions[1].allowed);
  EXPECT_EQ(result.decisions[1].retry_after, milliseconds(500));
  const MemoryStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.denied_for_room, 1u);
}

// Verifies that making room for a new key never evicts another key of the same call, even the one
// that expires soonest.
TEST(MemoryStoreCheckAll, EvictionSparesTheKeysOfTheCall) {
  ManualClock clock;
  auto store = NewStore(clock, {.max_entries = 2, .sweep_interval = std::chrono::hours(1)});
  const Limit soon{.algorithm = Algorithm::kTokenBucket, .limit = 2, .period = seconds(1)};
  const Limit late{.algorithm = Algorithm::kTokenBucket, .limit = 1, .period = seconds(30)};
  ASSERT_TRUE(CheckOk(*store, "a", soon).allowed);
  ASSERT_TRUE(CheckOk(*store, "b", late).allowed);
  const std::vector<LimitCheck> checks = {{.key = "a", .limit = soon, .cost = 1},
                                          {.key = "c", .limit = late, .cost = 1}};
  EXPECT_TRUE(CheckAllOk(*store, checks).allowed);
  EXPECT_EQ(Peek(*store, "a", soon).remaining, 0);
  EXPECT_EQ(Peek(*store, "b", late).remaining, 1);  // Evicted.
  EXPECT_EQ(Peek(*store, "c", late).remaining, 0);
  EXPECT_EQ(store->Stats().evicted, 1u);

  // Three new keys cannot all fit in two entries: the call is denied and records nothing.
  const std::vector<LimitCheck> three = {{.key = "x", .limit = late, .cost = 1},
                                         {.key = "y", .limit = late, .cost = 1},
                                         {.key = "z", .limit = late, .cost = 1}};
  const MultiDecision result = CheckAllOk(*store, three);
  EXPECT_FALSE(result.allowed);
  EXPECT_EQ(result.decisions[0].remaining, 1);
  EXPECT_EQ(result.decisions[1].remaining, 1);
  EXPECT_FALSE(result.decisions[2].allowed);
  EXPECT_EQ(Peek(*store, "a", soon).remaining, 0);
  EXPECT_EQ(Peek(*store, "c", late).remaining, 0);
  EXPECT_EQ(store->Stats().evicted, 1u);
}

}  // namespace
}  // namespace sluice
