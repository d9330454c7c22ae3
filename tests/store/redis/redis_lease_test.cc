// The Redis store as a LeaseSource (src/store/redis/redis_lease.h) against a real redis-server:
// grants, denials, the half-of-what-remains cap, when leases end, refunds, the token bucket's and
// GCRA's floor, the TTL of every key written, and the input refused before Redis is asked.
#include "src/store/redis/redis_lease.h"

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "src/store/lease/lease_source.h"
#include "src/store/redis/redis_keys.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using internal::LeasedDecision;
using internal::LeaseGrant;
using internal::LeaseRefund;
using internal::LeaseSource;
using internal::LeaseWant;
using ::sluice::testing::RedisServer;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000;
constexpr int64_t kSecond = 1'000'000;
// Long enough that a window boundary during a test is practically impossible.
constexpr auto kLongPeriod = std::chrono::hours(24 * 366);

const std::vector<Algorithm> kAllAlgorithms = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                               Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                               Algorithm::kGcra};

Limit MakeLimit(Algorithm algorithm, int64_t limit, std::chrono::microseconds period) {
  Limit l{.algorithm = algorithm, .limit = limit, .period = period};
  if (algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) l.burst = limit;
  return l;
}

// A refund of `unspent` units of `grant` on `key` under `limit` (built field by field: GCC 12
// warns of a maybe-uninitialized string in nested designated initializers of a vector).
LeaseRefund RefundOf(std::string key, const Limit& limit, LeaseGrant grant, int64_t unspent) {
  LeaseRefund refund;
  refund.check.key = std::move(key);
  refund.check.limit = limit;
  refund.check.cost = 0;
  refund.grant = grant;
  refund.unspent = unspent;
  return refund;
}

LeaseWant Want(int64_t units, std::chrono::microseconds ttl = milliseconds(100)) {
  return LeaseWant{.units = units, .ttl = ttl};
}

// Waits for one DecideAndLease(); `inline_answer` tells whether it answered on the calling
// thread, before returning (a refusal), rather than on the store's I/O thread. (Whether the answer
// is ready right after the call cannot tell: a fast reply beats the check under a sanitizer.)
absl::StatusOr<LeasedDecision> Lease(LeaseSource& source, const std::vector<LimitCheck>& checks,
                                     const std::vector<LeaseWant>& wants,
                                     bool* inline_answer = nullptr) {
  std::promise<absl::StatusOr<LeasedDecision>> promise;
  std::future<absl::StatusOr<LeasedDecision>> answer = promise.get_future();
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = false;
  source.DecideAndLease(checks, wants,
                        [&promise, &on_caller, caller](absl::StatusOr<LeasedDecision> d) {
                          on_caller = std::this_thread::get_id() == caller;
                          promise.set_value(std::move(d));
                        });
  absl::StatusOr<LeasedDecision> result = answer.get();
  if (inline_answer != nullptr) *inline_answer = on_caller;
  return result;
}

absl::Status Refund(LeaseSource& source, const std::vector<LeaseRefund>& refunds,
                    bool* inline_answer = nullptr) {
  std::promise<absl::Status> promise;
  std::future<absl::Status> answer = promise.get_future();
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = false;
  source.Refund(refunds, [&promise, &on_caller, caller](absl::Status s) {
    on_caller = std::this_thread::get_id() == caller;
    promise.set_value(std::move(s));
  });
  absl::Status result = answer.get();
  if (inline_answer != nullptr) *inline_answer = on_caller;
  return result;
}

class RedisLeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    store_ = MakeStore({});
    ASSERT_NE(store_, nullptr);
    source_ = LeaseSourceOf(*store_);
    ASSERT_NE(source_, nullptr);
  }

  std::unique_ptr<RedisStore> MakeStore(RedisStoreOptions options) {
    options.url = server_->Url();
    // Generous: sanitizer builds on two shared cores must not turn into timeouts.
    if (options.command_timeout == RedisStoreOptions{}.command_timeout) {
      options.command_timeout = milliseconds(5000);
    }
    absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
    if (!store.ok()) return nullptr;
    if (!(*store)->WaitForConnection(milliseconds(10000)).ok()) return nullptr;
    return *std::move(store);
  }

  std::string Command(const std::vector<std::string>& argv) {
    absl::StatusOr<std::string> r = server_->Command(argv);
    return r.ok() ? *r : r.status().ToString();
  }

  int64_t Pttl(const std::string& key, Algorithm algorithm) {
    return std::stoll(
        Command({"PTTL", RedisKeyScheme::Create(kDefaultKeyPrefix)->StateKey(key, algorithm)}));
  }

  // The server's time in microseconds.
  int64_t ServerNow() {
    const std::string t = Command({"TIME"});
    return std::stoll(t.substr(0, t.find(' '))) * kSecond + std::stoll(t.substr(t.find(' ') + 1));
  }

  std::unique_ptr<RedisServer> server_;
  std::unique_ptr<RedisStore> store_;
  LeaseSource* source_ = nullptr;
};

TEST_F(RedisLeaseTest, GrantsHalfOfWhatRemainsForEveryAlgorithm) {
  for (Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    const Limit limit = MakeLimit(algorithm, 10, kLongPeriod);
    const std::string key = absl::StrCat("grant:", std::string(AlgorithmName(algorithm)));
    const int64_t before = ServerNow();
    bool inline_answer = true;
    absl::StatusOr<LeasedDecision> d =
        Lease(*source_, {{.key = key, .limit = limit, .cost = 1}}, {Want(100)}, &inline_answer);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(d->decision.allowed);
    ASSERT_EQ(d->grants.size(), 1u);
    const LeaseGrant& grant = d->grants[0];
    // R = 9 after the request: 4 granted, 5 left.
    EXPECT_EQ(grant.granted, 4);
    EXPECT_EQ(d->decision.decisions[0].remaining, 5);
    EXPECT_GE(grant.now_us, before);
    EXPECT_LE(grant.now_us, ServerNow());
    if (algorithm == Algorithm::kFixedWindow || algorithm == Algorithm::kSlidingWindow) {
      // The window's end.
      const int64_t period = std::chrono::microseconds(kLongPeriod).count();
      EXPECT_EQ(grant.ends_us, grant.now_us - grant.now_us % period + period);
    } else {
      EXPECT_EQ(grant.ends_us, grant.now_us + 100 * kMs);
    }
    // The grant is recorded: an exact check sees 5 left.
    absl::StatusOr<Decision> peek = store_->Check(key, limit, 0);
    ASSERT_TRUE(peek.ok()) << peek.status();
    EXPECT_EQ(peek->remaining, 5);
    EXPECT_FALSE(inline_answer);
  }
}

TEST_F(RedisLeaseTest, ADenialGrantsNothingAndWritesNothing) {
  const Limit limit = MakeLimit(Algorithm::kTokenBucket, 3, kLongPeriod);
  ASSERT_TRUE(store_->Check("full", limit, 3)->allowed);
  const std::string before = Command({"GET", "sluice:{full}:tb"});
  // All or nothing: a second check that would pass is not granted either.
  absl::StatusOr<LeasedDecision> d = Lease(
      *source_,
      {{.key = "other", .limit = limit, .cost = 1}, {.key = "full", .limit = limit, .cost = 1}},
      {Want(10), Want(10)});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->decision.allowed);
  EXPECT_TRUE(d->decision.decisions[0].allowed);  // a peek of "other"
  EXPECT_EQ(d->decision.decisions[0].remaining, 3);
  EXPECT_FALSE(d->decision.decisions[1].allowed);
  EXPECT_EQ(d->grants[0].granted, 0);
  EXPECT_EQ(d->grants[1].granted, 0);
  EXPECT_EQ(d->grants[0].ends_us, 0);
  EXPECT_EQ(Command({"GET", "sluice:{full}:tb"}), before);
  EXPECT_EQ(Command({"EXISTS", "sluice:{other}:tb"}), "0");
}

