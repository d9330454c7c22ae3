// Tests of the leasing scripts themselves (lease_all, lease_refund, lease_holders;
// src/lua/lease_entry.lua), run against a real redis-server as EVALSHA scripts and as the
// library's functions (FCALL): argument validation (credits refused), the lease record's
// encoding, the sliding log's member names, and the TTL of every key a lease or a refund writes.
// Their decisions are held to the C++ reference by lua_vectors_test.
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/lease.h"
#include "src/store/lease/lease_source.h"
#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/lua_scripts_for_test.h"
#include "tests/store/redis/lua_test_support.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::CheckForTest;
using ::sluice::testing::LeaseForTest;
using ::sluice::testing::LuaCall;
using ::sluice::testing::LuaCallName;
using ::sluice::testing::RefundForTest;
using ::sluice::testing::ScriptConnection;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kMs = 1'000;
constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;

const std::vector<Algorithm> kAllAlgorithms = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                               Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                               Algorithm::kGcra};

Limit MakeLimit(Algorithm algorithm, int64_t limit, int64_t period_us) {
  Limit l{.algorithm = algorithm, .limit = limit, .period = std::chrono::microseconds(period_us)};
  if (algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) l.burst = limit;
  return l;
}

// A stored value of little-endian unsigned 64-bit fields (docs/redis.md, "State encoding").
std::string PackedState(const std::vector<uint64_t>& fields) {
  std::string v;
  for (uint64_t x : fields) {
    for (int i = 0; i < 8; ++i) v.push_back(static_cast<char>((x >> (8 * i)) & 0xFF));
  }
  return v;
}

internal::LeaseWant Want(int64_t units, int64_t ttl_us = 100 * kMs) {
  return {.units = units, .ttl = std::chrono::microseconds(ttl_us)};
}

class LuaLeaseScriptsTest : public ::sluice::testing::LuaScriptsFixture {
 protected:
  // The server's time in microseconds.
  int64_t ServerNow() {
    absl::StatusOr<RedisReply> t = conn_->Run({"TIME"});
    return std::stoll(t->elements()[0].str()) * kSecond + std::stoll(t->elements()[1].str());
  }
};

// Verifies that every malformed argument of lease_all is refused with SLUICE_BADARG before anything
// is read or written, even after a valid check of the same call.
TEST_P(LuaLeaseScriptsTest, LeaseAllRejectsInvalidArgumentsWithoutWriting) {
  constexpr uint64_t kMax64 = ~uint64_t{0};
  const std::string check = EncodeCheckArgument(0, 10, 1000000, 10, 1);
  const std::string want = EncodeWantArgument(4, 1000);
  const std::vector<std::string> bad_wants = {
      "",
      want.substr(0, kWantArgumentBytes - 1),
      want + "x",
      EncodeWantArgument(4294967297, 1000),   // units above 2^32
      EncodeWantArgument(kMax64, 1000),       // 2^64 - 1
      EncodeWantArgument(4, 999),             // ttl below 1 ms
      EncodeWantArgument(4, 0),               // ttl 0
      EncodeWantArgument(4, 31622400000001),  // ttl above 366 days
      EncodeWantArgument(4, kMax64),          // 2^64 - 1
  };
  for (size_t i = 0; i < bad_wants.size(); ++i) {
    absl::StatusOr<RedisReply> reply =
        conn_->Eval(LeaseAllScriptForTest(), {"k0", "k"},
                    {absl::StrCat(kT0), check, check, want, bad_wants[i]});
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG")) << "want " << i;
  }
  // A bad check, a missing want, a repeated key, no keys, too many keys.
  EXPECT_THAT(conn_
                  ->Eval(LeaseAllScriptForTest(), {"k"},
                         {absl::StrCat(kT0), EncodeCheckArgument(0, 0, 1000000, 10, 1), want})
                  ->str(),
              StartsWith("SLUICE_BADARG"));
  EXPECT_THAT(conn_->Eval(LeaseAllScriptForTest(), {"k"}, {absl::StrCat(kT0), check})->str(),
              StartsWith("SLUICE_BADARG"));
  EXPECT_THAT(
      conn_
          ->Eval(LeaseAllScriptForTest(), {"k", "k"}, {absl::StrCat(kT0), check, check, want, want})
          ->str(),
      HasSubstr("distinct"));
  EXPECT_THAT(conn_->Eval(LeaseAllScriptForTest(), {}, {absl::StrCat(kT0)})->str(),
              StartsWith("SLUICE_BADARG"));
  std::vector<std::string> keys;
  std::vector<std::string> args = {absl::StrCat(kT0)};
  for (int i = 0; i <= kMaxChecksPerScript; ++i) keys.push_back(absl::StrCat("k", i));
  for (int i = 0; i <= kMaxChecksPerScript; ++i) args.push_back(check);
  for (int i = 0; i <= kMaxChecksPerScript; ++i) args.push_back(want);
  EXPECT_THAT(conn_->Eval(LeaseAllScriptForTest(), keys, args)->str(), StartsWith("SLUICE_BADARG"));
  // The production script takes no time argument.
  EXPECT_THAT(conn_->Eval(LeaseAllScript(), {"k"}, {absl::StrCat(kT0), check, want})->str(),
              StartsWith("SLUICE_BADARG"));
  EXPECT_EQ(DbSize(), 0);
}

