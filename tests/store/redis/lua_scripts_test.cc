// Tests of the Lua scripts themselves, run against a real redis-server, as EVALSHA scripts and as
// the library's functions (FCALL): argument validation, states written by an earlier version,
// sliding-log member uniqueness, the TTL invariant and the all-or-nothing multi-check; credits
// (LimitCheck::refund): refused outside check_all, never creating a key, keeping the sliding
// log's member names and every key's TTL, and RedisStore sending them to check_all.
#include "src/store/redis/lua_scripts.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"
#include "sluice/redis_store.h"

#include "src/store/lease/lease_source.h"
#include "src/store/redis/lua_scripts_for_test.h"
#include "src/store/redis/redis_keys.h"
#include "src/store/redis/redis_lease.h"
#include "tests/store/redis/lua_test_support.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::CheckForTest;
using ::sluice::testing::LuaCall;
using ::sluice::testing::LuaCallName;
using ::sluice::testing::RedisServer;
using ::sluice::testing::ScriptConnection;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;

class LuaScriptsTest : public ::sluice::testing::LuaScriptsFixture {
 protected:
  // Decodes the packed little-endian unsigned 64-bit fields of a binary state.
  static std::vector<uint64_t> StateFields(const std::string& state) {
    std::vector<uint64_t> fields;
    for (size_t at = 0; at + 8 <= state.size(); at += 8) {
      uint64_t v = 0;
      for (int b = 7; b >= 0; --b) {
        v = (v << 8) | static_cast<unsigned char>(state[at + static_cast<size_t>(b)]);
      }
      fields.push_back(v);
    }
    return fields;
  }
};

Limit MakeLimit(Algorithm algorithm, int64_t limit, int64_t period_us,
                std::optional<int64_t> burst = std::nullopt) {
  return Limit{.algorithm = algorithm,
               .limit = limit,
               .period = std::chrono::microseconds(period_us),
               .burst = burst};
}

const std::vector<Algorithm> kAllAlgorithms = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                               Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                               Algorithm::kGcra};

// Verifies that every malformed argument is refused with SLUICE_BADARG and writes nothing, even
// when an earlier check of the same call is valid (validation precedes the first write).
TEST_P(LuaScriptsTest, RejectsInvalidArgumentsWithoutWriting) {
  constexpr uint64_t kMax64 = ~uint64_t{0};
  // A check is kCheckArgumentBytes: any other length is refused, whatever it holds.
  const std::string valid = EncodeCheckArgument(0, 10, 1000000, 10, 1);
  std::vector<std::string> bad = {"", "fixed_window", valid.substr(0, kCheckArgumentBytes - 1),
                                  valid + "x", std::string(kCheckArgumentBytes + 24, '1')};
  // {algorithm, limit, period_us, capacity, cost}, each field out of its bounds.
  for (uint8_t algorithm : {uint8_t{5}, uint8_t{255}}) {
    bad.push_back(EncodeCheckArgument(algorithm, 10, 1000000, 10, 1));
  }
  bad.push_back(EncodeCheckArgument(0, 0, 1000000, 10, 1));                   // limit below 1
  bad.push_back(EncodeCheckArgument(0, 10, 0, 10, 1));                        // period 0
  bad.push_back(EncodeCheckArgument(0, 10, 999, 10, 1));                      // below 1 ms
  bad.push_back(EncodeCheckArgument(0, 10, 1500, 10, 1));                     // not a whole ms
  bad.push_back(EncodeCheckArgument(0, 10, 31622400001000, 10, 1));           // above 366 days
  bad.push_back(EncodeCheckArgument(0, 10, kMax64, 10, 1));                   // 2^64 - 1
  bad.push_back(EncodeCheckArgument(0, 10, 1000000, 11, 1));                  // capacity != limit
  bad.push_back(EncodeCheckArgument(3, 10, 1000000, 0, 1));                   // burst 0
  bad.push_back(EncodeCheckArgument(0, 10, 1000000, 10, 4294967297));         // cost above 2^32
  bad.push_back(EncodeCheckArgument(0, 10, 1000000, 10, kMax64));             // 2^64 - 1
  bad.push_back(EncodeCheckArgument(0, 10, 1000000, 10, uint64_t{1} << 53));  // exactly 2^53

  for (size_t i = 0; i < bad.size(); ++i) {
    for (int position = 0; position < 2; ++position) {
      // position 0: the bad check alone; 1: after a valid check in check_all.
      absl::StatusOr<RedisReply> reply;
      if (position == 0) {
        reply = conn_->Eval(CheckScriptForTest(Algorithm::kFixedWindow), {"k"},
                            {absl::StrCat(kT0), bad[i]});
      } else {
        reply =
            conn_->Eval(CheckAllScriptForTest(), {"k0", "k"}, {absl::StrCat(kT0), valid, bad[i]});
      }
      ASSERT_TRUE(reply.ok()) << reply.status();
      EXPECT_TRUE(reply->is_error()) << "case " << i;
      EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG")) << "case " << i;
      EXPECT_EQ(DbSize(), 0) << "case " << i;
    }
  }
}

TEST_P(LuaScriptsTest, RejectsOutOfBoundsProducts) {
  const std::vector<std::pair<Algorithm, std::string>> cases = {
      {Algorithm::kSlidingLog, EncodeCheckArgument(2, 100001, 1000000, 100001, 1)},
      // 2^32 - 1 per 366 days: limit x period_ms is far above 2^50.
      {Algorithm::kSlidingWindow,
       EncodeCheckArgument(1, 4294967295, 31622400000000, 4294967295, 1)},
      {Algorithm::kTokenBucket, EncodeCheckArgument(3, 1, 1000000, 1125899907, 1)},  // burst x P
      {Algorithm::kGcra, EncodeCheckArgument(4, 1125899907, 1000000, 1, 1)},         // limit x P
  };
  for (const auto& [algorithm, check] : cases) {
    absl::StatusOr<RedisReply> reply =
        conn_->Eval(CheckScriptForTest(algorithm), {"k"}, {absl::StrCat(kT0), check});
    ASSERT_TRUE(reply.ok());
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG")) << AlgorithmName(algorithm);
  }
  EXPECT_EQ(DbSize(), 0);
}

