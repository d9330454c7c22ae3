#include "sluice/memory_store.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "tests/store/memory/memory_store_test_util.h"
#include "tests/testing/manual_clock.h"

namespace sluice {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CheckOk;
using testing::ManualClock;
using testing::NewStore;
using testing::Peek;

Decision Allowed(int64_t limit, int64_t remaining, microseconds reset_after) {
  return Decision{.allowed = true,
                  .limit = limit,
                  .remaining = remaining,
                  .reset_after = reset_after,
                  .retry_after = microseconds(0),
                  .from_fallback = false};
}

Decision Denied(int64_t limit, int64_t remaining, microseconds reset_after,
                microseconds retry_after) {
  return Decision{.allowed = false,
                  .limit = limit,
                  .remaining = remaining,
                  .reset_after = reset_after,
                  .retry_after = retry_after,
                  .from_fallback = false};
}

// Verifies LimitCheck::count_rejected on the memory store: every hit recorded, the counter past
// the limit, a 0-hit check admitted at exactly the limit and denied past it (the reference's).
TEST(MemoryStore, CountsRejectedHitsWhenAsked) {
  ManualClock clock(seconds(1'700'000'040));  // a multiple of 60 s
  std::unique_ptr<MemoryStore> store = NewStore(clock);
  const Limit limit{.algorithm = Algorithm::kFixedWindow, .limit = 2, .period = seconds(60)};
  const auto check = [&](int64_t cost) {
    const LimitCheck c{.key = "k", .limit = limit, .cost = cost, .count_rejected = true};
    absl::StatusOr<MultiDecision> m = store->CheckAll({&c, 1});
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? m->decisions[0] : Decision{};
  };
  EXPECT_EQ(check(2), Allowed(2, 0, seconds(60)));
  EXPECT_EQ(check(0), Allowed(2, 0, seconds(60)));
  EXPECT_EQ(check(1), Denied(2, 0, seconds(60), seconds(60)));
  EXPECT_EQ(check(0), Denied(2, 0, seconds(60), seconds(60)));
  // The rejected hit was recorded: sluice's own counting now sees 3 of 2.
  EXPECT_EQ(CheckOk(*store, "k", limit, 0), Allowed(2, 0, seconds(60)));
  EXPECT_EQ(CheckOk(*store, "k", limit, 1), Denied(2, 0, seconds(60), seconds(60)));
  // A fresh key denied on its first check keeps the hits.
  const LimitCheck big{.key = "fresh", .limit = limit, .cost = 3, .count_rejected = true};
  ASSERT_FALSE(store->CheckAll({&big, 1})->allowed);
  EXPECT_EQ(store->Stats().entries, 2u);
}

TEST(MemoryStoreCreate, RejectsOutOfRangeOptions) {
  ManualClock clock;
  EXPECT_EQ(MemoryStore::Create({.clock = &clock, .max_entries = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MemoryStore::Create({.clock = &clock, .shards = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MemoryStore::Create({.clock = &clock, .shards = (1 << 16) + 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      MemoryStore::Create({.clock = &clock, .sweep_interval = microseconds(0)}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MemoryStore::Create({.clock = &clock, .sweep_interval = -seconds(1)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MemoryStoreCreate, AcceptsAnyShardCountAndTheRealClock) {
  absl::StatusOr<std::unique_ptr<MemoryStore>> store = MemoryStore::Create({.shards = 3});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->Name(), "memory");
  const Decision d = CheckOk(**store, "k", Limit{.limit = 2, .period = seconds(1)});
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 1);
  EXPECT_GT(d.reset_after, microseconds(0));
  EXPECT_LE(d.reset_after, seconds(1));
}

TEST(MemoryStore, FixedWindowAdmitsLimitPerAlignedWindow) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{.algorithm = Algorithm::kFixedWindow, .limit = 3, .period = seconds(1)};
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(3, 2, seconds(1)));
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(3, 1, seconds(1)));
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(3, 0, seconds(1)));
  clock.Advance(milliseconds(999));
  EXPECT_EQ(CheckOk(*store, "k", limit), Denied(3, 0, milliseconds(1), milliseconds(1)));
  clock.Advance(milliseconds(1));
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(3, 2, seconds(1)));
}

TEST(MemoryStore, SlidingWindowWeighsThePreviousWindow) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{.algorithm = Algorithm::kSlidingWindow, .limit = 10, .period = seconds(1)};
  EXPECT_EQ(CheckOk(*store, "k", limit, 10), Allowed(10, 0, seconds(2)));
  clock.Advance(milliseconds(1000));
  // previous = 10 still weighs fully: the first unit fits once 100 ms of it have slid out.
  EXPECT_EQ(CheckOk(*store, "k", limit), Denied(10, 0, seconds(1), milliseconds(100)));
  clock.Advance(milliseconds(100));
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(10, 0, milliseconds(1900)));
}

TEST(MemoryStore, SlidingLogCountsEachUnitForOnePeriod) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{.algorithm = Algorithm::kSlidingLog, .limit = 2, .period = seconds(1)};
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(2, 1, seconds(1)));
  clock.Advance(milliseconds(100));
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(2, 0, seconds(1)));
  clock.Advance(milliseconds(100));
  EXPECT_EQ(CheckOk(*store, "k", limit), Denied(2, 0, milliseconds(900), milliseconds(800)));
  clock.Advance(milliseconds(799));
  EXPECT_FALSE(CheckOk(*store, "k", limit).allowed);
  clock.Advance(microseconds(1000));
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(2, 0, seconds(1)));
}