TEST_P(LuaLeaseScriptsTest, LeaseRefundRejectsInvalidArgumentsWithoutWriting) {
  // A state to refund to, which no refused call may change.
  const Limit limit = MakeLimit(Algorithm::kTokenBucket, 10, kSecond);
  absl::StatusOr<internal::LeasedDecision> granted = LeaseForTest(
      *conn_, LeaseAllScriptForTest(), kT0, {{.key = "k", .limit = limit, .cost = 1}}, {Want(8)});
  ASSERT_TRUE(granted.ok()) << granted.status();
  ASSERT_EQ(granted->grants[0].granted, 4);
  const std::string before = conn_->Run({"GET", "k"})->str();
  const int64_t ends = granted->grants[0].ends_us;

  const std::string check = EncodeCheckArgument(3, 10, 1000000, 10, 0);
  const std::string refund = EncodeRefundArgument(static_cast<uint64_t>(ends), 4, 1);
  const std::vector<std::string> bad_refunds = {
      "",
      refund.substr(0, kRefundArgumentBytes - 1),
      refund + "x",
      EncodeRefundArgument(uint64_t{1} << 53, 4, 1),                     // ends at 2^53
      EncodeRefundArgument(static_cast<uint64_t>(ends), 0, 1),           // granted 0
      EncodeRefundArgument(static_cast<uint64_t>(ends), 4294967297, 1),  // granted above 2^32
      EncodeRefundArgument(static_cast<uint64_t>(ends), 4, 0),           // unspent 0
      EncodeRefundArgument(static_cast<uint64_t>(ends), 4, 5),           // unspent above granted
  };
  for (size_t i = 0; i < bad_refunds.size(); ++i) {
    // The valid refund first: validation precedes every write.
    absl::StatusOr<RedisReply> reply =
        conn_->Eval(LeaseRefundScriptForTest(), {"k", "k"},
                    {absl::StrCat(kT0 + 1), check, check, refund, bad_refunds[i]});
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG")) << "refund " << i;
    EXPECT_EQ(conn_->Run({"GET", "k"})->str(), before) << "refund " << i;
  }
  // A bad check, a missing refund, a key named with two algorithms.
  EXPECT_THAT(
      conn_
          ->Eval(LeaseRefundScriptForTest(), {"k"},
                 {absl::StrCat(kT0 + 1), EncodeCheckArgument(9, 10, 1000000, 10, 0), refund})
          ->str(),
      StartsWith("SLUICE_BADARG"));
  EXPECT_THAT(conn_->Eval(LeaseRefundScriptForTest(), {"k"}, {absl::StrCat(kT0 + 1), check})->str(),
              StartsWith("SLUICE_BADARG"));
  EXPECT_THAT(conn_
                  ->Eval(LeaseRefundScriptForTest(), {"k", "k"},
                         {absl::StrCat(kT0 + 1), check, EncodeCheckArgument(4, 10, 1000000, 10, 0),
                          refund, refund})
                  ->str(),
              HasSubstr("algorithm"));
  EXPECT_EQ(conn_->Run({"GET", "k"})->str(), before);
  EXPECT_EQ(DbSize(), 1);
}

