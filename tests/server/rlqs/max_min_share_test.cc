// The allocation rule (docs/rlqs.md, "Fair shares") on the memory allocator, with a manual clock.
#include "src/server/rlqs/max_min_share.h"

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "src/server/rlqs/memory_quota_allocator.h"
#include "tests/testing/manual_clock.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

QuotaShare Report(MemoryQuotaAllocator& allocator, const std::string& client, uint64_t demand,
                  uint64_t limit = 10, seconds ttl = seconds(15), bool top_up = false) {
  QuotaShare out;
  allocator.Allocate({.bucket = "d\x1fk=v",
                      .client = client,
                      .demand = demand,
                      .limit = limit,
                      .ttl = ttl,
                      .top_up = top_up},
                     [&](absl::StatusOr<QuotaShare> share) {
                       ASSERT_TRUE(share.ok()) << share.status();
                       out = *share;
                     });
  return out;
}

TEST(QuotaTtl, ThreeIntervalsInWholeSecondsWithinBounds) {
  EXPECT_EQ(QuotaTtl(seconds(5)), seconds(15));
  EXPECT_EQ(QuotaTtl(seconds(1)), seconds(3));
  EXPECT_EQ(QuotaTtl(milliseconds(1100)), seconds(4));  // 3.3 s rounds up
  EXPECT_EQ(QuotaTtl(milliseconds(0)), seconds(1));     // never unset: Envoy expires it at once
  EXPECT_EQ(QuotaTtl(milliseconds(-5)), seconds(1));
  EXPECT_EQ(QuotaTtl(seconds(3600)), seconds(60));
}

TEST(QuotaMaxTokens, ASaturatedClientsRisingGrantKeepsItsBucketSizeAndNeverExceedsTheGrant) {
  EXPECT_EQ(QuotaMaxTokens(10, 5, /*saturated=*/true), 5u);    // rises: the size is kept
  EXPECT_EQ(QuotaMaxTokens(10, 5, /*saturated=*/false), 10u);  // not denied: the grant
  EXPECT_EQ(QuotaMaxTokens(3, 5, /*saturated=*/true), 3u);     // falls: never above the grant
  EXPECT_EQ(QuotaMaxTokens(10, 0, /*saturated=*/true), 10u);   // no bucket yet: a full one
}

TEST(MaxMinShares, SmallDemandsAreMetAndTheRestSplitsWhatRemains) {
  internal::QuotaRecords records;
  records["a"].demand = 30;
  records["b"].demand = 3;
  records["c"].demand = 2;
  auto shares = internal::MaxMinShares(records, 10);
  EXPECT_EQ(shares["a"], 5u);
  EXPECT_EQ(shares["b"], 3u);
  EXPECT_EQ(shares["c"], 2u);
  records["b"].demand = 30;
  shares = internal::MaxMinShares(records, 10);
  EXPECT_EQ(shares["a"], 4u);  // ties: the later id takes the remainder
  EXPECT_EQ(shares["b"], 4u);
  EXPECT_EQ(shares["c"], 2u);
  records["c"].demand = 30;
  shares = internal::MaxMinShares(records, 10);
  EXPECT_EQ(shares["a"] + shares["b"] + shares["c"], 10u);
  EXPECT_EQ(shares["a"], 3u);
  EXPECT_EQ(shares["c"], 4u);
}

// Three clients with demands 30/s, 3/s, 3/s against 10/s, reporting in turn: at every moment the
// grants still live sum to at most the limit, and after two rounds they are the max-min shares.
TEST(MemoryQuotaAllocator, ThreeClientsConvergeToMaxMinWithoutExceedingTheLimit) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  uint64_t granted[3] = {0, 0, 0};
  const uint64_t demand[3] = {30, 3, 3};
  const std::string ids[3] = {"00a", "00b", "00c"};
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 3; ++i) {
      const QuotaShare share = Report(allocator, ids[i], demand[i]);
      granted[i] = share.granted;
      EXPECT_LE(granted[0] + granted[1] + granted[2], 10u) << "round " << round << " client " << i;
      EXPECT_EQ(share.granted_total, granted[0] + granted[1] + granted[2]);
      clock.Advance(milliseconds(1666));
    }
  }
  EXPECT_EQ(granted[0], 4u);
  EXPECT_EQ(granted[1], 3u);
  EXPECT_EQ(granted[2], 3u);
  const QuotaShare last = Report(allocator, ids[0], 30);
  EXPECT_EQ(last.clients, 3u);
  EXPECT_EQ(last.demand, 36u);
}

// A newcomer is granted only what the live grants leave; the incumbent gives up its surplus at
// its next report, and the newcomer gets its fair share at its own next one.
TEST(MemoryQuotaAllocator, NewcomerWaitsForLiveGrantsToShrink) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  EXPECT_EQ(Report(allocator, "a", 30).granted, 10u);
  EXPECT_EQ(Report(allocator, "b", 30).granted, 0u);  // a may still enforce 10
  clock.Advance(seconds(5));
  EXPECT_EQ(Report(allocator, "a", 30).granted, 5u);
  EXPECT_EQ(Report(allocator, "b", 30).granted, 5u);
}