TEST_F(RedisLeaseTest, SeveralChecksAreGrantedEachFromItsOwnState) {
  const Limit minute = MakeLimit(Algorithm::kFixedWindow, 100, kLongPeriod);
  const Limit bucket = MakeLimit(Algorithm::kGcra, 7, kLongPeriod);
  absl::StatusOr<LeasedDecision> d = Lease(
      *source_,
      {{.key = "{u}:a", .limit = minute, .cost = 2}, {.key = "{u}:b", .limit = bucket, .cost = 1}},
      {Want(1000), Want(1)});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->decision.allowed);
  EXPECT_EQ(d->grants[0].granted, 49);  // 98 div 2
  EXPECT_EQ(d->grants[1].granted, 1);   // want 1 of 6 div 2
  EXPECT_EQ(d->decision.decisions[0].remaining, 49);
  EXPECT_EQ(d->decision.decisions[1].remaining, 5);
  EXPECT_EQ(d->grants[0].now_us, d->grants[1].now_us);
}

TEST_F(RedisLeaseTest, TtlIsClampedToThePeriod) {
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 10, std::chrono::seconds(2));
  absl::StatusOr<LeasedDecision> d = Lease(*source_, {{.key = "clamp", .limit = limit, .cost = 0}},
                                           {Want(2, std::chrono::hours(1))});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->grants[0].ends_us, d->grants[0].now_us + 2 * kSecond);
}

// Verifies a refund per algorithm: the units come back (a peek sees them), and a second refund of
// the same units finds nothing left to give back where the algorithm can tell.
TEST_F(RedisLeaseTest, RefundsGiveUnitsBack) {
  for (Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    const Limit limit = MakeLimit(algorithm, 10, kLongPeriod);
    const std::string key = absl::StrCat("refund:", std::string(AlgorithmName(algorithm)));
    absl::StatusOr<LeasedDecision> d = Lease(*source_, {{.key = key, .limit = limit, .cost = 1}},
                                             {Want(100, std::chrono::hours(1))});
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->grants[0].granted, 4);
    bool inline_answer = true;
    EXPECT_TRUE(Refund(*source_, {RefundOf(key, limit, d->grants[0], 3)}, &inline_answer).ok());
    EXPECT_FALSE(inline_answer);
    absl::StatusOr<Decision> peek = store_->Check(key, limit, 0);
    ASSERT_TRUE(peek.ok()) << peek.status();
    EXPECT_EQ(peek->remaining, 8);
    EXPECT_GT(Pttl(key, algorithm), 0);
  }
}

// Verifies the lease record's floor with the server's own clock: while a lease runs, the bucket
// does not refill past C - G, however long it has had to refill; a refund lifts it.
TEST_F(RedisLeaseTest, BucketsHoldBackWhatRunningLeasesMayStillSpend) {
  for (Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kGcra}) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    // One token per microsecond, 1000 at most.
    Limit limit{.algorithm = algorithm, .limit = 1'000'000, .period = std::chrono::seconds(1)};
    limit.burst = 1000;
    const std::string key = absl::StrCat("floor:", std::string(AlgorithmName(algorithm)));
    absl::StatusOr<LeasedDecision> d = Lease(*source_, {{.key = key, .limit = limit, .cost = 1}},
                                             {Want(400, std::chrono::seconds(1))});
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->grants[0].granted, 400);
    // Exact calls (want 0, which tell the store's time) until the 401 tokens taken have had 1 ms
    // to refill: without the floor the bucket would be full.
    absl::StatusOr<LeasedDecision> later;
    for (int i = 0; i < 100000; ++i) {
      later = Lease(*source_, {{.key = key, .limit = limit, .cost = 0}}, {Want(0)});
      ASSERT_TRUE(later.ok()) << later.status();
      if (later->grants[0].now_us >= d->grants[0].now_us + kMs) break;
    }
    ASSERT_GE(later->grants[0].now_us, d->grants[0].now_us + kMs);
    ASSERT_LT(later->grants[0].now_us, d->grants[0].ends_us);
    EXPECT_EQ(later->decision.decisions[0].remaining, 600);
    // The state holds the record: two fields and one entry.
    EXPECT_EQ(
        Command({"STRLEN", RedisKeyScheme::Create(kDefaultKeyPrefix)->StateKey(key, algorithm)}),
        "32");
    ASSERT_TRUE(Refund(*source_, {RefundOf(key, limit, d->grants[0], 400)}).ok());
    EXPECT_EQ(store_->Check(key, limit, 0)->remaining, 1000);
  }
}

