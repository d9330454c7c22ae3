#include "src/store/split/per_second_store.h"

#include <chrono>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/memory_store.h"

#include "tests/testing/deferred_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

class PerSecondStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = MemoryStore::Create({.clock = &clock_});
    auto b = MemoryStore::Create({.clock = &clock_});
    ASSERT_TRUE(a.ok() && b.ok());
    main_ = *std::move(a);
    per_second_ = *std::move(b);
    store_ = std::make_unique<PerSecondStore>(*main_, *per_second_);
  }
  int64_t Remaining(Store& s, const char* key, const Limit& limit) {
    absl::StatusOr<Decision> d = s.Check(key, limit, 0);
    return d.ok() ? d->remaining : -1;
  }

  testing::ManualClock clock_;
  std::unique_ptr<Store> main_;
  std::unique_ptr<Store> per_second_;
  std::unique_ptr<PerSecondStore> store_;
};

const Limit kPerSecond{.limit = 5, .period = seconds(1)};
const Limit kPerMinute{.limit = 2, .period = minutes(1)};

TEST_F(PerSecondStoreTest, OneSecondLimitsLiveInTheirOwnStore) {
  ASSERT_TRUE(store_->Check("a", kPerSecond, 1).ok());
  ASSERT_TRUE(store_->Check("b", kPerMinute, 1).ok());
  EXPECT_EQ(Remaining(*per_second_, "a", kPerSecond), 4);
  EXPECT_EQ(Remaining(*main_, "a", kPerSecond), 5);
  EXPECT_EQ(Remaining(*main_, "b", kPerMinute), 1);
  EXPECT_EQ(Remaining(*per_second_, "b", kPerMinute), 2);
}

TEST_F(PerSecondStoreTest, MixedCheckAllDecidesPerSecondFirst) {
  const std::vector<LimitCheck> checks = {{.key = "m", .limit = kPerMinute, .cost = 1},
                                          {.key = "s", .limit = kPerSecond, .cost = 1}};
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<MultiDecision> d = store_->CheckAll(checks);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->allowed);
    ASSERT_EQ(d->decisions.size(), 2u);
    EXPECT_EQ(d->decisions[0].remaining, 1 - i);  // Request order is kept.
    EXPECT_EQ(d->decisions[1].remaining, 4 - i);
  }
  absl::StatusOr<MultiDecision> d = store_->CheckAll(checks);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_FALSE(d->decisions[0].allowed);
  // The per-second limit passed and keeps the hit, as the reference counts it.
  EXPECT_EQ(Remaining(*per_second_, "s", kPerSecond), 2);
}

TEST_F(PerSecondStoreTest, ADeniedPerSecondLimitConsumesNothingElse) {
  const Limit one{.limit = 1, .period = seconds(1)};
  const std::vector<LimitCheck> checks = {{.key = "m2", .limit = kPerMinute, .cost = 1},
                                          {.key = "s2", .limit = one, .cost = 2}};
  absl::StatusOr<MultiDecision> d = store_->CheckAll(checks);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(Remaining(*main_, "m2", kPerMinute), 2);
}

TEST_F(PerSecondStoreTest, AsyncAnswersOnAnotherThreadJoinInOrder) {
  testing::DeferredStore deferred_main(*main_);
  testing::DeferredStore deferred_second(*per_second_);
  PerSecondStore store(deferred_main, deferred_second);
  const std::vector<LimitCheck> checks = {{.key = "m3", .limit = kPerMinute, .cost = 1},
                                          {.key = "s3", .limit = kPerSecond, .cost = 1}};
  std::optional<absl::StatusOr<MultiDecision>> result;
  store.CheckAllAsync(checks, [&](absl::StatusOr<MultiDecision> d) { result = std::move(d); });
  EXPECT_EQ(deferred_second.RunPendingOnThread(), 1u);
  EXPECT_FALSE(result.has_value());
  EXPECT_EQ(deferred_main.RunPendingOnThread(), 1u);
  ASSERT_TRUE(result.has_value() && result->ok());
  EXPECT_TRUE((*result)->allowed);
  EXPECT_EQ((*result)->decisions[0].remaining, 1);
  EXPECT_EQ((*result)->decisions[1].remaining, 4);
}

}  // namespace
}  // namespace sluice