// Verifies that counting rejected hits (the 0x80 bit of the algorithm byte) is refused on every
// algorithm but the fixed window, and beside another check in check_all, writing nothing.
TEST_P(LuaScriptsTest, RejectsCountingRejectedHitsOutsideASingleFixedWindow) {
  for (uint8_t algorithm = 1; algorithm <= 4; ++algorithm) {
    const uint64_t capacity = 10;
    const std::string check = EncodeCheckArgument(0x80 | algorithm, 10, 1000000, capacity, 1);
    const auto a = static_cast<Algorithm>(algorithm);
    absl::StatusOr<RedisReply> reply =
        conn_->Eval(CheckScriptForTest(a), {"k"}, {absl::StrCat(kT0), check});
    ASSERT_TRUE(reply.ok());
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG")) << AlgorithmName(a);
    reply = conn_->Eval(CheckAllScriptForTest(), {"k"}, {absl::StrCat(kT0), check});
    ASSERT_TRUE(reply.ok());
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG")) << AlgorithmName(a);
  }
  const std::string counting = EncodeCheckArgument(0x80, 10, 1000000, 10, 1);
  const std::string valid = EncodeCheckArgument(0, 10, 1000000, 10, 1);
  absl::StatusOr<RedisReply> reply =
      conn_->Eval(CheckAllScriptForTest(), {"k0", "k1"}, {absl::StrCat(kT0), valid, counting});
  ASSERT_TRUE(reply.ok());
  EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG check 2: a check counting rejected hits"));
  EXPECT_EQ(DbSize(), 0);
}

TEST_P(LuaScriptsTest, RejectsBadShapeAndBadTestTime) {
  std::vector<std::string> check;
  AppendCheckArguments(MakeLimit(Algorithm::kGcra, 10, kSecond), 1, check);
  const std::vector<std::string> args = {absl::StrCat(kT0), check[0]};
  // Two keys for the single check; no keys; a missing argument; a bad test time.
  EXPECT_THAT(conn_->Eval(CheckScriptForTest(Algorithm::kGcra), {"a", "b"}, args)->str(),
              StartsWith("SLUICE_BADARG"));
  EXPECT_THAT(conn_->Eval(CheckScriptForTest(Algorithm::kGcra), {}, args)->str(),
              StartsWith("SLUICE_BADARG"));
  EXPECT_THAT(conn_->Eval(CheckAllScriptForTest(), {}, {absl::StrCat(kT0)})->str(),
              StartsWith("SLUICE_BADARG"));
  EXPECT_THAT(conn_->Eval(CheckScriptForTest(Algorithm::kGcra), {"a"}, {absl::StrCat(kT0)})->str(),
              StartsWith("SLUICE_BADARG"));
  for (const char* now : {"-1", "nan", "1e15", "4503599627370496", "9007199254740992", ""}) {
    EXPECT_THAT(conn_->Eval(CheckScriptForTest(Algorithm::kGcra), {"a"}, {now, check[0]})->str(),
                StartsWith("SLUICE_BADARG"))
        << now;
  }
  // The production script takes no time argument: passing one is refused, never used.
  EXPECT_THAT(conn_->Eval(CheckScript(Algorithm::kGcra), {"a"}, args)->str(),
              StartsWith("SLUICE_BADARG"));
  // Too many checks for one call.
  std::vector<std::string> keys;
  std::vector<std::string> multi;
  for (int i = 0; i <= kMaxChecksPerScript; ++i) {
    keys.push_back(absl::StrCat("k", i));
    multi.push_back(check[0]);
  }
  EXPECT_THAT(conn_->Eval(CheckAllScript(), keys, multi)->str(), StartsWith("SLUICE_BADARG"));
  // One key named twice with two algorithms.
  std::vector<std::string> twice = check;
  AppendCheckArguments(MakeLimit(Algorithm::kTokenBucket, 10, kSecond), 1, twice);
  EXPECT_THAT(conn_->Eval(CheckAllScript(), {"k", "k"}, twice)->str(), HasSubstr("algorithm"));
  EXPECT_EQ(DbSize(), 0);
}

// Verifies that each algorithm's script refuses a check of another algorithm, writing nothing:
// the store picks the script by the limit's algorithm, and a mismatch must never be decided
// under the wrong algorithm.
TEST_P(LuaScriptsTest, EachCheckScriptRefusesOtherAlgorithms) {
  for (Algorithm script_algorithm : kAllAlgorithms) {
    for (Algorithm check_algorithm : kAllAlgorithms) {
      std::vector<std::string> args;
      AppendCheckArguments(MakeLimit(check_algorithm, 10, kSecond), 1, args);
      absl::StatusOr<RedisReply> reply = conn_->Eval(CheckScript(script_algorithm), {"k"}, args);
      ASSERT_TRUE(reply.ok()) << reply.status();
      if (script_algorithm == check_algorithm) {
        EXPECT_TRUE(ParseCheckReply(*reply).ok()) << reply->DebugString();
        ASSERT_TRUE(conn_->Run({"DEL", "k"}).ok());
      } else {
        EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG"))
            << AlgorithmName(script_algorithm) << " script, " << AlgorithmName(check_algorithm);
      }
      EXPECT_EQ(DbSize(), 0);
    }
  }
}

// Verifies that invalid arguments do not even trim an existing sliding log (trimming is a write).
TEST_P(LuaScriptsTest, InvalidArgumentsDoNotTrimAnExistingLog) {
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 5, kSecond);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        CheckForTest(*conn_, CheckScriptForTest(Algorithm::kSlidingLog), "log", kT0 + i, limit, 1)
            .ok());
  }
  const std::vector<std::string> args = {absl::StrCat(kT0 + 10 * kSecond),
                                         EncodeCheckArgument(2, 5, 1000000, 5, 4294967297)};
  EXPECT_THAT(conn_->Eval(CheckScriptForTest(Algorithm::kSlidingLog), {"log"}, args)->str(),
              StartsWith("SLUICE_BADARG"));
  EXPECT_EQ(conn_->Integer({"ZCOUNT", "log", "0", "+inf"}), 3);
}

TEST_P(LuaScriptsTest, CorruptStateIsAnErrorNotADecision) {
  // The fixed window's state is 24 bytes, '<I8I8I8' (docs/redis.md); an earlier version's
  // 'window_start:count' is still read. Anything else is SLUICE_BADSTATE and stays as it was.
  const LuaScript& script = CheckScriptForTest(Algorithm::kFixedWindow);
  const std::vector<std::string> args = {absl::StrCat(kT0),
                                         EncodeCheckArgument(0, 10, 1000000, 10, 1)};
  std::string huge_window(24, '\0');
  huge_window[6] = '\x20';  // 2^53: beyond the exact integers
  for (const std::string& corrupt : std::vector<std::string>{
           "oops:1", "1", "1:2:3", "-1:1", "1.5:1", "1:", ":1", " 1:1", "1:99999999999999999999",
           "1:9007199254740993", std::string(23, 'x'), std::string(25, 'x'), huge_window}) {
    ASSERT_TRUE(conn_->Run({"SET", "k", corrupt}).ok());
    EXPECT_THAT(conn_->Eval(script, {"k"}, args)->str(), StartsWith("SLUICE_BADSTATE")) << corrupt;
    EXPECT_EQ(conn_->Run({"GET", "k"})->str(), corrupt);
  }
  ASSERT_TRUE(conn_->Run({"SET", "s", "x"}).ok());
  EXPECT_TRUE(conn_->Eval(script, {"s"}, args)->is_error());
  // A key of another type (someone else's hash) is an error too, never a decision.
  ASSERT_TRUE(conn_->Run({"HSET", "h", "w", "1", "c", "1"}).ok());
  EXPECT_TRUE(conn_->Eval(script, {"h"}, args)->is_error());
}

