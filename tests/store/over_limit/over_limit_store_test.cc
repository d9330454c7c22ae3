// OverLimitStore: denials answered from memory until they expire, nothing recorded for a
// multi-limit request with a cached denial, and only requests of the denied cost or more.
#include "src/store/over_limit/over_limit_store.h"

#include <chrono>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/memory_store.h"

#include "tests/testing/faulty_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice::internal {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

class OverLimitStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto memory = MemoryStore::Create({.clock = &clock_});
    ASSERT_TRUE(memory.ok());
    memory_ = *std::move(memory);
    counted_ = std::make_unique<testing::FaultyStore>(*memory_);
    store_ = std::make_unique<OverLimitStore>(
        *counted_, OverLimitStoreOptions{.max_entries = 100, .clock = &clock_});
  }
  int64_t RemainingInStore(const char* key, const Limit& limit) {
    absl::StatusOr<Decision> d = memory_->Check(key, limit, 0);
    return d.ok() ? d->remaining : -1;
  }

  testing::ManualClock clock_{seconds(1'700'000'040)};
  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<testing::FaultyStore> counted_;
  std::unique_ptr<OverLimitStore> store_;
};

const Limit kTwoPerMinute{.limit = 2, .period = minutes(1)};

TEST_F(OverLimitStoreTest, DenialIsAnsweredLocallyUntilItsRetryAfter) {
  ASSERT_TRUE(store_->Check("k", kTwoPerMinute)->allowed);
  ASSERT_TRUE(store_->Check("k", kTwoPerMinute)->allowed);
  absl::StatusOr<Decision> denied = store_->Check("k", kTwoPerMinute);
  ASSERT_TRUE(denied.ok());
  EXPECT_FALSE(denied->allowed);
  EXPECT_FALSE(denied->answered_locally);
  const int forwarded = counted_->forwarded();

  counted_->Fail(absl::UnavailableError("the cache must answer"));
  absl::StatusOr<Decision> cached = store_->Check("k", kTwoPerMinute);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_FALSE(cached->allowed);
  EXPECT_TRUE(cached->answered_locally);
  EXPECT_EQ(cached->retry_after, denied->retry_after);
  EXPECT_EQ(counted_->forwarded(), forwarded);
  EXPECT_EQ(store_->hits(), 1u);

  // At the retry_after the store decides again (and admits: a new window).
  counted_->Heal();
  clock_.Advance(denied->retry_after);
  absl::StatusOr<Decision> later = store_->Check("k", kTwoPerMinute);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->allowed);
  EXPECT_FALSE(later->answered_locally);
}

TEST_F(OverLimitStoreTest, SmallerCostOrOtherQuotaGoesToTheStore) {
  ASSERT_TRUE(store_->Check("k", kTwoPerMinute)->allowed);
  EXPECT_FALSE(store_->Check("k", kTwoPerMinute, 2)->allowed);  // cost 2 denied: 1 left
  absl::StatusOr<Decision> one = store_->Check("k", kTwoPerMinute, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->allowed);
  EXPECT_FALSE(one->answered_locally);
  const Limit three{.limit = 3, .period = minutes(1)};
  EXPECT_FALSE(store_->Check("k", three, 2)->answered_locally);
}

TEST_F(OverLimitStoreTest, CachedDenialInAMultiLimitCheckRecordsNothingElsewhere) {
  ASSERT_TRUE(store_->Check("a", kTwoPerMinute)->allowed);
  ASSERT_TRUE(store_->Check("a", kTwoPerMinute)->allowed);
  ASSERT_FALSE(store_->Check("a", kTwoPerMinute)->allowed);
  const Limit ten{.limit = 10, .period = minutes(1)};
  std::vector<LimitCheck> checks{{.key = "a", .limit = kTwoPerMinute, .cost = 1},
                                 {.key = "b", .limit = ten, .cost = 4},
                                 {.key = "c", .limit = kTwoPerMinute, .cost = 3}};
  absl::StatusOr<MultiDecision> m = store_->CheckAll(checks);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->allowed);
  ASSERT_EQ(m->decisions.size(), 3u);
  EXPECT_TRUE(m->decisions[0].answered_locally);
  EXPECT_FALSE(m->decisions[0].allowed);
  // b was only peeked at: its cost would have fit, and nothing was recorded.
  EXPECT_TRUE(m->decisions[1].allowed);
  EXPECT_FALSE(m->decisions[1].answered_locally);
  EXPECT_EQ(m->decisions[1].remaining, 10);
  EXPECT_EQ(RemainingInStore("b", ten), 10);
  // c's cost of 3 is over its capacity of 2: reported denied.
  EXPECT_FALSE(m->decisions[2].allowed);
}

TEST_F(OverLimitStoreTest, StoreErrorOfThePeekIsTheAnswer) {
  ASSERT_TRUE(store_->Check("a", kTwoPerMinute, 2)->allowed);
  ASSERT_FALSE(store_->Check("a", kTwoPerMinute)->allowed);
  counted_->Fail(absl::UnavailableError("down"));
  std::vector<LimitCheck> checks{{.key = "a", .limit = kTwoPerMinute, .cost = 1},
                                 {.key = "b", .limit = kTwoPerMinute, .cost = 1}};
  absl::StatusOr<MultiDecision> m = store_->CheckAll(checks);
  EXPECT_TRUE(absl::IsUnavailable(m.status())) << m.status();
}

// Verifies credits: never answered from the cache, a credit through this store drops its key's
// entry at once, and an entry lives at most max_entry_life (1 s), which bounds how long a credit
// through another instance goes unseen, while still reporting the store's retry_after.
TEST_F(OverLimitStoreTest, CreditsReachTheCacheAtOnceHereAndWithinOneSecondElsewhere) {
  OverLimitStore other(*counted_, OverLimitStoreOptions{.max_entries = 100, .clock = &clock_});
  for (int i = 0; i < 3; ++i) (void)store_->Check("k", kTwoPerMinute);
  absl::StatusOr<Decision> cached = store_->Check("k", kTwoPerMinute);
  ASSERT_TRUE(cached->answered_locally);
  ASSERT_GT(cached->retry_after, seconds(1));
  // Through this store: the entry goes, and the unit given back passes.
  absl::StatusOr<Decision> credit = store_->Refund("k", kTwoPerMinute, 1);
  ASSERT_TRUE(credit.ok()) << credit.status();
  EXPECT_TRUE(credit->allowed);
  EXPECT_FALSE(credit->answered_locally);
  EXPECT_TRUE(store_->Check("k", kTwoPerMinute)->allowed);
  absl::StatusOr<Decision> again = store_->Check("k", kTwoPerMinute);
  ASSERT_FALSE(again->allowed);
  ASSERT_FALSE(again->answered_locally);
  ASSERT_TRUE(store_->Check("k", kTwoPerMinute)->answered_locally);
  // Through another instance: seen here once the entry's second has passed.
  ASSERT_TRUE(other.Refund("k", kTwoPerMinute, 1)->allowed);
  clock_.Advance(std::chrono::milliseconds(999));
  absl::StatusOr<Decision> still = store_->Check("k", kTwoPerMinute);
  EXPECT_TRUE(still->answered_locally);
  EXPECT_GT(still->retry_after, seconds(1));  // the store's, not the entry's life
  clock_.Advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(store_->Check("k", kTwoPerMinute)->allowed);
}

}  // namespace
}  // namespace sluice::internal
