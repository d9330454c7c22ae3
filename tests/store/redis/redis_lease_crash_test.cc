// A leaseholder that crashes (docs/redis.md, "Leases", Unspent units): a child process takes a
// lease on a key through its own leased store and is SIGKILLed holding it, so its destructor never
// gives the units back. Measured against the same redis-server: the stranded units are exactly the
// child's outstanding grant (others admit the limit less that grant and no less), the grant is
// within the stated bound (half of what remained at the grant, at most lease_max_units), and
// once the window (fixed_window) or the lease (token_bucket, gcra: then the bucket refills as
// usual) has ended, the full limit is available again. Windows follow Redis TIME, which cannot be
// moved: the test waits for real window boundaries (2 s windows), bounded.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "tests/store/redis/lease_test_support.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisNowUs;
using ::sluice::testing::RedisServer;
using std::chrono::milliseconds;

constexpr int64_t kLimit = 1000;
constexpr auto kPeriod = std::chrono::seconds(2);
constexpr int64_t kPeriodUs = 2'000'000;
constexpr int64_t kMaxUnits = 100;  // the child's lease_max_units

// Waits (bounded by the distance) until Redis's clock reaches `at_us`.
void WaitForRedisTime(const RedisServer& server, int64_t at_us) {
  const int64_t left = at_us - RedisNowUs(server);
  if (left > 0) std::this_thread::sleep_for(std::chrono::microseconds(left));
  while (RedisNowUs(server) < at_us) std::this_thread::sleep_for(milliseconds(1));
}

// What the leaseholder did before it was killed.
struct Holder {
  int64_t admitted = 0;   // units its decisions admitted
  int64_t granted = 0;    // units leased to it (LeaseStats::units_granted)
  int64_t spent = 0;      // of which it spent (LeaseStats::local_admits, cost 1 each)
  int64_t remaining = 0;  // what Redis had left after its grant
};

struct Case {
  Algorithm algorithm;
  // Units another instance spends before the holder leases (so that half of what remains, not
  // lease_max_units, bounds the grant).
  int64_t spent_before;
};

class RedisLeaseCrashTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  Limit LimitOf() const {
    return Limit{.algorithm = GetParam().algorithm, .limit = kLimit, .period = kPeriod};
  }

  // Forks the leaseholder, before this process starts any thread of its own: the child opens its
  // own leased store and waits for Go(); then it takes an exact decision of cost 10 and, 20 ms
  // later (a rate to size the lease by), a leased one of cost 1, reports, and holds its lease
  // until it is killed: no destructor runs, nothing is given back.
  void ForkHolder() {
    int go[2];
    int report[2];
    ASSERT_EQ(pipe(go), 0);
    ASSERT_EQ(pipe(report), 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      close(go[1]);
      close(report[0]);
      std::string line = "error";
      absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(
          {.url = absl::StrCat(server_->Url(), "?lease=true&lease_refresh_ms=60000&lease_ttl_ms=",
                               kPeriodUs / 1000, "&lease_max_units=", kMaxUnits),
           .command_timeout = milliseconds(5000)});
      char byte = 0;
      if (store.ok() && (*store)->WaitForConnection(milliseconds(10000)).ok() &&
          read(go[0], &byte, 1) == 1) {
        absl::StatusOr<Decision> first = (*store)->Check("k", LimitOf(), 10);
        std::this_thread::sleep_for(milliseconds(20));
        absl::StatusOr<Decision> second = (*store)->Check("k", LimitOf(), 1);
        if (first.ok() && second.ok()) {
          const LeaseStats st = (*store)->Stats().lease;
          line = absl::StrCat((first->allowed ? 10 : 0) + (second->allowed ? 1 : 0), " ",
                              st.units_granted, " ", st.local_admits, " ", second->remaining);
        }
      }
      line += "\n";
      (void)!write(report[1], line.data(), line.size());
      for (;;) pause();
    }
    close(go[0]);
    close(report[1]);
    go_fd_ = go[1];
    report_fd_ = report[0];
  }

  // Lets the holder lease, and reads its report into `holder`.
  void Go(Holder& holder) {
    const char byte = 1;
    ASSERT_EQ(write(go_fd_, &byte, 1), 1);
    std::string line;
    char buffer[256];
    while (line.find('\n') == std::string::npos) {
      const ssize_t n = read(report_fd_, buffer, sizeof(buffer));
      if (n <= 0) break;
      line.append(buffer, static_cast<size_t>(n));
    }
    const std::vector<std::string> parts = absl::StrSplit(absl::StripAsciiWhitespace(line), ' ');
    ASSERT_TRUE(parts.size() == 4 && absl::SimpleAtoi(parts[0], &holder.admitted) &&
                absl::SimpleAtoi(parts[1], &holder.granted) &&
                absl::SimpleAtoi(parts[2], &holder.spent) &&
                absl::SimpleAtoi(parts[3], &holder.remaining))
        << "leaseholder: " << line;
  }

  void KillHolder() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  void TearDown() override {
    KillHolder();
    if (go_fd_ >= 0) close(go_fd_);
    if (report_fd_ >= 0) close(report_fd_);
  }

  pid_t pid_ = -1;
  int go_fd_ = -1;
  int report_fd_ = -1;
  std::unique_ptr<RedisServer> server_;
};