// Verifies that the decimal states of an earlier version are read on with the same meaning (a
// rolling upgrade keeps every count), and rewritten in the binary form by the next admission.
TEST_P(LuaScriptsTest, ReadsTheDecimalStatesOfAnEarlierVersion) {
  const int64_t window = kT0 - kT0 % (10 * kSecond);
  struct Case {
    Algorithm algorithm;
    std::string state;  // as the earlier version wrote it
    int64_t remaining;  // after one more unit at kT0
  };
  const std::vector<Case> cases = {
      {Algorithm::kFixedWindow, absl::StrCat(window, ":3"), 6},
      {Algorithm::kSlidingWindow, absl::StrCat(window, ":3:0"), 6},
      // Token bucket and GCRA, burst 10 over 10 s: 3 units spent at kT0.
      {Algorithm::kTokenBucket, absl::StrCat(3 * 10 * kSecond, ":", kT0), 6},
      {Algorithm::kGcra, absl::StrCat(kT0 + 3 * kSecond, ":0"), 6},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(AlgorithmName(c.algorithm));
    ASSERT_TRUE(conn_->Run({"SET", "k", c.state}).ok());
    absl::StatusOr<Decision> d = CheckForTest(*conn_, CheckScriptForTest(c.algorithm), "k", kT0,
                                              MakeLimit(c.algorithm, 10, 10 * kSecond), 1);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed);
    EXPECT_EQ(d->remaining, c.remaining);
    EXPECT_NE(conn_->Run({"GET", "k"})->str(), c.state);
    EXPECT_EQ(conn_->Run({"GET", "k"})->str().size() % 8, 0u);
  }
  // A sliding log of the earlier version: members named by a sequence, and '#' = -sequence.
  ASSERT_TRUE(conn_
                  ->Run({"ZADD", "log", "-3", "#", absl::StrCat(kT0 - 3), "1",
                         absl::StrCat(kT0 - 2), "2", absl::StrCat(kT0 - 1), "3"})
                  .ok());
  const Limit log_limit = MakeLimit(Algorithm::kSlidingLog, 3, 10 * kSecond);
  absl::StatusOr<Decision> denied =
      CheckForTest(*conn_, CheckScriptForTest(Algorithm::kSlidingLog), "log", kT0, log_limit, 1);
  ASSERT_TRUE(denied.ok()) << denied.status();
  // The oldest entry (kT0 - 3) must leave first: '#' is not counted, nor taken for an entry.
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->retry_after.count(), 10 * kSecond - 3);
  EXPECT_EQ(denied->reset_after.count(), 10 * kSecond - 1);
  absl::StatusOr<Decision> later = CheckForTest(*conn_, CheckScriptForTest(Algorithm::kSlidingLog),
                                                "log", kT0 + 10 * kSecond - 2, log_limit, 1);
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_TRUE(later->allowed);
  EXPECT_EQ(later->remaining, 1);
}

// Reliability T3: many admits in one frozen microsecond are all counted.
TEST_P(LuaScriptsTest, SlidingLogMembersAreUniqueWithinOneMicrosecond) {
  constexpr int kRequests = 10'000;
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 100'000, 60 * kSecond);
  int admitted = 0;
  for (int i = 0; i < kRequests; ++i) {
    absl::StatusOr<Decision> d =
        CheckForTest(*conn_, CheckScriptForTest(Algorithm::kSlidingLog), "log", kT0, limit, 1);
    ASSERT_TRUE(d.ok()) << d.status();
    admitted += d->allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, kRequests);
  // Every admitted unit is one entry, and there is nothing else in the log.
  EXPECT_EQ(conn_->Integer({"ZCOUNT", "log", "0", "+inf"}), admitted);
  EXPECT_EQ(conn_->Integer({"ZCARD", "log"}), admitted);

  // Multi-unit costs and time stepping back to the same microsecond stay unique too.
  ASSERT_TRUE(
      CheckForTest(*conn_, CheckScriptForTest(Algorithm::kSlidingLog), "log", kT0, limit, 500)
          .ok());
  ASSERT_TRUE(CheckForTest(*conn_, CheckScriptForTest(Algorithm::kSlidingLog), "log", kT0 - kSecond,
                           limit, 7)
                  .ok());
  ASSERT_TRUE(
      CheckForTest(*conn_, CheckScriptForTest(Algorithm::kSlidingLog), "log", kT0, limit, 3).ok());
  EXPECT_EQ(conn_->Integer({"ZCOUNT", "log", "0", "+inf"}), kRequests + 510);
}

// The same load through the old member scheme (millisecond .. math.random(1000, 9999)) loses
// requests: 10,000 members drawn from 9,000 suffixes must collide, so this test would catch it.
TEST_P(LuaScriptsTest, RandomSuffixMembersWouldCollide) {
  constexpr int kRequests = 10'000;
  const std::string old_scheme =
      "local member = ARGV[1] .. math.random(1000, 9999)\n"
      "redis.call('ZADD', KEYS[1], ARGV[1], member)\n"
      "return redis.call('ZCARD', KEYS[1])";
  int64_t card = 0;
  for (int i = 0; i < kRequests; ++i) {
    absl::StatusOr<RedisReply> r =
        conn_->Run({"EVAL", old_scheme, "1", "old", absl::StrCat(kT0 / 1000)});
    ASSERT_TRUE(r.ok() && r->is_integer()) << r->DebugString();
    card = r->integer();
  }
  EXPECT_LT(card, kRequests) << "the old scheme counted every request";
}