// Verifies that a credit (0x40 added to the algorithm byte) takes no lease: lease_all and
// lease_refund refuse it before anything is read or written (check_all decides credits).
TEST_P(LuaLeaseScriptsTest, LeaseScriptsRefuseCredits) {
  for (Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    const auto byte = static_cast<uint8_t>(algorithm);
    const std::string check = EncodeCheckArgument(byte, 10, 1000000, 10, 1);
    const std::string credit = EncodeCheckArgument(0x40 | byte, 10, 1000000, 10, 1);
    const std::string want = EncodeWantArgument(4, 100 * kMs);
    absl::StatusOr<RedisReply> reply = conn_->Eval(
        LeaseAllScriptForTest(), {"k0", "k"}, {absl::StrCat(kT0), check, credit, want, want});
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG check 2: a credit takes no lease"));
    const std::string refund = EncodeRefundArgument(static_cast<uint64_t>(kT0 + kSecond), 4, 1);
    reply = conn_->Eval(LeaseRefundScriptForTest(), {"k"},
                        {absl::StrCat(kT0), credit, refund});
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG check 1: a credit takes no lease"));
    EXPECT_EQ(DbSize(), 0);
  }
}

// Verifies that refunds of a lease that is not there create nothing: no key, no TTL.
TEST_P(LuaLeaseScriptsTest, RefundsCreateNoState) {
  for (Algorithm algorithm : kAllAlgorithms) {
    const Limit limit = MakeLimit(algorithm, 10, kSecond);
    absl::StatusOr<std::vector<int64_t>> given =
        RefundForTest(*conn_, LeaseRefundScriptForTest(), kT0,
                      {{.check = {.key = "absent", .limit = limit, .cost = 0},
                        .grant = {.granted = 4, .now_us = kT0, .ends_us = kT0 + kSecond},
                        .unspent = 2}});
    ASSERT_TRUE(given.ok()) << given.status();
    EXPECT_EQ((*given)[0], 0) << AlgorithmName(algorithm);
    EXPECT_EQ(DbSize(), 0) << AlgorithmName(algorithm);
  }
}