TEST(MemoryStore, TokenBucketAdmitsBurstThenRefills) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{
      .algorithm = Algorithm::kTokenBucket, .limit = 10, .period = seconds(1), .burst = 5};
  for (int64_t i = 1; i <= 5; ++i) {
    EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(5, 5 - i, milliseconds(100 * i)));
  }
  EXPECT_EQ(CheckOk(*store, "k", limit), Denied(5, 0, milliseconds(500), milliseconds(100)));
  clock.Advance(milliseconds(99));
  EXPECT_FALSE(CheckOk(*store, "k", limit).allowed);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(5, 0, milliseconds(500)));
}

TEST(MemoryStore, GcraAdmitsBurstThenOnePerEmissionInterval) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{.algorithm = Algorithm::kGcra, .limit = 10, .period = seconds(1), .burst = 5};
  for (int64_t i = 1; i <= 5; ++i) {
    EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(5, 5 - i, milliseconds(100 * i)));
  }
  EXPECT_EQ(CheckOk(*store, "k", limit), Denied(5, 0, milliseconds(500), milliseconds(100)));
  clock.Advance(milliseconds(100));
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(5, 0, milliseconds(500)));
}

// Verifies redis-cell's documented example (docs/algorithms.md, "What burst means").
TEST(MemoryStore, GcraMatchesRedisCellExample) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{.algorithm = Algorithm::kGcra, .limit = 30, .period = seconds(60), .burst = 16};
  EXPECT_EQ(CheckOk(*store, "user123", limit), Allowed(16, 15, seconds(2)));
}