// Reliability T6: after a random load on every algorithm, no key lacks a TTL and no TTL outlives
// its state. Uses the production scripts (time from Redis TIME).
TEST_P(LuaScriptsTest, EveryKeyHasATtlNoLongerThanItsState) {
  std::mt19937_64 rng(20240601);
  std::map<std::string, int64_t> expiry_bound_ms;  // key -> max reset_after (ms) of its writes
  for (int i = 0; i < 3000; ++i) {
    const Algorithm algorithm = kAllAlgorithms[rng() % kAllAlgorithms.size()];
    const std::string key =
        absl::StrCat("sluice:{k", rng() % 40, "}:", std::string(AlgorithmName(algorithm)));
    const int64_t limit_value = 1 + static_cast<int64_t>(rng() % 5);
    const int64_t period_us = (1 + static_cast<int64_t>(rng() % 3000)) * 1000;
    std::optional<int64_t> burst;
    if (algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) {
      burst = 1 + static_cast<int64_t>(rng() % 6);
    }
    const Limit limit = MakeLimit(algorithm, limit_value, period_us, burst);
    const int64_t cost = static_cast<int64_t>(rng() % 4);
    std::vector<std::string> args;
    AppendCheckArguments(limit, cost, args);
    if (rng() % 50 == 0) args[0] = "nan";  // Script errors mixed into the load write nothing.
    absl::StatusOr<RedisReply> reply = conn_->Eval(CheckScript(algorithm), {key}, args);
    ASSERT_TRUE(reply.ok()) << reply.status();
    if (args[0] == "nan") {
      ASSERT_TRUE(reply->is_error());
      continue;
    }
    absl::StatusOr<Decision> d = ParseCheckReply(*reply);
    ASSERT_TRUE(d.ok()) << d.status();
    if (d->allowed && cost > 0) {
      const int64_t reset_ms = (d->reset_after.count() + 999) / 1000;
      // Right after a write the key lives at least as long as its state matters (minus the time
      // this loop took since the script ran, bounded generously) and no longer (plus rounding).
      const int64_t pttl = conn_->Integer({"PTTL", key});
      EXPECT_GE(pttl, reset_ms - 200) << key;
      EXPECT_LE(pttl, reset_ms + 1) << key;
      expiry_bound_ms[key] = reset_ms;
    }
  }
  // SCAN the keyspace: every sluice key has a TTL within the bound of its last write.
  std::string cursor = "0";
  int scanned = 0;
  do {
    absl::StatusOr<RedisReply> page =
        conn_->Run({"SCAN", cursor, "MATCH", "sluice:*", "COUNT", "1000"});
    ASSERT_TRUE(page.ok() && page->is_array());
    cursor = page->elements()[0].str();
    for (const RedisReply& key : page->elements()[1].elements()) {
      ++scanned;
      const int64_t pttl = conn_->Integer({"PTTL", key.str()});
      EXPECT_NE(pttl, -1) << key.str() << " has no TTL";
      if (pttl >= 0) {
        ASSERT_TRUE(expiry_bound_ms.contains(key.str())) << key.str();
        EXPECT_LE(pttl, expiry_bound_ms[key.str()] + 1) << key.str();
      }
    }
  } while (cursor != "0");
  EXPECT_GT(scanned, 0);
}

// Multi-limit checks are all-or-nothing: one check over its limit records nothing anywhere.
TEST_P(LuaScriptsTest, CheckAllRecordsNothingWhenOneCheckIsDenied) {
  const std::vector<Limit> limits = {
      MakeLimit(Algorithm::kFixedWindow, 3, 10 * kSecond),
      MakeLimit(Algorithm::kSlidingWindow, 3, 10 * kSecond),
      MakeLimit(Algorithm::kSlidingLog, 3, 10 * kSecond),
      MakeLimit(Algorithm::kTokenBucket, 3, 10 * kSecond),
      MakeLimit(Algorithm::kGcra, 3, 10 * kSecond),
      MakeLimit(Algorithm::kFixedWindow, 1, 10 * kSecond),  // the tight one
  };
  const std::vector<std::string> keys = {"fw", "sw", "sl", "tb", "gcra", "tight"};
  auto run = [&](int64_t now) {
    std::vector<std::string> args = {absl::StrCat(now)};
    for (const Limit& l : limits) AppendCheckArguments(l, 1, args);
    absl::StatusOr<RedisReply> reply = conn_->Eval(CheckAllScriptForTest(), keys, args);
    EXPECT_TRUE(reply.ok());
    absl::StatusOr<MultiDecision> multi = ParseCheckAllReply(*reply, limits.size());
    EXPECT_TRUE(multi.ok()) << multi.status() << " " << reply->DebugString();
    return *multi;
  };
  MultiDecision first = run(kT0);
  ASSERT_TRUE(first.allowed);
  for (const Decision& d : first.decisions) EXPECT_TRUE(d.allowed);
  EXPECT_EQ(first.decisions[0].remaining, 2);

  std::vector<std::string> before;
  for (const std::string& key : keys) before.push_back(conn_->Run({"DUMP", key})->str());
  MultiDecision second = run(kT0 + 1);
  EXPECT_FALSE(second.allowed);
  EXPECT_FALSE(second.decisions[5].allowed);
  EXPECT_EQ(second.decisions[5].retry_after.count(), 10 * kSecond - 1);
  // The checks that would have passed report a peek of the stored state: nothing more used.
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(second.decisions[i].allowed) << i;
    EXPECT_EQ(second.decisions[i].remaining, 2) << i;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(conn_->Run({"DUMP", keys[i]})->str(), before[i]) << keys[i];
  }
}

// A key named twice in one check_all is applied twice, in order.
TEST_P(LuaScriptsTest, CheckAllAppliesARepeatedKeySequentially) {
  for (Algorithm algorithm : kAllAlgorithms) {
    ASSERT_TRUE(conn_->Run({"FLUSHALL"}).ok());
    const Limit two = MakeLimit(algorithm, 2, 10 * kSecond);
    const std::string name(AlgorithmName(algorithm));
    std::vector<std::string> args = {absl::StrCat(kT0)};
    AppendCheckArguments(two, 1, args);
    AppendCheckArguments(two, 1, args);
    absl::StatusOr<MultiDecision> both =
        ParseCheckAllReply(*conn_->Eval(CheckAllScriptForTest(), {"k", "k"}, args), 2);
    ASSERT_TRUE(both.ok()) << name << both.status();
    EXPECT_TRUE(both->allowed) << name;
    EXPECT_EQ(both->decisions[0].remaining, 1) << name;
    EXPECT_EQ(both->decisions[1].remaining, 0) << name;

    // A third unit in the same call: the sequence is over the limit, so nothing is recorded,
    // and the pending units are counted when the third check is decided.
    ASSERT_TRUE(conn_->Run({"FLUSHALL"}).ok());
    AppendCheckArguments(two, 1, args);
    absl::StatusOr<MultiDecision> three =
        ParseCheckAllReply(*conn_->Eval(CheckAllScriptForTest(), {"k", "k", "k"}, args), 3);
    ASSERT_TRUE(three.ok()) << name << three.status();
    EXPECT_FALSE(three->allowed) << name;
    EXPECT_FALSE(three->decisions[2].allowed) << name;
    EXPECT_GT(three->decisions[2].retry_after.count(), 0) << name;
    EXPECT_EQ(three->decisions[0].remaining, 2) << name;  // a peek of the empty state
    EXPECT_EQ(DbSize(), 0) << name;
  }
}