// Verifies the lease record's encoding (docs/redis.md, "State encoding"): 16 bytes and one
// 16-byte entry per running lease, back to the plain 16 bytes once the leases have ended and a
// write pruned them; and that a malformed record is an error, never a decision.
TEST_P(LuaLeaseScriptsTest, BucketStatesCarryTheLeaseRecord) {
  for (Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kGcra}) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    ASSERT_TRUE(conn_->Run({"FLUSHALL"}).ok());
    const Limit limit = MakeLimit(algorithm, 100, kSecond);
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(LeaseForTest(*conn_, LeaseAllScriptForTest(), kT0 + i,
                               {{.key = "k", .limit = limit, .cost = 1}}, {Want(4, 100 * kMs)})
                      .ok());
    }
    EXPECT_EQ(conn_->Run({"GET", "k"})->str().size(), 16u + 2 * 16u);
    // An exact admission after both leases ended writes the state without the record.
    absl::StatusOr<Decision> d =
        CheckForTest(*conn_, CheckScriptForTest(algorithm), "k", kT0 + 200 * kMs, limit, 1);
    ASSERT_TRUE(d.ok() && d->allowed) << d.status();
    EXPECT_EQ(conn_->Run({"GET", "k"})->str().size(), 16u);

    const uint64_t t0 = static_cast<uint64_t>(kT0);
    for (const std::string& corrupt : {
             PackedState({0, t0, t0 + 10}),                 // half an entry
             PackedState({0, t0, t0 + 10, 0}),              // an empty lease
             PackedState({0, t0, t0 + 20, 1, t0 + 10, 1}),  // out of order
             PackedState({0, t0, uint64_t{1} << 53, 1}),    // beyond the exact integers
         }) {
      ASSERT_TRUE(conn_->Run({"SET", "k", corrupt}).ok());
      absl::StatusOr<RedisReply> reply =
          conn_->Eval(CheckScriptForTest(algorithm), {"k"},
                      {absl::StrCat(kT0),
                       EncodeCheckArgument(static_cast<uint8_t>(algorithm), 100, 1000000, 100, 1)});
      ASSERT_TRUE(reply.ok());
      EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADSTATE"));
      EXPECT_EQ(conn_->Run({"GET", "k"})->str(), corrupt);
    }
  }
}

// Verifies the record's bound: 32 running leases, then grants of 0 until one ends, as the C++
// reference decides.
TEST_P(LuaLeaseScriptsTest, RecordHoldsAtMostThirtyTwoLeases) {
  for (Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kGcra}) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    const Limit limit = MakeLimit(algorithm, 1000, kSecond);
    const std::string key = absl::StrCat("full:", std::string(AlgorithmName(algorithm)));
    algorithm::TokenBucketState tb;
    algorithm::GcraState gcra;
    for (int i = 0; i <= 33; ++i) {
      // 33 grants 1 us apart, then one after the first lease has ended.
      const int64_t now = i < 33 ? kT0 + i : kT0 + 500 * kMs;
      const algorithm::LeaseDecision expected =
          algorithm == Algorithm::kTokenBucket
              ? algorithm::LeaseTokenBucket(limit, tb, now, 1, 1, 500 * kMs)
              : algorithm::LeaseGcra(limit, gcra, now, 1, 1, 500 * kMs);
      absl::StatusOr<internal::LeasedDecision> got =
          LeaseForTest(*conn_, LeaseAllScriptForTest(), now,
                       {{.key = key, .limit = limit, .cost = 1}}, {Want(1, 500 * kMs)});
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->grants[0].granted, expected.granted) << i;
      EXPECT_EQ(got->grants[0].granted, i == 32 ? 0 : 1) << i;
      EXPECT_EQ(got->decision.decisions[0], expected.decision) << i;
    }
    EXPECT_EQ(conn_->Run({"GET", key})->str().size(), 16u + 32 * 16u);
  }
}

// Verifies that a refund keeps the sliding log's members named 1 .. m at the lease's end, so that
// later entries at that microsecond get names of their own (sliding_log.lua).
TEST_P(LuaLeaseScriptsTest, SlidingLogRefundKeepsMemberNamesUnique) {
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 100, kSecond);
  const int64_t ends = kT0 + 100 * kMs;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<internal::LeasedDecision> d =
        LeaseForTest(*conn_, LeaseAllScriptForTest(), kT0 + i,
                     {{.key = "log", .limit = limit, .cost = 0}}, {Want(5, ends - kT0 - i)});
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->grants[0].ends_us, ends);
  }
  absl::StatusOr<std::vector<int64_t>> given =
      RefundForTest(*conn_, LeaseRefundScriptForTest(), kT0 + 2,
                    {{.check = {.key = "log", .limit = limit, .cost = 0},
                      .grant = {.granted = 5, .now_us = kT0, .ends_us = ends},
                      .unspent = 3}});
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ((*given)[0], 3);
  EXPECT_EQ(conn_->Integer({"ZCOUNT", "log", absl::StrCat(ends), absl::StrCat(ends)}), 7);
  // Four units admitted at exactly that microsecond: all four recorded.
  absl::StatusOr<Decision> d =
      CheckForTest(*conn_, CheckScriptForTest(Algorithm::kSlidingLog), "log", ends, limit, 4);
  ASSERT_TRUE(d.ok() && d->allowed) << d.status();
  EXPECT_EQ(conn_->Integer({"ZCOUNT", "log", absl::StrCat(ends), absl::StrCat(ends)}), 11);
  EXPECT_EQ(conn_->Integer({"ZCARD", "log"}), 11);
}