// Verifies that the packed two-word states and the out-of-line log decide exactly as the pure
// algorithm functions do on a state that is never deleted, while sweeps and lazy expiry delete
// the store's copy as soon as it expires: expiry never changes a decision.
TEST(MemoryStore, DecidesAsTheAlgorithmsDoThroughExpiry) {
  std::mt19937_64 rng(7);
  uint64_t expired = 0;
  for (int a = 0; a < kAlgorithmCount; ++a) {
    const auto algorithm = static_cast<Algorithm>(a);
    for (int round = 0; round < 20; ++round) {
      ManualClock clock;
      auto store = NewStore(clock, {.sweep_interval = milliseconds(1), .shards = 1});
      Limit limit{.algorithm = algorithm,
                  .limit = static_cast<int64_t>(1 + rng() % 12),
                  .period = milliseconds(1 + static_cast<int64_t>(rng() % 3000))};
      if (algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) {
        limit.burst = static_cast<int64_t>(1 + rng() % 12);
      }
      algorithm::FixedWindowState fixed;
      algorithm::SlidingWindowState sliding;
      algorithm::SlidingLogState log;
      algorithm::TokenBucketState bucket;
      algorithm::GcraState gcra;
      for (int step = 0; step < 300; ++step) {
        // Forward only, as the store's clock is monotonic; up to 1.5 periods per unit of the limit.
        clock.Advance(microseconds(static_cast<int64_t>(
            rng() % static_cast<uint64_t>(limit.period.count() * 3 / 2 / limit.limit + 1))));
        const auto cost = static_cast<int64_t>(rng() % (limit.Capacity() + 2));
        const int64_t now = clock.EpochNow().count();
        Decision expected;
        switch (algorithm) {
          case Algorithm::kFixedWindow:
            expected = algorithm::DecideFixedWindow(limit, fixed, now, cost);
            break;
          case Algorithm::kSlidingWindow:
            expected = algorithm::DecideSlidingWindow(limit, sliding, now, cost);
            break;
          case Algorithm::kSlidingLog:
            expected = algorithm::DecideSlidingLog(limit, log, now, cost);
            break;
          case Algorithm::kTokenBucket:
            expected = algorithm::DecideTokenBucket(limit, bucket, now, cost);
            break;
          case Algorithm::kGcra:
            expected = algorithm::DecideGcra(limit, gcra, now, cost);
            break;
        }
        ASSERT_EQ(CheckOk(*store, "k", limit, cost), expected)
            << Describe(limit) << " step " << step << " cost " << cost << " now " << now;
      }
      expired += store->Stats().expired;
    }
  }
  EXPECT_GT(expired, 1000u);  // The states did expire, many times over.
}

TEST(MemoryStore, PeekRecordsNothing) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{.limit = 3, .period = seconds(1)};
  EXPECT_EQ(Peek(*store, "k", limit), Allowed(3, 3, seconds(1)));
  EXPECT_EQ(store->Stats().entries, 0u);
  EXPECT_TRUE(CheckOk(*store, "k", limit).allowed);
  EXPECT_EQ(Peek(*store, "k", limit), Allowed(3, 2, seconds(1)));
  EXPECT_EQ(Peek(*store, "k", limit), Allowed(3, 2, seconds(1)));
}

TEST(MemoryStore, CostAboveCapacityIsNeverAdmittedAndRecordsNothing) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Decision d = CheckOk(*store, "k", Limit{.limit = 3, .period = seconds(1)}, 4);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, Decision::kNever);
  EXPECT_EQ(store->Stats().entries, 0u);
}