TEST_P(LuaScriptsTest, CostAboveCapacityIsNeverAdmittedAndRecordsNothing) {
  for (Algorithm algorithm : kAllAlgorithms) {
    const Limit limit = MakeLimit(algorithm, 5, kSecond);
    absl::StatusOr<Decision> d =
        CheckForTest(*conn_, CheckScriptForTest(algorithm), "k", kT0, limit, 6);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_FALSE(d->allowed);
    EXPECT_EQ(d->retry_after, Decision::kNever);
    EXPECT_EQ(d->remaining, 5);
    EXPECT_EQ(DbSize(), 0) << AlgorithmName(algorithm);
  }
}

TEST_P(LuaScriptsTest, ProductionScriptUsesServerTime) {
  // The production script takes no time argument; its windows follow the server clock.
  const Limit limit = MakeLimit(Algorithm::kFixedWindow, 5, 3600 * kSecond);
  std::vector<std::string> args;
  AppendCheckArguments(limit, 1, args);
  absl::StatusOr<Decision> d =
      ParseCheckReply(*conn_->Eval(CheckScript(Algorithm::kFixedWindow), {"k"}, args));
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<RedisReply> time = conn_->Run({"TIME"});
  const int64_t now =
      std::stoll(time->elements()[0].str()) * kSecond + std::stoll(time->elements()[1].str());
  const int64_t window_end = now - now % (3600 * kSecond) + 3600 * kSecond;
  EXPECT_NEAR(static_cast<double>(d->reset_after.count()), static_cast<double>(window_end - now),
              1e6);
  // The stored state is window start, count and the key's expiry in ms (its PXAT).
  const std::vector<uint64_t> state = StateFields(conn_->Run({"GET", "k"})->str());
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[0], static_cast<uint64_t>(window_end - 3600 * kSecond));
  EXPECT_EQ(state[1], 1u);
  EXPECT_EQ(state[2], static_cast<uint64_t>(window_end / 1000));
  // A second admission in the window keeps the key's TTL rather than setting it again.
  ASSERT_TRUE(
      ParseCheckReply(*conn_->Eval(CheckScript(Algorithm::kFixedWindow), {"k"}, args)).ok());
  EXPECT_EQ(StateFields(conn_->Run({"GET", "k"})->str())[1], 2u);
  const int64_t pttl = conn_->Integer({"PTTL", "k"});
  EXPECT_LE(pttl, (window_end - now) / 1000 + 1);
  EXPECT_GE(pttl, (window_end - now) / 1000 - 2000);
}