// Verifies, with the production scripts (Redis TIME), that every key a grant or a refund writes
// lives at least as long as its state matters (reset_after of a check right after) and no longer
// than rounding, and that a refund never shortens a window's TTL.
TEST_P(LuaLeaseScriptsTest, GrantsAndRefundsKeepEveryKeyAliveAsLongAsItsState) {
  for (Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    const Limit limit = MakeLimit(algorithm, 100, 10 * kSecond);
    const std::string key = absl::StrCat("sluice:{ttl}:", std::string(AlgorithmName(algorithm)));
    std::vector<std::string> args;
    AppendCheckArguments(limit, 1, args);
    AppendWantArgument(Want(40, 3 * kSecond), args);
    absl::StatusOr<RedisReply> reply = conn_->Eval(LeaseAllScript(), {key}, args);
    ASSERT_TRUE(reply.ok()) << reply.status();
    absl::StatusOr<internal::LeasedDecision> d = ParseLeaseAllReply(*reply, 1);
    ASSERT_TRUE(d.ok()) << d.status() << " " << reply->DebugString();
    const internal::LeaseGrant grant = d->grants[0];
    ASSERT_GT(grant.granted, 0);
    // The store's now, and the lease's end: windows at the window's end, the others 3 s later.
    EXPECT_LE(std::abs(grant.now_us - ServerNow()), kSecond);
    if (algorithm == Algorithm::kFixedWindow || algorithm == Algorithm::kSlidingWindow) {
      EXPECT_EQ(grant.ends_us % (10 * kSecond), 0);
    } else {
      EXPECT_EQ(grant.ends_us, grant.now_us + 3 * kSecond);
    }
    const int64_t reset_ms = (d->decision.decisions[0].reset_after.count() + 999) / 1000;
    int64_t pttl = conn_->Integer({"PTTL", key});
    EXPECT_GE(pttl, reset_ms - 200);
    EXPECT_LE(pttl, reset_ms + 1);
    if (algorithm != Algorithm::kFixedWindow) {
      // The leased units count, or hold the bucket's floor, until at least the lease's end.
      EXPECT_GE(pttl, (grant.ends_us - grant.now_us) / 1000 - 200);
    }

    std::vector<std::string> refund_args;
    AppendCheckArguments(limit, 0, refund_args);
    AppendRefundArgument({.check = {.key = key, .limit = limit, .cost = 0},
                          .grant = grant,
                          .unspent = grant.granted / 2},
                         refund_args);
    absl::StatusOr<RedisReply> refunded = conn_->Eval(LeaseRefundScript(), {key}, refund_args);
    ASSERT_TRUE(refunded.ok()) << refunded.status();
    absl::StatusOr<LeaseRefundReply> r = ParseLeaseRefundReply(*refunded, 1);
    ASSERT_TRUE(r.ok()) << r.status() << " " << refunded->DebugString();
    EXPECT_EQ(r->given[0], grant.granted / 2);
    // What the state needs now, by a peek right after.
    std::vector<std::string> peek_args;
    AppendCheckArguments(limit, 0, peek_args);
    absl::StatusOr<Decision> peek =
        ParseCheckReply(*conn_->Eval(CheckScript(algorithm), {key}, peek_args));
    ASSERT_TRUE(peek.ok()) << peek.status();
    const int64_t after = conn_->Integer({"PTTL", key});
    EXPECT_GT(after, 0);
    EXPECT_GE(after, (peek->reset_after.count() + 999) / 1000 - 200);
    if (algorithm == Algorithm::kFixedWindow || algorithm == Algorithm::kSlidingWindow ||
        algorithm == Algorithm::kSlidingLog) {
      EXPECT_GE(after, pttl - 200) << "a refund shortened the key's life";
    }
  }
}