// Verifies that every key a grant writes lives at least as long as its state needs: the
// decision's reset_after (after the grant), which covers the lease's end.
TEST_F(RedisLeaseTest, EveryKeyWrittenHasATtlForItsState) {
  for (Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    const Limit limit = MakeLimit(algorithm, 100, std::chrono::seconds(20));
    const std::string key = absl::StrCat("ttl:", std::string(AlgorithmName(algorithm)));
    absl::StatusOr<LeasedDecision> d = Lease(*source_, {{.key = key, .limit = limit, .cost = 1}},
                                             {Want(10, std::chrono::seconds(5))});
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->grants[0].granted, 10);
    const int64_t reset_ms = (d->decision.decisions[0].reset_after.count() + 999) / 1000;
    const int64_t pttl = Pttl(key, algorithm);
    EXPECT_GE(pttl, reset_ms - 500);
    EXPECT_LE(pttl, reset_ms + 1);
    EXPECT_GE(pttl, (d->grants[0].ends_us - d->grants[0].now_us) / 1000 - 500);
  }
}

// Verifies that input the scripts would refuse never reaches Redis: InvalidArgument, inline.
TEST_F(RedisLeaseTest, RefusesBadInputBeforeAskingRedis) {
  const Limit limit = MakeLimit(Algorithm::kTokenBucket, 10, kLongPeriod);
  const LimitCheck check{.key = "k", .limit = limit, .cost = 1};
  const auto refused = [&](const std::vector<LimitCheck>& checks,
                           const std::vector<LeaseWant>& wants) {
    bool inline_answer = false;
    absl::StatusOr<LeasedDecision> d = Lease(*source_, checks, wants, &inline_answer);
    EXPECT_TRUE(inline_answer);
    return d.status().code() == absl::StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(refused({check}, {Want(-1)}));
  EXPECT_TRUE(refused({check}, {Want(kMaxCost + 1)}));
  EXPECT_TRUE(refused({check}, {Want(1, std::chrono::microseconds(999))}));
  EXPECT_TRUE(refused({check}, {Want(1, std::chrono::hours(24 * 367))}));
  EXPECT_TRUE(refused({check}, {}));
  EXPECT_TRUE(refused({check, check}, {Want(1), Want(1)}));  // the same key twice
  EXPECT_TRUE(refused({}, {}));
  EXPECT_TRUE(refused({{.key = "", .limit = limit, .cost = 1}}, {Want(1)}));
  EXPECT_TRUE(refused({{.key = "k", .limit = Limit{.limit = 0}, .cost = 1}}, {Want(1)}));
  std::vector<LimitCheck> many;
  std::vector<LeaseWant> many_wants;
  for (int i = 0; i <= 64; ++i) {
    many.push_back({.key = absl::StrCat("k", i), .limit = limit, .cost = 1});
    many_wants.push_back(Want(1));
  }
  EXPECT_TRUE(refused(many, many_wants));

  const LeaseGrant grant{.granted = 4, .now_us = 1, .ends_us = 2};
  for (const LeaseRefund& bad : std::vector<LeaseRefund>{
           RefundOf("k", limit, grant, 0),
           RefundOf("k", limit, grant, 5),
           RefundOf("k", limit, {.granted = 0, .now_us = 1, .ends_us = 2}, 1),
           RefundOf("k", limit, {.granted = 4, .now_us = 1, .ends_us = -1}, 1),
           RefundOf("", limit, grant, 1),
       }) {
    bool inline_answer = false;
    EXPECT_EQ(Refund(*source_, {bad}, &inline_answer).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(inline_answer);
  }
  EXPECT_EQ(Refund(*source_, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Command({"DBSIZE"}), "0");
  EXPECT_EQ(store_->Stats().script_calls, 0u);
}

// Verifies the Cluster rule: one leasing call is one slot (refused otherwise, never split), while
// refunds of several slots go as one call per slot. The store's cluster flag on one server routes
// every call there, as cross_slot_test does.
TEST_F(RedisLeaseTest, OnClusterALeasingCallIsOneSlot) {
  std::unique_ptr<RedisStore> cluster = MakeStore({.cluster = true});
  ASSERT_NE(cluster, nullptr);
  LeaseSource* source = LeaseSourceOf(*cluster);
  ASSERT_NE(source, nullptr);
  const Limit limit = MakeLimit(Algorithm::kGcra, 10, kLongPeriod);
  // "a" and "b" hash to different slots; "{t}:a" and "{t}:b" share one.
  absl::StatusOr<LeasedDecision> refused =
      Lease(*source, {{.key = "a", .limit = limit, .cost = 1}, {.key = "b", .limit = limit}},
            {Want(2), Want(2)});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("slot"));
  EXPECT_EQ(Command({"DBSIZE"}), "0");
  absl::StatusOr<LeasedDecision> tagged = Lease(
      *source, {{.key = "{t}:a", .limit = limit, .cost = 1}, {.key = "{t}:b", .limit = limit}},
      {Want(2), Want(2)});
  ASSERT_TRUE(tagged.ok()) << tagged.status();
  EXPECT_EQ(tagged->grants[1].granted, 2);

  // Refunds across slots: each slot's own call.
  absl::StatusOr<LeasedDecision> a = Lease(*source, {{.key = "a", .limit = limit}}, {Want(2)});
  absl::StatusOr<LeasedDecision> b = Lease(*source, {{.key = "b", .limit = limit}}, {Want(2)});
  ASSERT_TRUE(a.ok() && b.ok());
  const uint64_t calls = cluster->Stats().script_calls;
  EXPECT_TRUE(Refund(*source,
                     {RefundOf("a", limit, a->grants[0], 2), RefundOf("b", limit, b->grants[0], 2)})
                  .ok());
  EXPECT_EQ(cluster->Stats().script_calls, calls + 2);
  // Each admitted its request (cost 1) and has its 2 leased units back.
  EXPECT_EQ(cluster->Check("a", limit, 0)->remaining, 9);
  EXPECT_EQ(cluster->Check("b", limit, 0)->remaining, 9);
}

// Verifies the error mapping of the store's other calls: a paused Redis misses the deadline
// (DeadlineExceeded), a stopped one is Unavailable.
TEST_F(RedisLeaseTest, FailuresMapAsTheStoresOtherCalls) {
  std::unique_ptr<RedisStore> quick = MakeStore({.command_timeout = milliseconds(200)});
  ASSERT_NE(quick, nullptr);
  LeaseSource* source = LeaseSourceOf(*quick);
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, 10, kLongPeriod);
  server_->Pause();
  absl::StatusOr<LeasedDecision> paused = Lease(*source, {{.key = "k", .limit = limit}}, {Want(2)});
  const absl::Status refund =
      Refund(*source, {RefundOf("k", limit, {.granted = 2, .now_us = 1, .ends_us = 2}, 1)});
  server_->Resume();
  EXPECT_EQ(paused.status().code(), absl::StatusCode::kDeadlineExceeded) << paused.status();
  EXPECT_EQ(refund.code(), absl::StatusCode::kDeadlineExceeded) << refund;
  server_->Kill();
  EXPECT_EQ(Lease(*source, {{.key = "k", .limit = limit}}, {Want(2)}).status().code(),
            absl::StatusCode::kUnavailable);
}

// A RedisStore that is not the Redis store (a test double) has no LeaseSource.
class NotARedisStore : public RedisStore {
 public:
  absl::Status WaitForConnection(std::chrono::milliseconds) override { return absl::OkStatus(); }
  std::vector<std::string> Warnings() const override { return {}; }
  RedisStoreStats Stats() const override { return {}; }

 protected:
  void Decide(std::span<const LimitCheck>, MultiDecisionCallback done) override {
    std::move(done)(absl::UnimplementedError("test double"));
  }
};

TEST(LeaseSourceOf, IsNullForOtherStores) {
  NotARedisStore other;
  EXPECT_EQ(LeaseSourceOf(other), nullptr);
}

}  // namespace
}  // namespace sluice
