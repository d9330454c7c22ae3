// LeaseStore::Maintain() on a fake lease source and a manual clock: unspent units of leases about
// to end go back (sliding log, token bucket, GCRA; never a window's), the instance announces
// itself as a leaseholder, and a failure policy's local share divides by the holders counted.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/failure_policy.h"

#include "src/store/lease/lease_store.h"
#include "tests/store/lease/fake_lease_source.h"
#include "tests/testing/manual_clock.h"

namespace sluice::internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

class LeaseMaintenanceTest : public ::testing::Test {
 protected:
  // No maintenance thread: the test runs each round at the clock's time.
  std::unique_ptr<LeaseStore> Instance() {
    return std::make_unique<LeaseStore>(
        exact_, source_, LeaseOptions{.maintain_every = milliseconds(0), .clock = &clock_});
  }
  // Makes `store` hold a lease on `key`: the first request leases nothing, the second (10 ms
  // later) leases what that rate asks for.
  void Lease(LeaseStore& store, const std::string& key, const Limit& limit) {
    ASSERT_TRUE(store.Check(key, limit)->allowed);
    clock_.Advance(milliseconds(10));
    ASSERT_TRUE(store.Check(key, limit)->allowed);
    ASSERT_GT(store.Stats().units_granted, 0u);
  }
  // Window-aligned start: the fake's leases end 60 s after this.
  testing::ManualClock clock_{seconds(1'700'000'040)};
  testing::FakeLeaseSource source_{clock_};
  testing::FakeLeaseSourceStore exact_{source_};
};

// The fake records every algorithm as a fixed window, so its leases end with the minute; the lease
// store decides what to give back by the limit's algorithm.
const Limit kBucket{.algorithm = Algorithm::kTokenBucket, .limit = 1000, .period = minutes(1)};

TEST_F(LeaseMaintenanceTest, TokenBucketLeaseAboutToEndIsGivenBack) {
  std::unique_ptr<LeaseStore> store = Instance();
  Lease(*store, "k", kBucket);
  const uint64_t granted = store->Stats().units_granted;
  const int64_t counted = source_.Count("k", kBucket);
  // A lease of 60 s is given back in its last quarter, not before.
  clock_.Advance(seconds(44));
  store->Maintain();
  EXPECT_EQ(source_.refund_calls(), 0);
  clock_.Advance(seconds(2));
  store->Maintain();
  EXPECT_EQ(source_.refund_calls(), 1);
  EXPECT_EQ(source_.refunded(), static_cast<int64_t>(granted));
  EXPECT_EQ(source_.Count("k", kBucket), counted - static_cast<int64_t>(granted));
  const LeaseStats stats = store->Stats();
  EXPECT_EQ(stats.units_refunded_ending, granted);
  EXPECT_EQ(stats.units_refunded, granted);
  // The units are gone from here too: the next request is a call to the store.
  const int calls = source_.calls();
  absl::StatusOr<Decision> d = store->Check("k", kBucket);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->answered_locally);
  EXPECT_EQ(source_.calls(), calls + 1);
  // Nothing is given back twice, and not at shutdown either.
  store->Maintain();
  store.reset();
  EXPECT_EQ(source_.refunded(), static_cast<int64_t>(granted));
}

TEST_F(LeaseMaintenanceTest, WindowLeaseIsNotGivenBackBeforeItsWindowEnds) {
  const Limit window{.limit = 1000, .period = minutes(1)};
  std::unique_ptr<LeaseStore> store = Instance();
  Lease(*store, "k", window);
  clock_.Advance(seconds(59));
  store->Maintain();
  EXPECT_EQ(source_.refund_calls(), 0);
  EXPECT_EQ(store->Stats().units_refunded_ending, 0u);
}

TEST_F(LeaseMaintenanceTest, SpentLeaseHasNothingToGiveBack) {
  std::unique_ptr<LeaseStore> store = Instance();
  Lease(*store, "k", kBucket);
  const uint64_t granted = store->Stats().units_granted;
  // Spend all but what a refill would add: the refill is answered inline by the fake.
  for (uint64_t i = 0; i < granted; ++i) ASSERT_TRUE(store->Check("k", kBucket)->allowed);
  const LeaseStats before = store->Stats();
  const uint64_t held = before.units_granted - before.local_admits;
  clock_.Advance(seconds(46));
  store->Maintain();
  EXPECT_EQ(store->Stats().units_refunded_ending, held);
  EXPECT_EQ(source_.refunded(), static_cast<int64_t>(held));
}

TEST_F(LeaseMaintenanceTest, InstancesAnnounceThemselvesAndAreCounted) {
  std::unique_ptr<LeaseStore> a = Instance();
  std::unique_ptr<LeaseStore> b = Instance();
  EXPECT_EQ(a->SharingInstances(), std::nullopt);
  a->Maintain();
  EXPECT_EQ(a->SharingInstances(), 1);
  b->Maintain();
  EXPECT_EQ(b->SharingInstances(), 2);
  EXPECT_EQ(b->Stats().instances_seen, 2u);
  // Once per announce_every (1 s), however often Maintain() runs.
  a->Maintain();
  EXPECT_EQ(source_.announcements(), 2);
  EXPECT_EQ(a->SharingInstances(), 1);
  clock_.Advance(seconds(1));
  a->Maintain();
  EXPECT_EQ(source_.announcements(), 3);
  EXPECT_EQ(a->SharingInstances(), 2);
  // b stops announcing: its record (3 x announce_every) ends, and it is no longer counted.
  clock_.Advance(seconds(3));
  a->Maintain();
  EXPECT_EQ(a->SharingInstances(), 1);
}

TEST_F(LeaseMaintenanceTest, LastCountStandsWhenTheStoreCannotAnswer) {
  std::unique_ptr<LeaseStore> store = Instance();
  source_.Announce("other", seconds(60), [](absl::StatusOr<int64_t>) {});
  store->Maintain();
  ASSERT_EQ(store->SharingInstances(), 2);
  source_.Fail(absl::UnavailableError("down"));
  clock_.Advance(seconds(5));
  store->Maintain();
  EXPECT_EQ(store->SharingInstances(), 2);
}

TEST_F(LeaseMaintenanceTest, ThreadMaintainsWithoutBeingAsked) {
  // The thread runs on its own timer (real time); this waits for its first announcement.
  auto store = std::make_unique<LeaseStore>(
      exact_, source_, LeaseOptions{.maintain_every = milliseconds(1), .clock = &clock_});
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (source_.announcements() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_GT(source_.announcements(), 0);
  store.reset();  // joins the thread
}

// The failure policy's local share, through an outage of the store.
class LocalShareTest : public LeaseMaintenanceTest, public ::testing::WithParamInterface<bool> {};

TEST_P(LocalShareTest, DividesByTheLeaseholdersCountedWhenAsked) {
  const bool divide = GetParam();
  auto lease = Instance();
  LeaseStore* leased = lease.get();
  // Three other instances announced themselves; this one makes four.
  for (const char* id : {"b", "c", "d"}) {
    source_.Announce(id, seconds(60), [](absl::StatusOr<int64_t>) {});
  }
  leased->Maintain();
  ASSERT_EQ(leased->SharingInstances(), 4);
  std::unique_ptr<FailurePolicyStore> store =
      WithFailurePolicy(std::move(lease), {.mode = FailureMode::kLocal,
                                           .expected_instances = 1,
                                           .divide_by_leaseholders = divide,
                                           .clock = &clock_});
  source_.Fail(absl::UnavailableError("redis is down"));
  const Limit limit{.limit = 100, .period = minutes(1)};
  int admitted = 0;
  for (int i = 0; i < 300; ++i) {
    absl::StatusOr<Decision> d = store->Check("k", limit);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->from_fallback);
    admitted += d->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, divide ? 25 : 100);
}

INSTANTIATE_TEST_SUITE_P(Divide, LocalShareTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ByLeaseholders" : "ByExpectedInstances";
                         });

}  // namespace
}  // namespace sluice::internal