// lease_holders (test time from ARGV[1]): counts the records that have not ended, renews an id's
// record rather than adding one, and keeps its key alive exactly as long as its latest record.
TEST_P(LuaLeaseScriptsTest, LeaseHoldersCountsRecordsUntilTheyEnd) {
  auto announce = [&](int64_t now, const std::string& id, int64_t ttl_us) {
    absl::StatusOr<RedisReply> reply = conn_->Eval(LeaseHoldersScriptForTest(), {"holders"},
                                                   {absl::StrCat(now), id, absl::StrCat(ttl_us)});
    EXPECT_TRUE(reply.ok()) << reply.status();
    EXPECT_TRUE(reply->is_integer()) << reply->str();
    return reply->integer();
  };
  EXPECT_EQ(announce(kT0, "a", 3 * kSecond), 1);
  EXPECT_EQ(announce(kT0 + 1 * kSecond, "b", 3 * kSecond), 2);
  EXPECT_EQ(announce(kT0 + 2 * kSecond, "a", 3 * kSecond), 2);  // renewed, not added
  // b's record ends at kT0 + 4 s; a's, renewed, at kT0 + 5 s.
  EXPECT_EQ(announce(kT0 + 4 * kSecond, "c", 3 * kSecond), 2);
  EXPECT_EQ(conn_->Integer({"ZCARD", "holders"}), 2);
  EXPECT_EQ(announce(kT0 + 5 * kSecond, "c", 3 * kSecond), 1);
  // The key has a TTL (the test scripts add an hour of slack to every expiry).
  EXPECT_GT(conn_->Integer({"PTTL", "holders"}), 0);
}