// A top-up raises a grant held below its share as soon as the others' grants have shrunk, and
// never lowers one: a lowered grant would not be in force until the client heard of it.
TEST(MemoryQuotaAllocator, TopUpOnlyRaisesAGrantHeldBelowItsShare) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  EXPECT_EQ(Report(allocator, "a", 30).granted, 10u);
  QuotaShare b = Report(allocator, "b", 30);
  EXPECT_EQ(b.granted, 0u);
  EXPECT_EQ(b.wanted, 5u);  // held below its share by a's live grant
  clock.Advance(seconds(1));
  b = Report(allocator, "b", 30, 10, seconds(15), /*top_up=*/true);
  EXPECT_EQ(b.granted, 0u);  // a has not reported: nothing freed yet
  clock.Advance(seconds(1));
  EXPECT_EQ(Report(allocator, "a", 30).granted, 5u);
  b = Report(allocator, "b", 30, 10, seconds(15), /*top_up=*/true);
  EXPECT_EQ(b.granted, 5u);
  EXPECT_EQ(b.granted_total, 10u);
  // c arrives: b's share falls to 3, but a later top-up leaves b's grant (and its end) as they
  // are.
  EXPECT_EQ(Report(allocator, "c", 30).granted, 0u);
  clock.Advance(seconds(1));
  b = Report(allocator, "b", 30, 10, seconds(15), /*top_up=*/true);
  EXPECT_EQ(b.granted, 5u);
  EXPECT_EQ(b.wanted, 3u);
  // a's and b's records both end 15 s (and the delivery grace) after t = 2 s, when they were
  // last granted.
  clock.Advance(seconds(14) + kQuotaDeliveryGrace - milliseconds(1));
  EXPECT_EQ(Report(allocator, "c", 30).clients, 3u);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(Report(allocator, "c", 30).clients, 1u);
}

// A client that stops reporting keeps its grant, and its demand counts, until its TTL (and the
// delivery grace: the Envoy started the TTL later than the store) ends;
// then the others get its share at their next report.
TEST(MemoryQuotaAllocator, VanishedClientsShareIsRedistributedAfterItsTtl) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Report(allocator, "a", 30);
  Report(allocator, "b", 30);
  clock.Advance(seconds(5));
  EXPECT_EQ(Report(allocator, "a", 30, 10, seconds(3)).granted, 5u);
  EXPECT_EQ(Report(allocator, "b", 30, 10, seconds(3)).granted, 5u);
  // a vanishes. Before its TTL ends, b's grant cannot grow.
  clock.Advance(seconds(3) + kQuotaDeliveryGrace - milliseconds(1));
  QuotaShare share = Report(allocator, "b", 30, 10, seconds(3));
  EXPECT_EQ(share.granted, 5u);
  EXPECT_EQ(share.clients, 2u);
  clock.Advance(milliseconds(1));
  share = Report(allocator, "b", 30, 10, seconds(3));
  EXPECT_EQ(share.granted, 10u);
  EXPECT_EQ(share.clients, 1u);
}

// Random reports and top-ups from six clients, with time moving by random steps: what the
// clients enforce (the last grant each was sent, a top-up's only when it rose, until its TTL
// ends) never sums past the limit, and every client held below its share is eventually raised.
TEST(MemoryQuotaAllocator, GrantsSentByReportsAndTopUpsNeverSumPastTheLimit) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  constexpr uint64_t kLimit = 20;
  struct Enforced {
    uint64_t grant = 0;
    std::chrono::steady_clock::time_point ends{};
    uint64_t demand = 0;
    seconds ttl{1};
    bool reported = false;
  };
  std::vector<Enforced> clients(6);
  std::mt19937_64 rng(22);
  int raised = 0;
  for (int step = 0; step < 5000; ++step) {
    const size_t i = std::uniform_int_distribution<size_t>(0, clients.size() - 1)(rng);
    Enforced& c = clients[i];
    const bool top_up = c.reported && std::uniform_int_distribution<int>(0, 1)(rng) == 0;
    if (!top_up) {
      c.demand = std::uniform_int_distribution<uint64_t>(0, 2 * kLimit)(rng);
      c.ttl = seconds(std::uniform_int_distribution<int>(1, 4)(rng));
      c.reported = true;
    }
    const QuotaShare share = Report(allocator, std::to_string(i), c.demand, kLimit, c.ttl, top_up);
    if (!top_up || share.granted > c.grant) {
      if (top_up) ++raised;
      c.grant = share.granted;
      c.ends = clock.Now() + c.ttl;  // the Envoy's TTL, from when it got the answer
    }
    uint64_t enforced = 0;
    for (const Enforced& e : clients) {
      if (e.ends > clock.Now()) enforced += e.grant;
    }
    ASSERT_LE(enforced, kLimit) << "step " << step;
    clock.Advance(milliseconds(std::uniform_int_distribution<int>(0, 700)(rng)));
  }
  EXPECT_GT(raised, 50);  // top-ups raised grants, not only left them
}

TEST(MemoryQuotaAllocator, FullBucketGrantsNewcomersNothingAndKeepsNoRecord) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  for (size_t i = 0; i < kMaxQuotaClients; ++i) Report(allocator, std::to_string(i), 0, 100000);
  const QuotaShare share = Report(allocator, "late", 5, 100000);
  EXPECT_EQ(share.granted, 0u);
  EXPECT_EQ(share.clients, kMaxQuotaClients);
}

TEST(MemoryQuotaAllocator, RefusesReportsOutOfBounds) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  const QuotaReport good{.bucket = "b", .client = "c", .demand = 1, .limit = 1, .ttl = seconds(1)};
  std::vector<QuotaReport> bad(5, good);
  bad[0].bucket = "";
  bad[1].client = std::string(kMaxQuotaClientBytes + 1, 'x');
  bad[2].limit = kMaxQuotaLimit + 1;
  bad[3].ttl = seconds(0);  // Envoy would expire the grant at once
  bad[4].ttl = seconds(61);
  for (size_t i = 0; i < bad.size(); ++i) {
    absl::Status status;
    allocator.Allocate(bad[i], [&](absl::StatusOr<QuotaShare> s) { status = s.status(); });
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << i;
  }
}

}  // namespace
}  // namespace sluice