// Verifies that a fixed window's key follows a period change within one window: its state
// records the expiry it was written with, and only an unchanged expiry keeps the TTL.
TEST_P(LuaScriptsTest, FixedWindowTtlFollowsAPeriodChange) {
  const int64_t t = kT0 - kT0 % (20 * kSecond);  // a window start under 10 s and 20 s periods
  const LuaScript& script = CheckScriptForTest(Algorithm::kFixedWindow);
  ASSERT_TRUE(
      CheckForTest(*conn_, script, "k", t, MakeLimit(Algorithm::kFixedWindow, 5, 10 * kSecond), 1)
          .ok());
  const int64_t short_ttl = conn_->Integer({"PTTL", "k"});
  ASSERT_TRUE(
      CheckForTest(*conn_, script, "k", t, MakeLimit(Algorithm::kFixedWindow, 5, 20 * kSecond), 1)
          .ok());
  const int64_t long_ttl = conn_->Integer({"PTTL", "k"});
  // The test scripts' TTL is the spec's lifetime plus a fixed slack (time_for_test.lua).
  EXPECT_NEAR(static_cast<double>(long_ttl - short_ttl), 10'000.0, 1000.0);
  EXPECT_EQ(StateFields(conn_->Run({"GET", "k"})->str())[2],
            static_cast<uint64_t>((t + 20 * kSecond) / 1000));
}

// The ARGV of one credit (LimitCheck::refund) of `units` for check_all: the algorithm byte with
// 0x40 (common.lua's kRefund), after the test time when `now_us` is set.
std::vector<std::string> CreditArgs(std::optional<int64_t> now_us, const Limit& limit,
                                    int64_t units) {
  std::vector<std::string> args;
  if (now_us.has_value()) args.push_back(absl::StrCat(*now_us));
  AppendCheckArguments(limit, units, args, /*count_rejected=*/false, /*refund=*/true);
  return args;
}

// Runs check_all (`script`: the test-time or the production one) on `keys` and `args`.
absl::StatusOr<MultiDecision> RunCheckAll(ScriptConnection& conn, const LuaScript& script,
                                          const std::vector<std::string>& keys,
                                          const std::vector<std::string>& args) {
  absl::StatusOr<RedisReply> reply = conn.Eval(script, keys, args);
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return absl::InternalError(reply->str());
  return ParseCheckAllReply(*reply, keys.size());
}

// Verifies that a credit (0x40 added to the algorithm byte) is decided by check_all only: each
// single-check script refuses it, saying so; a credit also counting rejected hits (0x40 | 0x80) is
// refused everywhere; and the refusals write nothing, even after a valid check of the same call.
TEST_P(LuaScriptsTest, CreditsGoThroughCheckAllOnly) {
  for (Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    const auto byte = static_cast<uint8_t>(algorithm);
    const uint64_t capacity = 10;
    const std::string credit = EncodeCheckArgument(0x40 | byte, 10, 1000000, capacity, 1);
    for (const LuaScript* script : {&CheckScriptForTest(algorithm), &CheckScript(algorithm)}) {
      std::vector<std::string> args = {credit};
      if (script == &CheckScriptForTest(algorithm)) args.insert(args.begin(), absl::StrCat(kT0));
      absl::StatusOr<RedisReply> reply = conn_->Eval(*script, {"k"}, args);
      ASSERT_TRUE(reply.ok()) << reply.status();
      EXPECT_THAT(reply->str(),
                  StartsWith("SLUICE_BADARG check 1: a credit goes through check_all"));
    }
    const std::string counting = EncodeCheckArgument(0xC0 | byte, 10, 1000000, capacity, 1);
    absl::StatusOr<RedisReply> reply =
        conn_->Eval(CheckScriptForTest(algorithm), {"k"}, {absl::StrCat(kT0), counting});
    ASSERT_TRUE(reply.ok());
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG"));
    // In check_all, after a valid charge and a valid credit: nothing is written.
    reply = conn_->Eval(CheckAllScriptForTest(), {"k0", "k1", "k"},
                        {absl::StrCat(kT0), EncodeCheckArgument(0, 10, 1000000, 10, 1), credit,
                         counting});
    ASSERT_TRUE(reply.ok());
    EXPECT_THAT(reply->str(),
                StartsWith("SLUICE_BADARG check 3: a credit does not count rejected hits"));
    // The same check without the credit is valid (a fixed window may count rejected hits).
    EXPECT_EQ(DbSize(), 0);
  }
  // A credit of an unknown algorithm; a credit's units above 2^32.
  for (const std::string& bad : {EncodeCheckArgument(0x40 | 5, 10, 1000000, 10, 1),
                                 EncodeCheckArgument(0x40, 10, 1000000, 10, 4294967297)}) {
    absl::StatusOr<RedisReply> reply =
        conn_->Eval(CheckAllScriptForTest(), {"k"}, {absl::StrCat(kT0), bad});
    ASSERT_TRUE(reply.ok());
    EXPECT_THAT(reply->str(), StartsWith("SLUICE_BADARG"));
  }
  EXPECT_EQ(DbSize(), 0);
}

// Verifies that a credit never creates state: to a missing key it answers a peek of no state and
// writes nothing, alone or beside a charge that is written; and a credit that finds nothing to
// give back leaves a stored state exactly as it was.
TEST_P(LuaScriptsTest, CreditNeverCreatesAKey) {
  for (Algorithm algorithm : kAllAlgorithms) {
    SCOPED_TRACE(AlgorithmName(algorithm));
    ASSERT_TRUE(conn_->Run({"FLUSHALL"}).ok());
    const Limit limit = MakeLimit(algorithm, 5, 10 * kSecond);
    for (const int64_t units : {int64_t{0}, int64_t{1}, int64_t{5}, kMaxCost}) {
      absl::StatusOr<MultiDecision> d =
          RunCheckAll(*conn_, CheckAllScriptForTest(), {"absent"}, CreditArgs(kT0, limit, units));
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_TRUE(d->allowed);
      EXPECT_TRUE(d->decisions[0].allowed);
      EXPECT_EQ(d->decisions[0].remaining, 5) << units;
      EXPECT_EQ(d->decisions[0].retry_after.count(), 0);
      EXPECT_EQ(conn_->Integer({"EXISTS", "absent"}), 0) << units;
      // The production script (Redis TIME) too.
      d = RunCheckAll(*conn_, CheckAllScript(), {"absent"}, CreditArgs(std::nullopt, limit, units));
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(conn_->Integer({"EXISTS", "absent"}), 0) << units;
    }
    // Beside a charge of another key, which is written.
    std::vector<std::string> args = CreditArgs(kT0, limit, 3);
    AppendCheckArguments(limit, 2, args);
    absl::StatusOr<MultiDecision> both =
        RunCheckAll(*conn_, CheckAllScriptForTest(), {"absent", "charged"}, args);
    ASSERT_TRUE(both.ok()) << both.status();
    EXPECT_TRUE(both->allowed);
    EXPECT_EQ(both->decisions[1].remaining, 3);
    EXPECT_EQ(conn_->Integer({"EXISTS", "absent"}), 0);
    EXPECT_EQ(conn_->Integer({"EXISTS", "charged"}), 1);
    // A credit on the charged key that finds nothing to give back any more (its units all given
    // back first) leaves it as it was.
    ASSERT_TRUE(
        RunCheckAll(*conn_, CheckAllScriptForTest(), {"charged"}, CreditArgs(kT0, limit, 9)).ok());
    const std::string emptied = conn_->Run({"DUMP", "charged"})->str();
    const int64_t pttl = conn_->Integer({"PTTL", "charged"});
    absl::StatusOr<MultiDecision> again =
        RunCheckAll(*conn_, CheckAllScriptForTest(), {"charged"}, CreditArgs(kT0 + 1, limit, 1));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->decisions[0].remaining, 5);
    if (algorithm == Algorithm::kSlidingLog) {
      // The log's last entries went: the key went with them.
      EXPECT_EQ(conn_->Integer({"EXISTS", "charged"}), 0);
    } else {
      EXPECT_EQ(conn_->Run({"DUMP", "charged"})->str(), emptied);
      EXPECT_LE(conn_->Integer({"PTTL", "charged"}), pttl);
    }
  }
}