TEST_P(LuaLeaseScriptsTest, LeaseHoldersIsBoundedAndRejectsInvalidArguments) {
  auto call = [&](const std::vector<std::string>& keys, const std::vector<std::string>& args) {
    absl::StatusOr<RedisReply> reply = conn_->Eval(LeaseHoldersScriptForTest(), keys, args);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return *reply;
  };
  const std::string now = absl::StrCat(kT0);
  const std::string ttl = absl::StrCat(kSecond);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {now, "", ttl},                    // empty id
           {now, std::string(65, 'x'), ttl},  // id of 65 bytes
           {now, "a", "999"},                 // ttl below 1 ms
           {now, "a", "3600000001"},          // ttl above an hour
           {now, "a", "-5"},                  // not digits
           {now, "a"},                        // no ttl
       }) {
    EXPECT_THAT(call({"holders"}, args).str(), StartsWith("SLUICE_BADARG"));
  }
  EXPECT_THAT(call({}, {now, "a", ttl}).str(), StartsWith("SLUICE_BADARG"));
  EXPECT_EQ(DbSize(), 0);
  // 10,000 records at most: a new id past them is not recorded, a recorded one is renewed.
  std::vector<std::string> zadd = {"ZADD", "holders"};
  for (int i = 0; i < 10'000; ++i) {
    zadd.push_back(absl::StrCat(kT0 + kSecond));
    zadd.push_back(absl::StrCat("id", i));
  }
  ASSERT_TRUE(conn_->Run(zadd).ok());
  EXPECT_EQ(call({"holders"}, {now, "new", ttl}).integer(), 10'000);
  EXPECT_FALSE(conn_->Run({"ZSCORE", "holders", "new"})->is_string());
  EXPECT_EQ(call({"holders"}, {now, "id7", absl::StrCat(2 * kSecond)}).integer(), 10'000);
  EXPECT_EQ(conn_->Run({"ZSCORE", "holders", "id7"})->str(), absl::StrCat(kT0 + 2 * kSecond));
}

// Verifies, under a random load of grants, refunds, credits and checks with the production
// scripts, that no key is ever left without a TTL.
TEST_P(LuaLeaseScriptsTest, NoKeyIsLeftWithoutATtl) {
  std::mt19937_64 rng(20261206);
  std::map<std::string, internal::LeaseGrant> leases;
  for (int i = 0; i < 1500; ++i) {
    const Algorithm algorithm = kAllAlgorithms[rng() % kAllAlgorithms.size()];
    const std::string key =
        absl::StrCat("sluice:{l", rng() % 20, "}:", std::string(AlgorithmName(algorithm)));
    const Limit limit = MakeLimit(algorithm, 2 + static_cast<int64_t>(rng() % 20),
                                  (1 + static_cast<int64_t>(rng() % 2000)) * kMs);
    std::vector<std::string> args;
    const int op = static_cast<int>(rng() % 4);
    absl::StatusOr<RedisReply> reply;
    if (op == 3) {
      // A credit (check_all), which may shorten a running lease of a bucket.
      AppendCheckArguments(limit, static_cast<int64_t>(rng() % 6), args, /*count_rejected=*/false,
                           /*refund=*/true);
      reply = conn_->Eval(CheckAllScript(), {key}, args);
    } else if (op == 0 && leases.contains(key)) {
      const internal::LeaseGrant grant = leases[key];
      AppendCheckArguments(limit, 0, args);
      AppendRefundArgument({.check = {.key = key, .limit = limit, .cost = 0},
                            .grant = grant,
                            .unspent = 1 + static_cast<int64_t>(rng() % grant.granted)},
                           args);
      reply = conn_->Eval(LeaseRefundScript(), {key}, args);
      leases.erase(key);
    } else if (op == 1) {
      AppendCheckArguments(limit, static_cast<int64_t>(rng() % 3), args);
      reply = conn_->Eval(CheckScript(algorithm), {key}, args);
    } else {
      AppendCheckArguments(limit, static_cast<int64_t>(rng() % 3), args);
      AppendWantArgument(
          Want(static_cast<int64_t>(rng() % 10), 1000 + static_cast<int64_t>(rng() % 2'000'000)),
          args);
      reply = conn_->Eval(LeaseAllScript(), {key}, args);
      if (reply.ok()) {
        absl::StatusOr<internal::LeasedDecision> d = ParseLeaseAllReply(*reply, 1);
        ASSERT_TRUE(d.ok()) << d.status();
        if (d->grants[0].granted > 0) leases[key] = d->grants[0];
      }
    }
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_FALSE(reply->is_error()) << reply->str();
    const int64_t pttl = conn_->Integer({"PTTL", key});
    ASSERT_NE(pttl, -1) << key << " has no TTL after op " << op;
  }
  std::string cursor = "0";
  int scanned = 0;
  do {
    absl::StatusOr<RedisReply> page =
        conn_->Run({"SCAN", cursor, "MATCH", "sluice:*", "COUNT", "1000"});
    ASSERT_TRUE(page.ok() && page->is_array());
    cursor = page->elements()[0].str();
    for (const RedisReply& key : page->elements()[1].elements()) {
      ++scanned;
      EXPECT_NE(conn_->Integer({"PTTL", key.str()}), -1) << key.str() << " has no TTL";
    }
  } while (cursor != "0");
  EXPECT_GT(scanned, 0);
}

INSTANTIATE_TEST_SUITE_P(Calls, LuaLeaseScriptsTest,
                         ::testing::Values(LuaCall::kEvalsha, LuaCall::kFcall), LuaCallName);

}  // namespace
}  // namespace sluice
