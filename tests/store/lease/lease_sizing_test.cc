// How many store calls a busy key costs (docs/redis.md, "Leases", "Sizing"): a key decided 100 or
// 1,000 times a second by one instance makes at most one script call per 50 decisions once it
// holds a lease, for the algorithms whose leases last long enough (not the sliding log's, which
// last at most a 50th of the period). On the fake lease source and a manual clock.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "src/store/lease/lease_store.h"
#include "tests/store/lease/fake_lease_source.h"
#include "tests/testing/manual_clock.h"

namespace sluice::internal {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct Load {
  Algorithm algorithm;
  int per_second;
};

class LeaseSizingTest : public ::testing::TestWithParam<Load> {
 protected:
  testing::ManualClock clock_{seconds(1'700'000'040)};
  testing::FakeLeaseSource source_{clock_};
  testing::FakeLeaseSourceStore exact_{source_};
};

TEST_P(LeaseSizingTest, BusyKeyMakesAtMostOneCallPerFiftyDecisions) {
  const Load load = GetParam();
  // A limit no run reaches, of one hour: the fake's leases end with it, so the store's calls
  // are the lease store's own sizing at work.
  Limit limit{.algorithm = load.algorithm, .limit = 100'000, .period = std::chrono::hours(1)};
  if (load.algorithm == Algorithm::kTokenBucket || load.algorithm == Algorithm::kGcra) {
    limit.burst = limit.limit;
  }
  LeaseStore store(exact_, source_,
                   LeaseOptions{.maintain_every = milliseconds(0), .clock = &clock_});
  const int decisions = load.per_second * 10;
  const microseconds gap = microseconds(1'000'000 / load.per_second);
  for (int i = 0; i < decisions; ++i) {
    absl::StatusOr<Decision> d = store.Check("k", limit);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(d->allowed) << "decision " << i << ": remaining " << d->remaining
                            << ", retry_after " << d->retry_after.count() << ", local "
                            << d->answered_locally;
    clock_.Advance(gap);
  }
  // The first request leases nothing, the second starts the leases.
  EXPECT_LE(source_.calls() - 2, decisions / 50)
      << source_.calls() << " calls for " << decisions << " decisions";
  const LeaseStats stats = store.Stats();
  EXPECT_GE(stats.local_admits, static_cast<uint64_t>(decisions * 9 / 10));
  // Units do not pile up here (they would idle while another instance is denied): at most about
  // a second's worth is held, two refresh targets of 500 ms.
  EXPECT_LE(stats.units_granted - stats.local_admits, static_cast<uint64_t>(load.per_second))
      << stats.units_granted << " granted, " << stats.local_admits << " spent";
}

INSTANTIATE_TEST_SUITE_P(
    Loads, LeaseSizingTest,
    ::testing::Values(Load{Algorithm::kFixedWindow, 100}, Load{Algorithm::kFixedWindow, 1000},
                      Load{Algorithm::kSlidingWindow, 100}, Load{Algorithm::kTokenBucket, 100},
                      Load{Algorithm::kTokenBucket, 1000}, Load{Algorithm::kGcra, 100},
                      Load{Algorithm::kGcra, 1000}),
    [](const ::testing::TestParamInfo<Load>& info) {
      return absl::StrCat(std::string(AlgorithmName(info.param.algorithm)), "_",
                          info.param.per_second);
    });

}  // namespace
}  // namespace sluice::internal