// Checks `key` with cost 1 through `store` until the first denial (at most `n` times); returns
// how many passed: what the store has to give right now.
int64_t Burst(RedisStore& store, const Limit& limit, int64_t n) {
  int64_t admitted = 0;
  for (int64_t i = 0; i < n; ++i) {
    absl::StatusOr<Decision> d = store.Check("k", limit);
    EXPECT_TRUE(d.ok()) << d.status();
    if (!d.ok() || !d->allowed) break;
    ++admitted;
  }
  return admitted;
}

TEST_P(RedisLeaseCrashTest, CrashedHolderStrandsAtMostItsGrantUntilTheLeaseEnds) {
  const Limit limit = LimitOf();
  const bool window = GetParam().algorithm == Algorithm::kFixedWindow;
  // Start at a window's beginning, so that the whole crash and its measurement fit in one window.
  const int64_t start_us = RedisNowUs(*server_);
  ASSERT_GT(start_us, 0);
  if (window) WaitForRedisTime(*server_, start_us - start_us % kPeriodUs + kPeriodUs + 1000);

  ASSERT_NO_FATAL_FAILURE(ForkHolder());
  // Another instance: exact (no lease), so that what it admits measures Redis's state alone.
  absl::StatusOr<std::unique_ptr<RedisStore>> other =
      RedisStore::Create({.url = server_->Url(), .command_timeout = milliseconds(5000)});
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->WaitForConnection(milliseconds(10000)).ok());
  const int64_t t0 = RedisNowUs(*server_);
  if (GetParam().spent_before > 0) {
    absl::StatusOr<Decision> spent = (*other)->Check("k", limit, GetParam().spent_before);
    ASSERT_TRUE(spent.ok()) << spent.status();
    ASSERT_TRUE(spent->allowed);
  }
  Holder holder;
  ASSERT_NO_FATAL_FAILURE(Go(holder));
  KillHolder();

  EXPECT_EQ(holder.admitted, 11);
  EXPECT_EQ(holder.spent, 0);
  const int64_t outstanding = holder.granted - holder.spent;
  ASSERT_GT(outstanding, 0) << "the holder was leased nothing";
  // The stated bound: half of what remained at its grant, at most lease_max_units.
  const int64_t remained = holder.remaining + holder.granted;
  EXPECT_LE(holder.granted, std::min(kMaxUnits, remained / 2));

  // The others admit what is left: the limit less what was admitted and the stranded grant.
  const int64_t admitted = Burst(**other, limit, 2 * kLimit);
  const int64_t t1 = RedisNowUs(*server_);
  const int64_t expected = kLimit - GetParam().spent_before - holder.admitted - outstanding;
  EXPECT_GE(admitted, expected);
  // No more, but what a bucket refills meanwhile (limit x elapsed / period).
  const int64_t refill = window ? 0 : (kLimit * (t1 - t0) + kPeriodUs - 1) / kPeriodUs;
  EXPECT_LE(admitted, expected + refill);
  if (window) {
    EXPECT_EQ(t1 / kPeriodUs, t0 / kPeriodUs) << "the measurement left its window";
  }
  std::printf(
      "%s: %lld units spent before; holder admitted %lld, leased %lld (bound %lld), "
      "killed; others then admitted %lld (limit %lld, bucket refill up to %lld)\n",
      std::string(AlgorithmName(GetParam().algorithm)).c_str(),
      static_cast<long long>(GetParam().spent_before), static_cast<long long>(holder.admitted),
      static_cast<long long>(holder.granted),
      static_cast<long long>(std::min(kMaxUnits, remained / 2)), static_cast<long long>(admitted),
      static_cast<long long>(kLimit), static_cast<long long>(refill));

  // After the window (fixed_window), or once the bucket has refilled, lease record included (the
  // peek's reset_after: the lease's end, then its units refill as usual), the full limit is back.
  absl::StatusOr<Decision> peek = (*other)->Check("k", limit, 0);
  ASSERT_TRUE(peek.ok()) << peek.status();
  const int64_t now = RedisNowUs(*server_);
  EXPECT_LE(peek->reset_after.count(), 2 * kPeriodUs) << "stranded beyond the lease and a period";
  WaitForRedisTime(*server_, window ? now - now % kPeriodUs + kPeriodUs + 1000
                                    : now + peek->reset_after.count() + 1000);
  const int64_t t2 = RedisNowUs(*server_);
  const int64_t again = Burst(**other, limit, 2 * kLimit);
  const int64_t t3 = RedisNowUs(*server_);
  EXPECT_GE(again, kLimit);
  EXPECT_LE(again, kLimit + (window ? 0 : (kLimit * (t3 - t2) + kPeriodUs - 1) / kPeriodUs));
}

INSTANTIATE_TEST_SUITE_P(Algorithms, RedisLeaseCrashTest,
                         ::testing::Values(Case{Algorithm::kFixedWindow, 850},
                                           Case{Algorithm::kFixedWindow, 0},
                                           Case{Algorithm::kTokenBucket, 0},
                                           Case{Algorithm::kGcra, 850}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(AlgorithmName(info.param.algorithm)) + "_after_" +
                                  std::to_string(info.param.spent_before);
                         });

}  // namespace
}  // namespace sluice