TEST(MemoryStore, InvalidInputIsInvalidArgumentAndRecordsNothing) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit good{.limit = 3, .period = seconds(1)};
  const std::vector<std::pair<std::string, Limit>> bad_limits = {
      {"limit 0", Limit{.limit = 0}},
      {"period 1.5 ms", Limit{.limit = 1, .period = microseconds(1500)}},
      {"burst on fixed window", Limit{.limit = 1, .burst = 2}},
      {"sliding log over its cap", Limit{.algorithm = Algorithm::kSlidingLog, .limit = 100'001}},
  };
  for (const auto& [name, limit] : bad_limits) {
    EXPECT_EQ(store->Check("k", limit, 1).status().code(), absl::StatusCode::kInvalidArgument)
        << name;
  }
  EXPECT_EQ(store->Check("", good, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Check("k", good, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Check("k", good, kMaxCost + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::optional<absl::Status> async_status;
  store->CheckAsync("", good, 1,
                    [&](const absl::StatusOr<Decision>& d) { async_status = d.status(); });
  ASSERT_TRUE(async_status.has_value());
  EXPECT_EQ(async_status->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Stats().entries, 0u);
  EXPECT_EQ(Peek(*store, "k", good).remaining, 3);
}

TEST(MemoryStore, ClockOutsideTheAlgorithmsRangeIsInternal) {
  ManualClock clock(microseconds(-1));
  auto store = NewStore(clock);
  EXPECT_EQ(store->Check("k", Limit{}, 1).status().code(), absl::StatusCode::kInternal);
  clock.Set(microseconds(int64_t{1} << 52));
  EXPECT_EQ(store->Check("k", Limit{}, 1).status().code(), absl::StatusCode::kInternal);
  clock.Set(microseconds((int64_t{1} << 52) - 1));
  EXPECT_TRUE(CheckOk(*store, "k", Limit{}).allowed);
}

TEST(MemoryStore, CheckAsyncRunsItsCallbackInline) {
  ManualClock clock;
  auto store = NewStore(clock);
  std::optional<absl::StatusOr<Decision>> result;
  store->CheckAsync("k", Limit{.limit = 2}, 1,
                    [&](absl::StatusOr<Decision> d) { result = std::move(d); });
  ASSERT_TRUE(result.has_value());  // Already called: the callback ran before CheckAsync returned.
  ASSERT_TRUE(result->ok());
  EXPECT_EQ((*result)->remaining, 1);
}

TEST(MemoryStore, KeysAreIndependentIncludingLongAndSimilarOnes) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit limit{.limit = 1, .period = seconds(1)};
  const std::vector<std::string> keys = {"a",
                                         std::string("a\0", 2),
                                         std::string(15, 'k'),
                                         std::string(16, 'k'),
                                         std::string(17, 'k'),
                                         "tenant:acme:route:/v1/orders:user:1234567890"};
  for (const std::string& key : keys) EXPECT_TRUE(CheckOk(*store, key, limit).allowed) << key;
  for (const std::string& key : keys) EXPECT_FALSE(CheckOk(*store, key, limit).allowed) << key;
  EXPECT_EQ(store->Stats().entries, keys.size());
}

// Verifies that a key's state is reset when a check under another algorithm records on it, and
// only then: a peek or a denial under the other algorithm leaves it alone.
TEST(MemoryStore, SwitchingAlgorithmOnAKeyResetsItsState) {
  ManualClock clock;
  auto store = NewStore(clock);
  const Limit fixed{.algorithm = Algorithm::kFixedWindow, .limit = 1, .period = seconds(10)};
  const Limit gcra{.algorithm = Algorithm::kGcra, .limit = 2, .period = seconds(10)};
  const Limit log{.algorithm = Algorithm::kSlidingLog, .limit = 1, .period = seconds(10)};
  EXPECT_TRUE(CheckOk(*store, "k", fixed).allowed);
  EXPECT_FALSE(CheckOk(*store, "k", fixed).allowed);
  EXPECT_EQ(Peek(*store, "k", gcra).remaining, 2);  // A fresh GCRA state...
  EXPECT_FALSE(CheckOk(*store, "k", gcra, 3).allowed);
  EXPECT_FALSE(CheckOk(*store, "k", fixed).allowed);  // ...that did not touch the fixed window.
  EXPECT_EQ(CheckOk(*store, "k", gcra), Allowed(2, 1, seconds(5)));
  EXPECT_TRUE(CheckOk(*store, "k", fixed).allowed);  // The GCRA admission replaced it.
  EXPECT_TRUE(CheckOk(*store, "k", log).allowed);    // Out-of-line state in, then out again.
  EXPECT_FALSE(CheckOk(*store, "k", log).allowed);
  EXPECT_TRUE(CheckOk(*store, "k", gcra).allowed);
  EXPECT_EQ(Peek(*store, "k", log).remaining, 1);
  EXPECT_EQ(store->Stats().entries, 1u);
}

// Verifies that time comes only from the injected Clock. At a manual time a day after the epoch,
// decades from the real one, the window, the waits and the expiry are exact to the microsecond of
// the manual clock; any read of a real clock would shift them. Checks at one manual time give
// the same decisions however much real time passes between them.
TEST(MemoryStore, TimeComesOnlyFromTheInjectedClock) {
  ManualClock clock(seconds(86'400));
  auto store = NewStore(clock, {.sweep_interval = seconds(3600)});
  const Limit limit{.limit = 1, .period = seconds(60)};
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(1, 0, seconds(60)));
  clock.Advance(seconds(60) - microseconds(1));
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(CheckOk(*store, "k", limit), Denied(1, 0, microseconds(1), microseconds(1)));
  }
  EXPECT_EQ(store->SweepExpired(), 0u);
  clock.Advance(microseconds(1));
  EXPECT_EQ(store->SweepExpired(), 1u);
  EXPECT_EQ(CheckOk(*store, "k", limit), Allowed(1, 0, seconds(60)));
}

}  // namespace
}  // namespace sluice