// Verifies that credits keep the sliding log's member names 1 .. m at each microsecond: they
// remove the entries named last, so that later admissions at that microsecond add members rather
// than overwrite them (a ZADD of an existing member would silently count nothing).
TEST_P(LuaScriptsTest, SlidingLogCreditsKeepMemberNamesUnique) {
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 1000, 60 * kSecond);
  const LuaScript& check = CheckScriptForTest(Algorithm::kSlidingLog);
  ASSERT_TRUE(CheckForTest(*conn_, check, "log", kT0, limit, 50).ok());
  ASSERT_TRUE(
      RunCheckAll(*conn_, CheckAllScriptForTest(), {"log"}, CreditArgs(kT0, limit, 20)).ok());
  EXPECT_EQ(conn_->Integer({"ZCARD", "log"}), 30);
  for (int i = 1; i <= 30; ++i) {
    const std::string name = i == 1 ? absl::StrCat(kT0) : absl::StrCat(kT0, ":", i);
    EXPECT_TRUE(conn_->Run({"ZSCORE", "log", name})->is_string()) << name;
  }
  // An admission at that microsecond adds its cost.
  ASSERT_TRUE(CheckForTest(*conn_, check, "log", kT0, limit, 7)->allowed);
  EXPECT_EQ(conn_->Integer({"ZCARD", "log"}), 37);

  // Entries at two microseconds, a credit taking all of the newer and some of the older, then an
  // admission at the older one (time stepped back) and at the newer.
  ASSERT_TRUE(CheckForTest(*conn_, check, "log", kT0 + 1, limit, 5)->allowed);
  ASSERT_TRUE(
      RunCheckAll(*conn_, CheckAllScriptForTest(), {"log"}, CreditArgs(kT0 + 2, limit, 8)).ok());
  EXPECT_EQ(conn_->Integer({"ZCOUNT", "log", absl::StrCat(kT0 + 1), absl::StrCat(kT0 + 1)}), 0);
  EXPECT_EQ(conn_->Integer({"ZCOUNT", "log", absl::StrCat(kT0), absl::StrCat(kT0)}), 34);
  EXPECT_FALSE(conn_->Run({"ZSCORE", "log", absl::StrCat(kT0, ":35")})->is_string());
  ASSERT_TRUE(CheckForTest(*conn_, check, "log", kT0, limit, 4)->allowed);
  ASSERT_TRUE(CheckForTest(*conn_, check, "log", kT0 + 1, limit, 2)->allowed);
  EXPECT_EQ(conn_->Integer({"ZCARD", "log"}), 40);

  // A charge and a credit of the same log in one call: the credit takes the charge's pending
  // entries first (named last at now), and the names stay 1 .. m.
  std::vector<std::string> args = {absl::StrCat(kT0)};
  AppendCheckArguments(limit, 6, args);
  AppendCheckArguments(limit, 10, args, /*count_rejected=*/false, /*refund=*/true);
  AppendCheckArguments(limit, 3, args);
  absl::StatusOr<MultiDecision> mixed =
      RunCheckAll(*conn_, CheckAllScriptForTest(), {"log", "log", "log"}, args);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_TRUE(mixed->allowed);
  // 40 + 6 = 46; the credit takes the 2 at kT0 + 1, the 6 pending and 2 at kT0 (those named
  // last): 36; then 3 more at kT0, named 37 .. 39.
  EXPECT_EQ(mixed->decisions[1].remaining, 1000 - 36);
  EXPECT_EQ(conn_->Integer({"ZCARD", "log"}), 39);
  EXPECT_EQ(conn_->Integer({"ZCOUNT", "log", absl::StrCat(kT0), absl::StrCat(kT0)}), 39);
  for (int i = 1; i <= 39; ++i) {
    const std::string name = i == 1 ? absl::StrCat(kT0) : absl::StrCat(kT0, ":", i);
    EXPECT_TRUE(conn_->Run({"ZSCORE", "log", name})->is_string()) << name;
  }
}

// Verifies that a credit on a log of an earlier version (members named by a sequence) ends: the
// entries after the oldest one to go are removed by score, and the ones at its time, which cannot
// be found by name, stay.
TEST_P(LuaScriptsTest, SlidingLogCreditOnAnEarlierVersionsLogEnds) {
  ASSERT_TRUE(conn_
                  ->Run({"ZADD", "log", "-3", "#", absl::StrCat(kT0 - 3), "1",
                         absl::StrCat(kT0 - 2), "2", absl::StrCat(kT0 - 1), "3"})
                  .ok());
  const Limit limit = MakeLimit(Algorithm::kSlidingLog, 3, 10 * kSecond);
  absl::StatusOr<MultiDecision> d =
      RunCheckAll(*conn_, CheckAllScriptForTest(), {"log"}, CreditArgs(kT0, limit, 2));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->decisions[0].remaining, 2);
  // "3" (after kT0 - 2) went; "2" at kT0 - 2 could not be named, and stays with "1" and "#".
  EXPECT_EQ(conn_->Integer({"ZCARD", "log"}), 3);
  EXPECT_FALSE(conn_->Run({"ZSCORE", "log", "3"})->is_string());
}

// Verifies, with the production scripts (Redis TIME), that a credit keeps every key alive at
// least as long as its state matters (a peek's reset_after right after) and never extends a
// window's or a log's life; the buckets' keys get the usual expiry of their new state.
TEST_P(LuaScriptsTest, CreditsKeepEveryKeyAliveAsLongAsItsState) {
  std::mt19937_64 rng(20261207);
  // One limit per key: under another limit a stored state matters for another time, credit or
  // not.
  std::map<std::string, Limit> limit_of;
  for (int i = 0; i < 1500; ++i) {
    const Algorithm algorithm = kAllAlgorithms[rng() % kAllAlgorithms.size()];
    const std::string key =
        absl::StrCat("sluice:{c", rng() % 20, "}:", std::string(AlgorithmName(algorithm)));
    if (!limit_of.contains(key)) {
      limit_of[key] = MakeLimit(algorithm, 2 + static_cast<int64_t>(rng() % 8),
                                (1 + static_cast<int64_t>(rng() % 3000)) * 1000);
    }
    const Limit limit = limit_of[key];
    const int64_t period_us = limit.period.count();
    const bool credit = rng() % 2 == 0;
    const int64_t units = static_cast<int64_t>(rng() % 5);
    const int64_t before = conn_->Integer({"PTTL", key});
    absl::StatusOr<Decision> d;
    if (credit) {
      absl::StatusOr<MultiDecision> multi =
          RunCheckAll(*conn_, CheckAllScript(), {key}, CreditArgs(std::nullopt, limit, units));
      ASSERT_TRUE(multi.ok()) << multi.status();
      ASSERT_TRUE(multi->allowed);
      d = multi->decisions[0];
    } else {
      std::vector<std::string> args;
      AppendCheckArguments(limit, units, args);
      d = ParseCheckReply(*conn_->Eval(CheckScript(algorithm), {key}, args));
    }
    ASSERT_TRUE(d.ok()) << d.status();
    const int64_t pttl = conn_->Integer({"PTTL", key});
    ASSERT_NE(pttl, -1) << key << " has no TTL";
    if (before == -2) {
      if (credit) {
        ASSERT_EQ(pttl, -2) << key << ": a credit created it";
      }
      continue;
    }
    if (!credit || pttl == -2) continue;  // a log emptied by the credit goes with its key
    const int64_t reset_ms = (d->reset_after.count() + 999) / 1000;
    // A fixed window reports the time to its window's end even when nothing is counted (when the
    // stored window ended between the PTTL above and the credit, say): its state matters only
    // while something is counted.
    if (algorithm != Algorithm::kFixedWindow || d->remaining < limit.limit) {
      EXPECT_GE(pttl, reset_ms - 200) << key << " lives shorter than its state after a credit";
    }
    switch (algorithm) {
      case Algorithm::kFixedWindow:
      case Algorithm::kSlidingLog:
        EXPECT_LE(pttl, before) << key << ": a credit extended its life";
        break;
      case Algorithm::kSlidingWindow:
        EXPECT_LE(pttl, 2 * period_us / 1000 + 1) << key;
        break;
      case Algorithm::kTokenBucket:
      case Algorithm::kGcra:
        EXPECT_LE(pttl, std::max(before, reset_ms + 1)) << key;
        break;
    }
  }
}

// Verifies that RedisStore decides a credit through check_all, alone (where a charge takes its
// algorithm's script, which refuses credits) or beside other checks, in one slot and split across
// Cluster slots; and that a credit takes no lease.
TEST(RedisStoreCredits, GoThroughCheckAll) {
  absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  for (const bool cluster : {false, true}) {
    SCOPED_TRACE(cluster ? "cluster, split" : "one server");
    absl::StatusOr<std::unique_ptr<RedisStore>> store =
        RedisStore::Create({.url = (*server)->Url(),
                            .command_timeout = std::chrono::milliseconds(5000),
                            .cluster = cluster,
                            .cross_slot = CrossSlot::kSplit});
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->WaitForConnection(std::chrono::milliseconds(10000)).ok());
    const RedisKeyScheme keys = *RedisKeyScheme::Create(kDefaultKeyPrefix);
    for (Algorithm algorithm : kAllAlgorithms) {
      SCOPED_TRACE(AlgorithmName(algorithm));
      const Limit limit = MakeLimit(algorithm, 5, 3600 * kSecond);
      const std::string name(AlgorithmName(algorithm));
      const std::string a = absl::StrCat("{a}", cluster ? "c" : "", name);
      const std::string b = absl::StrCat("{b}", cluster ? "c" : "", name);
      ASSERT_TRUE((*store)->Check(a, limit, 5).ok());
      // A lone credit.
      absl::StatusOr<MultiDecision> d =
          (*store)->CheckAll({{LimitCheck{.key = a, .limit = limit, .cost = 2, .refund = true}}});
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_TRUE(d->allowed);
      EXPECT_EQ(d->decisions[0].remaining, 2);
      // A credit to a key with no state, and a charge of another key (another slot: split into
      // two calls of one check each on a cluster).
      d = (*store)->CheckAll({{LimitCheck{.key = b, .limit = limit, .cost = 3, .refund = true},
                               LimitCheck{.key = a, .limit = limit, .cost = 2}}});
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_TRUE(d->allowed);
      EXPECT_EQ(d->decisions[0].remaining, 5);
      EXPECT_EQ(d->decisions[1].remaining, 0);
      // The credited key was never created.
      absl::StatusOr<std::unique_ptr<ScriptConnection>> conn =
          ScriptConnection::Connect((*server)->port());
      ASSERT_TRUE(conn.ok());
      EXPECT_EQ((*conn)->Integer({"EXISTS", keys.StateKey(b, algorithm)}), 0);
      EXPECT_EQ((*conn)->Integer({"EXISTS", keys.StateKey(a, algorithm)}), 1);
      // A credit on the same key as a charge of the same call: all or nothing.
      d = (*store)->CheckAll({{LimitCheck{.key = a, .limit = limit, .cost = 5, .refund = true},
                               LimitCheck{.key = a, .limit = limit, .cost = 6}}});
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_FALSE(d->allowed);
      EXPECT_EQ(d->decisions[0].remaining, 0) << "a denied call reports a peek, writes nothing";
    }
    // A credit takes no lease.
    internal::LeaseSource* source = LeaseSourceOf(**store);
    ASSERT_NE(source, nullptr);
    std::promise<absl::StatusOr<internal::LeasedDecision>> leased;
    const std::vector<LimitCheck> checks = {LimitCheck{
        .key = "lease", .limit = MakeLimit(Algorithm::kGcra, 5, kSecond), .cost = 1,
        .refund = true}};
    const std::vector<internal::LeaseWant> wants = {{.units = 2}};
    source->DecideAndLease(checks, wants, [&leased](absl::StatusOr<internal::LeasedDecision> d) {
      leased.set_value(std::move(d));
    });
    const absl::StatusOr<internal::LeasedDecision> refused = leased.get_future().get();
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("a credit takes no lease"));
  }
}

// Reliability T4-style lint: the scripts use no randomness, no host time, and never compare a
// value with a boolean literal (a boolean is never == 1 in Lua).
TEST(LuaSources, AvoidKnownPitfalls) {
  std::vector<std::pair<std::string, std::string>> texts;
  for (const LuaScript* script : ProductionScripts()) {
    texts.emplace_back(script->name, std::string(script->text));
  }
  texts.emplace_back(ProductionLibrary().name, ProductionLibrary().text);
  for (const auto& [name, text] : texts) {
    EXPECT_EQ(text.find("math.random"), std::string::npos) << name;
    EXPECT_EQ(text.find("os.time"), std::string::npos) << name;
    EXPECT_EQ(text.find("os.clock"), std::string::npos) << name;
    EXPECT_EQ(text.find("== true"), std::string::npos) << name;
    EXPECT_EQ(text.find("== false"), std::string::npos) << name;
    EXPECT_EQ(text.find("ARGV[1]"), std::string::npos)
        << name << ": production scripts must not read a caller's time";
    EXPECT_EQ(text.find("args[1]"), std::string::npos)
        << name << ": production scripts must not read a caller's time";
  }
  // The library and its functions are named after its text; the test library is another one.
  EXPECT_TRUE(
      ProductionLibrary().text.starts_with("#!lua name=" + ProductionLibrary().name + "\n"));
  EXPECT_EQ(ProductionLibrary().name.size(), 7u + 16u);
  EXPECT_NE(ProductionLibrary().name, LibraryForTest().name);
  EXPECT_EQ(CheckScript(Algorithm::kGcra).function, ProductionLibrary().name + "_check_gcra");
  EXPECT_EQ(CheckAllScript().library, &ProductionLibrary());
  std::set<std::string> shas;
  for (Algorithm algorithm : kAllAlgorithms) {
    EXPECT_NE(CheckScript(algorithm).sha1, CheckScriptForTest(algorithm).sha1);
    EXPECT_EQ(CheckScript(algorithm).sha1.size(), 40u);
    shas.insert(CheckScript(algorithm).sha1);
  }
  shas.insert(CheckAllScript().sha1);
  shas.insert(LeaseAllScript().sha1);
  shas.insert(LeaseRefundScript().sha1);
  shas.insert(LeaseHoldersScript().sha1);
  EXPECT_EQ(shas.size(), ProductionScripts().size());
  EXPECT_EQ(LeaseAllScript().function, ProductionLibrary().name + "_lease_all");
  EXPECT_EQ(LeaseHoldersScript().function, ProductionLibrary().name + "_lease_holders");
}

INSTANTIATE_TEST_SUITE_P(Calls, LuaScriptsTest,
                         ::testing::Values(LuaCall::kEvalsha, LuaCall::kFcall), LuaCallName);

}  // namespace
}  // namespace sluice
