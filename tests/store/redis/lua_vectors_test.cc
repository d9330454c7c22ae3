// The Lua scripts against the specification: every test vector (tests/vectors/*.json) replayed
// through the test-time scripts, and a randomized differential test against the C++ algorithms
// (src/algorithm), single checks and all-or-nothing multi-checks alike, with credits
// (LimitCheck::refund, decided by check_all against the C++ Credit*()) mixed in. The same for
// leases: the lease vectors (tests/vectors/lease/*.json) and random grants, refunds, credits and
// checks against the C++ reference (src/algorithm/lease.h).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/lease.h"
#include "src/store/lease/lease_source.h"
#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/lua_scripts_for_test.h"
#include "tests/store/redis/lua_test_support.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/test_vectors.h"

namespace sluice {

// For readable failures.
void PrintTo(const Decision& d, std::ostream* os) {
  *os << "{allowed=" << d.allowed << " limit=" << d.limit << " remaining=" << d.remaining
      << " reset_after=" << d.reset_after.count() << "us retry_after=" << d.retry_after.count()
      << "us}";
}

namespace {

using ::sluice::testing::CheckArgsForTest;
using ::sluice::testing::CheckForTest;
using ::sluice::testing::LeaseForTest;
using ::sluice::testing::LoadAllVectors;
using ::sluice::testing::LoadLeaseVectors;
using ::sluice::testing::LuaCall;
using ::sluice::testing::LuaCallName;
using ::sluice::testing::RefundForTest;
using ::sluice::testing::ScriptConnection;
using ::sluice::testing::VectorCase;
using ::sluice::testing::VectorStep;

constexpr int64_t kSecond = 1'000'000;

// The C++ reference: one state per algorithm, as the memory store keeps it.
struct ModelState {
  algorithm::FixedWindowState fixed_window;
  algorithm::SlidingWindowState sliding_window;
  algorithm::SlidingLogState sliding_log;
  algorithm::TokenBucketState token_bucket;
  algorithm::GcraState gcra;

  friend bool operator==(const ModelState&, const ModelState&) = default;
};

Decision DecideModel(const Limit& limit, ModelState& s, int64_t now_us, int64_t cost) {
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      return algorithm::DecideFixedWindow(limit, s.fixed_window, now_us, cost);
    case Algorithm::kSlidingWindow:
      return algorithm::DecideSlidingWindow(limit, s.sliding_window, now_us, cost);
    case Algorithm::kSlidingLog:
      return algorithm::DecideSlidingLog(limit, s.sliding_log, now_us, cost);
    case Algorithm::kTokenBucket:
      return algorithm::DecideTokenBucket(limit, s.token_bucket, now_us, cost);
    case Algorithm::kGcra:
      return algorithm::DecideGcra(limit, s.gcra, now_us, cost);
  }
  return Decision{};
}

algorithm::LeaseDecision LeaseModel(const Limit& limit, ModelState& s, int64_t now_us, int64_t cost,
                                    const internal::LeaseWant& want) {
  const int64_t units = want.units;
  const int64_t ttl = want.ttl.count();
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      return algorithm::LeaseFixedWindow(limit, s.fixed_window, now_us, cost, units, ttl);
    case Algorithm::kSlidingWindow:
      return algorithm::LeaseSlidingWindow(limit, s.sliding_window, now_us, cost, units, ttl);
    case Algorithm::kSlidingLog:
      return algorithm::LeaseSlidingLog(limit, s.sliding_log, now_us, cost, units, ttl);
    case Algorithm::kTokenBucket:
      return algorithm::LeaseTokenBucket(limit, s.token_bucket, now_us, cost, units, ttl);
    case Algorithm::kGcra:
      return algorithm::LeaseGcra(limit, s.gcra, now_us, cost, units, ttl);
  }
  return {};
}

Decision CreditModel(const Limit& limit, ModelState& s, int64_t now_us, int64_t units) {
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      return algorithm::CreditFixedWindow(limit, s.fixed_window, now_us, units);
    case Algorithm::kSlidingWindow:
      return algorithm::CreditSlidingWindow(limit, s.sliding_window, now_us, units);
    case Algorithm::kSlidingLog:
      return algorithm::CreditSlidingLog(limit, s.sliding_log, now_us, units);
    case Algorithm::kTokenBucket:
      return algorithm::CreditTokenBucket(limit, s.token_bucket, now_us, units);
    case Algorithm::kGcra:
      return algorithm::CreditGcra(limit, s.gcra, now_us, units);
  }
  return Decision{};
}

// A check or a credit (LimitCheck::refund) of the model.
Decision DecideOrCreditModel(const Limit& limit, ModelState& s, int64_t now_us, int64_t cost,
                             bool credit) {
  return credit ? CreditModel(limit, s, now_us, cost) : DecideModel(limit, s, now_us, cost);
}

// Runs the test-time check_all on `checks` at `now_us` (each check with its `refund` flag, a
// credit) and parses its reply; a script error is Internal with its message.
absl::StatusOr<MultiDecision> CheckAllForTest(ScriptConnection& conn, int64_t now_us,
                                              const std::vector<LimitCheck>& checks) {
  std::vector<std::string> keys;
  std::vector<std::string> args = {absl::StrCat(now_us)};
  for (const LimitCheck& check : checks) {
    keys.push_back(check.key);
    AppendCheckArguments(check.limit, check.cost, args, check.count_rejected, check.refund);
  }
  absl::StatusOr<RedisReply> reply = conn.Eval(CheckAllScriptForTest(), keys, args);
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return absl::InternalError(reply->str());
  return ParseCheckAllReply(*reply, checks.size());
}

// A credit of `units` on `key`, alone in a check_all call (the only script that decides credits);
// a lone credit is always allowed.
absl::StatusOr<Decision> CreditForTest(ScriptConnection& conn, const std::string& key,
                                       int64_t now_us, const Limit& limit, int64_t units) {
  absl::StatusOr<MultiDecision> multi = CheckAllForTest(
      conn, now_us, {LimitCheck{.key = key, .limit = limit, .cost = units, .refund = true}});
  if (!multi.ok()) return multi.status();
  if (!multi->allowed) return absl::InternalError("check_all denied a lone credit");
  return multi->decisions[0];
}

// The little-endian unsigned 64-bit fields of a binary state (docs/redis.md, "State encoding").
std::vector<int64_t> StateFields(const std::string& state) {
  std::vector<int64_t> fields;
  for (size_t at = 0; at + 8 <= state.size(); at += 8) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; --b) {
      v = (v << 8) | static_cast<unsigned char>(state[at + static_cast<size_t>(b)]);
    }
    fields.push_back(static_cast<int64_t>(v));
  }
  return fields;
}

std::vector<algorithm::LeaseEntry> RecordOf(const std::vector<int64_t>& fields) {
  std::vector<algorithm::LeaseEntry> record;
  for (size_t i = 2; i + 1 < fields.size(); i += 2) {
    record.push_back({.ends_us = fields[i], .granted = fields[i + 1]});
  }
  return record;
}

// Verifies that the state stored at `key` is the model's state `s` of `algorithm`: a string
// state's fields (the windows' recorded expiry aside), or the sliding log's entry times, whose
// members at each microsecond t must be named t, t:2, .., t:m (docs/redis.md, "Sliding log
// members"). No key is the model's default state (no state), or an empty log. A log of more than
// kFullLogCompare entries is compared by its size and its oldest and newest entries only.
::testing::AssertionResult StoredStateIs(ScriptConnection& conn, const std::string& key,
                                         Algorithm algorithm, const ModelState& s) {
  constexpr size_t kFullLogCompare = 1000;
  if (algorithm == Algorithm::kSlidingLog &&
      s.sliding_log.entries_us.size() > kFullLogCompare) {
    const std::deque<int64_t>& entries = s.sliding_log.entries_us;
    absl::StatusOr<RedisReply> first = conn.Run({"ZRANGE", key, "0", "0", "WITHSCORES"});
    absl::StatusOr<RedisReply> last = conn.Run({"ZRANGE", key, "-1", "-1", "WITHSCORES"});
    const int64_t card = conn.Integer({"ZCARD", key});
    if (!first.ok() || !last.ok() || !first->is_array() || first->elements().size() != 2 ||
        !last->is_array() || last->elements().size() != 2 ||
        card != static_cast<int64_t>(entries.size()) ||
        std::strtoll(first->elements()[1].str().c_str(), nullptr, 10) != entries.front() ||
        std::strtoll(last->elements()[1].str().c_str(), nullptr, 10) != entries.back()) {
      return ::testing::AssertionFailure() << "the log holds " << card << " entries, the model "
                                           << entries.size() << " (or others)";
    }
    return ::testing::AssertionSuccess();
  }
  if (algorithm == Algorithm::kSlidingLog) {
    absl::StatusOr<RedisReply> range = conn.Run({"ZRANGE", key, "0", "-1", "WITHSCORES"});
    if (!range.ok() || !range->is_array()) {
      return ::testing::AssertionFailure() << "ZRANGE: " << range.status();
    }
    std::vector<int64_t> times;
    std::map<int64_t, std::set<std::string>> names;
    const std::vector<RedisReply>& e = range->elements();
    for (size_t i = 0; i + 1 < e.size(); i += 2) {
      const int64_t t = std::strtoll(e[i + 1].str().c_str(), nullptr, 10);
      times.push_back(t);
      names[t].insert(e[i].str());
    }
    std::sort(times.begin(), times.end());
    const std::vector<int64_t> expected(s.sliding_log.entries_us.begin(),
                                        s.sliding_log.entries_us.end());
    if (times != expected) {
      return ::testing::AssertionFailure()
             << "the log holds " << times.size() << " entries, the model " << expected.size()
             << (times.empty() ? "" : absl::StrCat(", first ", times.front(), " last ",
                                                   times.back()));
    }
    for (const auto& [t, members] : names) {
      std::set<std::string> want = {absl::StrCat(t)};
      for (size_t i = 2; i <= members.size(); ++i) want.insert(absl::StrCat(t, ":", i));
      if (members != want) {
        return ::testing::AssertionFailure()
               << "the " << members.size() << " members at " << t << " are not named 1 .. m";
      }
    }
    return ::testing::AssertionSuccess();
  }
  absl::StatusOr<RedisReply> value = conn.Run({"GET", key});
  if (!value.ok()) return ::testing::AssertionFailure() << "GET: " << value.status();
  const std::vector<int64_t> f = value->is_string() ? StateFields(value->str())
                                                    : std::vector<int64_t>{};
  bool same = false;
  switch (algorithm) {
    case Algorithm::kFixedWindow:
      same = f.empty() ? s.fixed_window == algorithm::FixedWindowState{}
                       : f.size() == 3 && s.fixed_window == algorithm::FixedWindowState{
                                                               .window_start_us = f[0],
                                                               .count = f[1]};
      break;
    case Algorithm::kSlidingWindow:
      same = f.empty() ? s.sliding_window == algorithm::SlidingWindowState{}
                       : f.size() == 4 && s.sliding_window == algorithm::SlidingWindowState{
                                                               .window_start_us = f[0],
                                                               .current = f[1],
                                                               .previous = f[2]};
      break;
    case Algorithm::kTokenBucket:
      same = f.empty() ? s.token_bucket == algorithm::TokenBucketState{}
                       : s.token_bucket == algorithm::TokenBucketState{
                                               .deficit = f[0],
                                               .updated_us = f[1],
                                               .leases = RecordOf(f)};
      break;
    case Algorithm::kGcra:
      same = f.empty() ? s.gcra == algorithm::GcraState{}
                       : s.gcra == algorithm::GcraState{
                                       .tat_us = f[0], .tat_frac = f[1], .leases = RecordOf(f)};
      break;
    case Algorithm::kSlidingLog:
      break;
  }
  if (same) return ::testing::AssertionSuccess();
  std::string stored;
  for (int64_t x : f) absl::StrAppend(&stored, stored.empty() ? "" : " ", x);
  return ::testing::AssertionFailure() << AlgorithmName(algorithm) << " stored {" << stored
                                       << "} differs from the model's state";
}

int64_t RefundModel(const Limit& limit, ModelState& s, int64_t now_us,
                    const internal::LeaseGrant& g, int64_t unspent) {
  const algorithm::GrantedLease lease{.ends_us = g.ends_us, .granted = g.granted};
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
      return algorithm::RefundFixedWindow(limit, s.fixed_window, now_us, lease, unspent);
    case Algorithm::kSlidingWindow:
      return algorithm::RefundSlidingWindow(limit, s.sliding_window, now_us, lease, unspent);
    case Algorithm::kSlidingLog:
      return algorithm::RefundSlidingLog(limit, s.sliding_log, now_us, lease, unspent);
    case Algorithm::kTokenBucket:
      return algorithm::RefundTokenBucket(limit, s.token_bucket, now_us, lease, unspent);
    case Algorithm::kGcra:
      return algorithm::RefundGcra(limit, s.gcra, now_us, lease, unspent);
  }
  return 0;
}

// Every test runs the EVALSHA scripts and the library's functions (FCALL).
class LuaVectorsTest : public ::sluice::testing::LuaScriptsFixture {};

TEST_P(LuaVectorsTest, EveryVectorGivesTheSpecifiedDecisions) {
  const std::vector<VectorCase> cases = LoadAllVectors();
  ASSERT_FALSE(cases.empty());
  std::map<Algorithm, int> per_algorithm;
  for (const VectorCase& c : cases) {
    SCOPED_TRACE(c.name);
    ++per_algorithm[c.limit.algorithm];
    const std::string key = absl::StrCat("vector:", c.name);
    for (size_t i = 0; i < c.steps.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("step ", i));
      const VectorStep& step = c.steps[i];
      // A credit only check_all decides (the single-check scripts refuse it).
      absl::StatusOr<Decision> d =
          step.credit ? CreditForTest(*conn_, key, step.now_us, c.limit, step.cost)
                      : CheckForTest(*conn_, CheckScriptForTest(c.limit.algorithm), key,
                                     step.now_us, c.limit, step.cost);
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(*d, step.expect);
    }
  }
  // Every algorithm has vectors, so no script branch escapes them.
  EXPECT_EQ(per_algorithm.size(), static_cast<size_t>(kAlgorithmCount));
  // The functions really ran as functions (and the scripts as scripts).
  EXPECT_GT(conn_->CommandCalls(GetParam() == LuaCall::kFcall ? "fcall" : "evalsha"), 0);
}

// The same vectors through check_all with one check each, which must decide exactly as check.
TEST_P(LuaVectorsTest, EveryVectorThroughCheckAll) {
  for (const VectorCase& c : LoadAllVectors()) {
    SCOPED_TRACE(c.name);
    const std::string key = absl::StrCat("vector-all:", c.name);
    for (size_t i = 0; i < c.steps.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("step ", i));
      std::vector<std::string> args = {absl::StrCat(c.steps[i].now_us)};
      AppendCheckArguments(c.limit, c.steps[i].cost, args, /*count_rejected=*/false,
                           /*refund=*/c.steps[i].credit);
      absl::StatusOr<RedisReply> reply = conn_->Eval(CheckAllScriptForTest(), {key}, args);
      ASSERT_TRUE(reply.ok()) << reply.status();
      absl::StatusOr<MultiDecision> multi = ParseCheckAllReply(*reply, 1);
      ASSERT_TRUE(multi.ok()) << multi.status() << " " << reply->DebugString();
      EXPECT_EQ(multi->allowed, c.steps[i].expect.allowed);
      EXPECT_EQ(multi->decisions[0], c.steps[i].expect);
    }
  }
}

// A random valid limit of `algorithm`: small quotas (where boundaries are dense) and, now and
// then, quotas and periods near the bounds that keep arithmetic exact.
Limit RandomLimit(Algorithm algorithm, std::mt19937_64& rng) {
  static constexpr int64_t kPeriodsMs[] = {1, 3, 7, 10, 999, 1000, 1001, 60'000, 3'600'000};
  for (;;) {
    Limit limit{.algorithm = algorithm, .burst = std::nullopt};
    limit.period = std::chrono::milliseconds(kPeriodsMs[rng() % std::size(kPeriodsMs)]);
    switch (rng() % 4) {
      case 0:
        limit.limit = 1;
        break;
      case 1:
      case 2:
        limit.limit = 1 + static_cast<int64_t>(rng() % 12);
        break;
      default:
        limit.limit = 1 + static_cast<int64_t>(rng() % 100'000);
        break;
    }
    if (algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra) {
      if (rng() % 3 != 0) limit.burst = 1 + static_cast<int64_t>(rng() % (2 * limit.limit + 3));
      if (rng() % 10 == 0) {  // Near the exactness bound: max(L, B) * P close to 2^50.
        limit.period = std::chrono::milliseconds(1000);
        limit.limit = kMaxRateProduct / 1'000'000 - static_cast<int64_t>(rng() % 3);
        limit.burst = 1 + static_cast<int64_t>(rng() % 5);
      }
    }
    if (ValidateLimit(limit).ok()) return limit;
  }
}

// A random next time: mostly forward by amounts around the period and the emission interval,
// sometimes the same microsecond, sometimes a step back (Redis failover to a slower clock).
int64_t NextNow(int64_t now, const Limit& limit, std::mt19937_64& rng) {
  const int64_t period = limit.period.count();
  switch (rng() % 10) {
    case 0:
      return now;
    case 1:
      return now + 1;
    case 2:
      return now - static_cast<int64_t>(rng() % (period + 1));  // backwards
    case 3:
      return now + period - now % period;  // exactly a window boundary
    case 4:
      return now + period / std::max<int64_t>(1, limit.limit);
    case 5:
      return now + static_cast<int64_t>(rng() % (3 * period + 1));
    default:
      return now + static_cast<int64_t>(rng() % (period / 4 + 2));
  }
}

int64_t RandomCost(const Limit& limit, std::mt19937_64& rng) {
  const int64_t capacity = limit.Capacity();
  switch (rng() % 8) {
    case 0:
      return 0;  // a peek
    case 1:
      return capacity + 1 + static_cast<int64_t>(rng() % 3);  // can never pass
    case 2:
      return 1 + static_cast<int64_t>(rng() % std::min<int64_t>(capacity, 1000));
    default:
      return 1;
  }
}

// Random units for a credit: often one, often more than was charged or than the capacity (a
// credit takes the state to empty, never below), now and then none (a peek) or 2^32.
int64_t RandomCredit(const Limit& limit, std::mt19937_64& rng) {
  const int64_t capacity = limit.Capacity();
  switch (rng() % 10) {
    case 0:
      return 0;
    case 1:
      return kMaxCost;
    case 2:
    case 3:
      return 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * capacity + 2));
    case 4:
      return 1 + static_cast<int64_t>(rng() % 5);
    default:
      return 1;
  }
}

// Verifies that the Lua scripts and the C++ algorithms decide identically on random sequences,
// with a credit (check_all) one step in five, and store the same states.
TEST_P(LuaVectorsTest, RandomSequencesMatchTheCppAlgorithms) {
  std::mt19937_64 rng(0x5111ce);
  for (int algorithm_index = 0; algorithm_index < kAlgorithmCount; ++algorithm_index) {
    const auto algorithm = static_cast<Algorithm>(algorithm_index);
    for (int round = 0; round < 25; ++round) {
      const Limit main_limit = RandomLimit(algorithm, rng);
      // Now and then the key is checked under another limit: the state is then read under it.
      const Limit other_limit = RandomLimit(algorithm, rng);
      const std::string key = absl::StrCat("diff:", algorithm_index, ":", round);
      SCOPED_TRACE(absl::StrCat(Describe(main_limit), " / ", Describe(other_limit), " key ", key));
      ModelState model;
      int64_t now = 1'700'000'000 * kSecond + static_cast<int64_t>(rng() % (1000 * kSecond));
      for (int step = 0; step < 120; ++step) {
        const Limit& limit = rng() % 10 == 0 ? other_limit : main_limit;
        now = NextNow(now, limit, rng);
        const bool credit = rng() % 5 == 0;
        const int64_t cost = credit ? RandomCredit(limit, rng) : RandomCost(limit, rng);
        const Decision expected = DecideOrCreditModel(limit, model, now, cost, credit);
        absl::StatusOr<Decision> got =
            credit ? CreditForTest(*conn_, key, now, limit, cost)
                   : CheckForTest(*conn_, CheckScriptForTest(limit.algorithm), key, now, limit,
                                  cost);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(*got, expected) << "step " << step << " now " << now
                                  << (credit ? " credit " : " cost ") << cost << " "
                                  << Describe(limit);
        ASSERT_TRUE(StoredStateIs(*conn_, key, algorithm, model))
            << "step " << step << " now " << now << (credit ? " credit " : " cost ") << cost;
      }
    }
  }
}

// Verifies that a fixed window counting rejected hits (LimitCheck::count_rejected) decides and
// records identically in the C++ (DecideFixedWindowCounting) and in both Lua paths, the
// fixed_window script and check_all with its one check, on random sequences that mix it with
// sluice's own counting on the same key.
TEST_P(LuaVectorsTest, CountingRejectedHitsMatchesTheCppAlgorithm) {
  std::mt19937_64 rng(0xC0047);
  for (int round = 0; round < 60; ++round) {
    const Limit limit = RandomLimit(Algorithm::kFixedWindow, rng);
    const std::string key = absl::StrCat("counting:", round);
    const std::string all_key = absl::StrCat("counting-all:", round);
    SCOPED_TRACE(absl::StrCat(Describe(limit), " key ", key));
    algorithm::FixedWindowState model;
    int64_t now = 1'700'000'000 * kSecond + static_cast<int64_t>(rng() % (1000 * kSecond));
    for (int step = 0; step < 120; ++step) {
      now = NextNow(now, limit, rng);
      const int64_t cost = RandomCost(limit, rng);
      // Mostly counting, now and then sluice's own counting on the same state.
      const bool counting = rng() % 5 != 0;
      const Decision expected = counting
                                    ? algorithm::DecideFixedWindowCounting(limit, model, now, cost)
                                    : algorithm::DecideFixedWindow(limit, model, now, cost);
      absl::StatusOr<Decision> got = CheckForTest(
          *conn_, CheckScriptForTest(Algorithm::kFixedWindow), key, now, limit, cost, counting);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, expected) << "step " << step << " now " << now << " cost " << cost
                                << " counting " << counting;
      absl::StatusOr<RedisReply> reply = conn_->Eval(CheckAllScriptForTest(), {all_key},
                                                     CheckArgsForTest(now, limit, cost, counting));
      ASSERT_TRUE(reply.ok()) << reply.status();
      absl::StatusOr<MultiDecision> multi = ParseCheckAllReply(*reply, 1);
      ASSERT_TRUE(multi.ok()) << multi.status();
      ASSERT_EQ(multi->decisions[0], expected) << "check_all, step " << step;
      ASSERT_EQ(multi->allowed, expected.allowed);
    }
  }
}

// Verifies check_all against a model built from the C++ algorithms: checks applied in order to
// tentative states (a repeated key sees the earlier checks), committed only when all pass; when
// one fails, denied checks keep their decision and the others report a peek of the stored state.
// One check in five is a credit, which always passes and is committed with the others.
TEST_P(LuaVectorsTest, RandomMultiChecksMatchTheAllOrNothingModel) {
  std::mt19937_64 rng(20240602);
  for (int round = 0; round < 150; ++round) {
    // A few keys, each with one algorithm and two limits used on it (mostly the first).
    const int key_count = 1 + static_cast<int>(rng() % 3);
    std::vector<Limit> limits;
    std::vector<Limit> other_limits;
    for (int k = 0; k < key_count; ++k) {
      const auto algorithm = static_cast<Algorithm>(rng() % kAlgorithmCount);
      for (std::vector<Limit>* list : {&limits, &other_limits}) {
        list->push_back(RandomLimit(algorithm, rng));
        // Keep quotas small so denials are frequent.
        list->back().limit = 1 + list->back().limit % 5;
        if (list->back().burst.has_value()) list->back().burst = 1 + *list->back().burst % 6;
        if (!ValidateLimit(list->back()).ok()) list->back().burst.reset();
      }
    }
    std::vector<ModelState> stored(key_count);
    int64_t now = 1'700'000'000 * kSecond;
    for (int step = 0; step < 40; ++step) {
      now = NextNow(now, limits[0], rng);
      const int checks = 1 + static_cast<int>(rng() % 4);
      std::vector<int> key_of(checks);
      std::vector<Limit> limit_of(checks);
      std::vector<int64_t> cost_of(checks);
      std::vector<bool> credit_of(checks);
      std::vector<std::string> keys;
      std::vector<std::string> args = {absl::StrCat(now)};
      for (int i = 0; i < checks; ++i) {
        key_of[i] = static_cast<int>(rng() % key_count);
        limit_of[i] = rng() % 4 == 0 ? other_limits[key_of[i]] : limits[key_of[i]];
        credit_of[i] = rng() % 5 == 0;
        cost_of[i] = credit_of[i]    ? RandomCredit(limit_of[i], rng)
                     : rng() % 4 == 0 ? 0
                                      : 1 + static_cast<int64_t>(rng() % 3);
        keys.push_back(absl::StrCat("multi:", round, ":", key_of[i]));
        AppendCheckArguments(limit_of[i], cost_of[i], args, /*count_rejected=*/false,
                             /*refund=*/credit_of[i]);
      }
      // The model.
      std::vector<ModelState> tentative = stored;
      MultiDecision expected{.allowed = true, .decisions = {}};
      for (int i = 0; i < checks; ++i) {
        expected.decisions.push_back(DecideOrCreditModel(limit_of[i], tentative[key_of[i]], now,
                                                         cost_of[i], credit_of[i]));
        expected.allowed = expected.allowed && expected.decisions.back().allowed;
      }
      if (expected.allowed) {
        stored = tentative;
      } else {
        for (int i = 0; i < checks; ++i) {
          if (!expected.decisions[i].allowed) continue;
          ModelState peek = stored[key_of[i]];
          expected.decisions[i] = DecideModel(limit_of[i], peek, now, 0);
        }
      }
      absl::StatusOr<RedisReply> reply = conn_->Eval(CheckAllScriptForTest(), keys, args);
      ASSERT_TRUE(reply.ok()) << reply.status();
      absl::StatusOr<MultiDecision> got = ParseCheckAllReply(*reply, checks);
      ASSERT_TRUE(got.ok()) << got.status() << " " << reply->DebugString();
      ASSERT_EQ(got->allowed, expected.allowed) << "round " << round << " step " << step;
      for (int i = 0; i < checks; ++i) {
        ASSERT_EQ(got->decisions[i], expected.decisions[i])
            << "round " << round << " step " << step << " check " << i << " "
            << Describe(limit_of[i]) << (credit_of[i] ? " credit " : " cost ") << cost_of[i];
      }
      for (int k = 0; k < key_count; ++k) {
        ASSERT_TRUE(StoredStateIs(*conn_, absl::StrCat("multi:", round, ":", k),
                                  limits[k].algorithm, stored[k]))
            << "round " << round << " step " << step << " key " << k;
      }
    }
  }
}

// Replays the lease vectors: exact steps through the single-check script (or check_all, with
// `through_check_all`), leasing steps through lease_all, refunds through lease_refund.
void ReplayLeaseVectors(ScriptConnection& conn, bool through_check_all) {
  const std::vector<VectorCase> cases = LoadLeaseVectors();
  ASSERT_FALSE(cases.empty());
  std::map<Algorithm, int> per_algorithm;
  for (const VectorCase& c : cases) {
    SCOPED_TRACE(c.name);
    ++per_algorithm[c.limit.algorithm];
    const std::string key = absl::StrCat("vector:", c.name, through_check_all ? ":all" : "");
    for (size_t i = 0; i < c.steps.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("step ", i));
      const VectorStep& step = c.steps[i];
      if (step.credit) {
        absl::StatusOr<Decision> d = CreditForTest(conn, key, step.now_us, c.limit, step.cost);
        ASSERT_TRUE(d.ok()) << d.status();
        EXPECT_EQ(*d, step.expect);
      } else if (step.refund.has_value()) {
        absl::StatusOr<std::vector<int64_t>> given = RefundForTest(
            conn, LeaseRefundScriptForTest(), step.now_us,
            {internal::LeaseRefund{
                .check = {.key = key, .limit = c.limit, .cost = 0},
                .grant = {.granted = step.refund->granted, .ends_us = step.refund->ends_us},
                .unspent = step.refund->unspent}});
        ASSERT_TRUE(given.ok()) << given.status();
        EXPECT_EQ((*given)[0], step.refund->refunded);
      } else if (step.lease.has_value()) {
        absl::StatusOr<internal::LeasedDecision> d = LeaseForTest(
            conn, LeaseAllScriptForTest(), step.now_us,
            {LimitCheck{.key = key, .limit = c.limit, .cost = step.cost}},
            {internal::LeaseWant{.units = step.lease->want,
                                 .ttl = std::chrono::microseconds(step.lease->ttl_us)}});
        ASSERT_TRUE(d.ok()) << d.status();
        EXPECT_EQ(d->decision.allowed, step.expect.allowed);
        EXPECT_EQ(d->decision.decisions[0], step.expect);
        EXPECT_EQ(d->grants[0].granted, step.lease->granted);
        EXPECT_EQ(d->grants[0].ends_us, step.lease->ends_us);
        EXPECT_EQ(d->grants[0].now_us, step.now_us);
      } else if (through_check_all) {
        std::vector<std::string> args = {absl::StrCat(step.now_us)};
        AppendCheckArguments(c.limit, step.cost, args);
        absl::StatusOr<RedisReply> reply = conn.Eval(CheckAllScriptForTest(), {key}, args);
        ASSERT_TRUE(reply.ok()) << reply.status();
        absl::StatusOr<MultiDecision> multi = ParseCheckAllReply(*reply, 1);
        ASSERT_TRUE(multi.ok()) << multi.status() << " " << reply->DebugString();
        EXPECT_EQ(multi->decisions[0], step.expect);
      } else {
        absl::StatusOr<Decision> d = CheckForTest(conn, CheckScriptForTest(c.limit.algorithm), key,
                                                  step.now_us, c.limit, step.cost);
        ASSERT_TRUE(d.ok()) << d.status();
        EXPECT_EQ(*d, step.expect);
      }
    }
  }
  EXPECT_EQ(per_algorithm.size(), static_cast<size_t>(kAlgorithmCount));
}

TEST_P(LuaVectorsTest, EveryLeaseVectorGivesTheSpecifiedResults) {
  ReplayLeaseVectors(*conn_, /*through_check_all=*/false);
}

TEST_P(LuaVectorsTest, EveryLeaseVectorThroughCheckAll) {
  ReplayLeaseVectors(*conn_, /*through_check_all=*/true);
}

// A random want: often nothing, often more than can be granted, and a ttl around the period (the
// scripts clamp it to the period).
internal::LeaseWant RandomWant(const Limit& limit, std::mt19937_64& rng) {
  const int64_t period = limit.period.count();
  internal::LeaseWant want;
  switch (rng() % 4) {
    case 0:
      want.units = 0;
      break;
    case 1:
      want.units = 1 + static_cast<int64_t>(rng() % 3);
      break;
    default:
      want.units = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * limit.Capacity() + 2));
      break;
  }
  want.ttl = std::chrono::microseconds(1000 + static_cast<int64_t>(rng() % (2 * period)));
  return want;
}

// Verifies that lease_all and lease_refund give the C++ reference's results, and that the check
// scripts read the states they write as the reference does (lease records and their floors,
// sliding log entries after now), on random sequences with time going backwards now and then,
// credits (check_all, against Credit*()) mixed with the grants and refunds; and that every step
// leaves the reference's state stored.
TEST_P(LuaVectorsTest, RandomLeaseSequencesMatchTheCppReference) {
  std::mt19937_64 rng(0x1ea5e);
  for (int algorithm_index = 0; algorithm_index < kAlgorithmCount; ++algorithm_index) {
    const auto algorithm = static_cast<Algorithm>(algorithm_index);
    for (int round = 0; round < 25; ++round) {
      Limit limit = RandomLimit(algorithm, rng);
      // Small quotas, so that grants, floors and denials are frequent (the near-bound limits of
      // RandomLimit are kept for the token bucket and GCRA one round in ten).
      if (limit.limit > 50 && rng() % 2 == 0) limit.limit = 1 + limit.limit % 50;
      if (limit.burst.has_value() && *limit.burst > 60) limit.burst = 1 + *limit.burst % 60;
      if (!ValidateLimit(limit).ok()) limit.burst.reset();
      const std::string key = absl::StrCat("lease:", algorithm_index, ":", round);
      SCOPED_TRACE(absl::StrCat(Describe(limit), " key ", key));
      ModelState model;
      std::vector<internal::LeaseGrant> leases;
      int64_t now = 1'700'000'000 * kSecond + static_cast<int64_t>(rng() % (1000 * kSecond));
      for (int step = 0; step < 150; ++step) {
        now = NextNow(now, limit, rng);
        const int op = static_cast<int>(rng() % 12);
        SCOPED_TRACE(absl::StrCat("step ", step, " op ", op, " now ", now));
        if (op >= 10) {
          const int64_t units = RandomCredit(limit, rng);
          const Decision expected = CreditModel(limit, model, now, units);
          absl::StatusOr<Decision> got = CreditForTest(*conn_, key, now, limit, units);
          ASSERT_TRUE(got.ok()) << got.status();
          ASSERT_EQ(*got, expected) << "credit " << units;
        } else if (op < 4) {
          const int64_t cost = RandomCost(limit, rng);
          const internal::LeaseWant want = RandomWant(limit, rng);
          const algorithm::LeaseDecision expected = LeaseModel(limit, model, now, cost, want);
          absl::StatusOr<internal::LeasedDecision> got =
              LeaseForTest(*conn_, LeaseAllScriptForTest(), now,
                           {LimitCheck{.key = key, .limit = limit, .cost = cost}}, {want});
          ASSERT_TRUE(got.ok()) << got.status();
          ASSERT_EQ(got->decision.decisions[0], expected.decision)
              << "cost " << cost << " want " << want.units << " ttl " << want.ttl.count();
          ASSERT_EQ(got->grants[0].granted, expected.granted);
          ASSERT_EQ(got->grants[0].ends_us, expected.ends_us);
          if (expected.granted > 0) leases.push_back(got->grants[0]);
        } else if (op < 6 && !leases.empty()) {
          const size_t which = rng() % leases.size();
          internal::LeaseGrant& lease = leases[which];
          const int64_t unspent =
              1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(lease.granted));
          const int64_t expected = RefundModel(limit, model, now, lease, unspent);
          absl::StatusOr<std::vector<int64_t>> given =
              RefundForTest(*conn_, LeaseRefundScriptForTest(), now,
                            {internal::LeaseRefund{.check = {.key = key, .limit = limit, .cost = 0},
                                                   .grant = lease,
                                                   .unspent = unspent}});
          ASSERT_TRUE(given.ok()) << given.status();
          ASSERT_EQ((*given)[0], expected)
              << "refund " << unspent << " of " << lease.granted << " ending " << lease.ends_us;
          // The store now records the lease with what was given back taken off (token bucket,
          // GCRA), which is how a later refund names it.
          lease.granted -= expected;
          if (lease.granted == 0) leases.erase(leases.begin() + static_cast<ptrdiff_t>(which));
        } else {
          const int64_t cost = RandomCost(limit, rng);
          const Decision expected = DecideModel(limit, model, now, cost);
          absl::StatusOr<Decision> got;
          if (op % 2 == 0) {
            got = CheckForTest(*conn_, CheckScriptForTest(algorithm), key, now, limit, cost);
          } else {
            std::vector<std::string> args = {absl::StrCat(now)};
            AppendCheckArguments(limit, cost, args);
            absl::StatusOr<RedisReply> reply = conn_->Eval(CheckAllScriptForTest(), {key}, args);
            ASSERT_TRUE(reply.ok()) << reply.status();
            absl::StatusOr<MultiDecision> multi = ParseCheckAllReply(*reply, 1);
            ASSERT_TRUE(multi.ok()) << multi.status() << " " << reply->DebugString();
            got = multi->decisions[0];
          }
          ASSERT_TRUE(got.ok()) << got.status();
          ASSERT_EQ(*got, expected) << "cost " << cost << (op % 2 == 0 ? " check" : " check_all");
        }
        ASSERT_TRUE(StoredStateIs(*conn_, key, algorithm, model));
      }
    }
  }
}

// Verifies lease_all with several checks against the all-or-nothing model: each check leased on a
// copy of its state; committed only when all pass; otherwise nothing is granted, denied checks
// keep their decision and the others report a peek of the stored state.
TEST_P(LuaVectorsTest, RandomLeaseAllMatchesTheAllOrNothingModel) {
  std::mt19937_64 rng(20261205);
  for (int round = 0; round < 100; ++round) {
    const int key_count = 1 + static_cast<int>(rng() % 4);
    std::vector<Limit> limits;
    for (int k = 0; k < key_count; ++k) {
      Limit limit = RandomLimit(static_cast<Algorithm>(rng() % kAlgorithmCount), rng);
      limit.limit = 1 + limit.limit % 12;
      if (limit.burst.has_value()) limit.burst = 1 + *limit.burst % 14;
      if (!ValidateLimit(limit).ok()) limit.burst.reset();
      limits.push_back(limit);
    }
    std::vector<ModelState> stored(key_count);
    int64_t now = 1'700'000'000 * kSecond;
    for (int step = 0; step < 40; ++step) {
      now = NextNow(now, limits[0], rng);
      // Distinct keys, in a random order and number.
      std::vector<int> order(key_count);
      for (int k = 0; k < key_count; ++k) order[k] = k;
      std::shuffle(order.begin(), order.end(), rng);
      const int checks = 1 + static_cast<int>(rng() % key_count);
      std::vector<LimitCheck> calls;
      std::vector<internal::LeaseWant> wants;
      for (int i = 0; i < checks; ++i) {
        const int k = order[i];
        calls.push_back({.key = absl::StrCat("lease-multi:", round, ":", k),
                         .limit = limits[k],
                         .cost = rng() % 4 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 3)});
        wants.push_back(RandomWant(limits[k], rng));
      }
      // The model.
      std::vector<ModelState> tentative = stored;
      std::vector<algorithm::LeaseDecision> expected;
      bool all = true;
      for (int i = 0; i < checks; ++i) {
        expected.push_back(
            LeaseModel(calls[i].limit, tentative[order[i]], now, calls[i].cost, wants[i]));
        all = all && expected.back().decision.allowed;
      }
      if (all) {
        stored = tentative;
      } else {
        for (int i = 0; i < checks; ++i) {
          if (!expected[i].decision.allowed) continue;
          ModelState peek = stored[order[i]];
          expected[i] = {.decision = DecideModel(calls[i].limit, peek, now, 0)};
        }
      }
      absl::StatusOr<internal::LeasedDecision> got =
          LeaseForTest(*conn_, LeaseAllScriptForTest(), now, calls, wants);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->decision.allowed, all) << "round " << round << " step " << step;
      for (int i = 0; i < checks; ++i) {
        SCOPED_TRACE(absl::StrCat("round ", round, " step ", step, " check ", i, " ",
                                  Describe(calls[i].limit), " cost ", calls[i].cost, " want ",
                                  wants[i].units));
        ASSERT_EQ(got->decision.decisions[i], expected[i].decision);
        ASSERT_EQ(got->grants[i].granted, expected[i].granted);
        ASSERT_EQ(got->grants[i].ends_us, expected[i].ends_us);
      }
    }
  }
}

// Verifies credits in check_all calls of several checks naming the same keys, under two limits
// each, between lease grants and lease refunds on the same keys, against the all-or-nothing model
// built from the C++ reference: every decision, and the state stored after every call (sliding
// log entries and their names, lease records). Time goes backwards now and then, so that sliding
// logs hold entries after now (as leases put there too), which credits take first.
TEST_P(LuaVectorsTest, RandomCreditsWithRepeatedKeysAndLeasesMatchTheModel) {
  std::mt19937_64 rng(0xc4ed17);
  // What the load reached, so that a change of it cannot leave a path untested.
  int credits_given = 0;          // credits that gave something back
  int credits_after_now = 0;      // on a sliding log holding entries after now
  int credits_with_pending = 0;   // after an admission of the same call on the same log
  int credits_shortening = 0;     // that shortened a running lease (token bucket, GCRA)
  int calls_denied_with_credits = 0;
  static constexpr Algorithm kWeighted[] = {
      Algorithm::kSlidingLog,  Algorithm::kSlidingLog,    Algorithm::kTokenBucket,
      Algorithm::kGcra,        Algorithm::kFixedWindow,   Algorithm::kSlidingWindow};
  for (int round = 0; round < 80; ++round) {
    const int key_count = 1 + static_cast<int>(rng() % 2);
    std::vector<Algorithm> algorithm_of(key_count);
    std::vector<std::vector<Limit>> limits(key_count);
    for (int k = 0; k < key_count; ++k) {
      algorithm_of[k] = kWeighted[rng() % std::size(kWeighted)];
      for (int j = 0; j < 2; ++j) {
        Limit limit = RandomLimit(algorithm_of[k], rng);
        limit.limit = 2 + limit.limit % 8;
        if (limit.burst.has_value()) limit.burst = 2 + *limit.burst % 9;
        if (!ValidateLimit(limit).ok()) limit.burst.reset();
        limits[k].push_back(limit);
      }
    }
    const auto key_name = [round](int k) { return absl::StrCat("credits:", round, ":", k); };
    std::vector<ModelState> stored(key_count);
    std::vector<std::vector<std::pair<Limit, internal::LeaseGrant>>> leases(key_count);
    int64_t now = 1'700'000'000 * kSecond + static_cast<int64_t>(rng() % (1000 * kSecond));
    for (int step = 0; step < 60; ++step) {
      now = NextNow(now, limits[0][0], rng);
      const int op = static_cast<int>(rng() % 10);
      SCOPED_TRACE(absl::StrCat("round ", round, " step ", step, " op ", op, " now ", now));
      if (op < 2) {
        // A grant on one key.
        const int k = static_cast<int>(rng() % key_count);
        const Limit& limit = limits[k][rng() % 2];
        const int64_t cost = static_cast<int64_t>(rng() % 3);
        const internal::LeaseWant want = RandomWant(limit, rng);
        const algorithm::LeaseDecision expected = LeaseModel(limit, stored[k], now, cost, want);
        absl::StatusOr<internal::LeasedDecision> got =
            LeaseForTest(*conn_, LeaseAllScriptForTest(), now,
                         {LimitCheck{.key = key_name(k), .limit = limit, .cost = cost}}, {want});
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->decision.decisions[0], expected.decision) << Describe(limit);
        ASSERT_EQ(got->grants[0].granted, expected.granted);
        if (expected.granted > 0) leases[k].push_back({limit, got->grants[0]});
      } else if (op < 3) {
        // A refund of one of the leases granted on a key.
        const int k = static_cast<int>(rng() % key_count);
        if (leases[k].empty()) continue;
        const size_t which = rng() % leases[k].size();
        auto& [limit, lease] = leases[k][which];
        const int64_t unspent =
            1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(lease.granted));
        const int64_t expected = RefundModel(limit, stored[k], now, lease, unspent);
        absl::StatusOr<std::vector<int64_t>> given = RefundForTest(
            *conn_, LeaseRefundScriptForTest(), now,
            {internal::LeaseRefund{.check = {.key = key_name(k), .limit = limit, .cost = 0},
                                   .grant = lease,
                                   .unspent = unspent}});
        ASSERT_TRUE(given.ok()) << given.status();
        ASSERT_EQ((*given)[0], expected) << "refund " << unspent << " of " << lease.granted;
        lease.granted -= expected;
        if (lease.granted == 0 || expected == 0) {
          leases[k].erase(leases[k].begin() + static_cast<ptrdiff_t>(which));
        }
      } else {
        // Charges and credits, the keys repeated.
        const int n = 2 + static_cast<int>(rng() % 5);
        std::vector<LimitCheck> checks;
        std::vector<int> key_of;
        for (int i = 0; i < n; ++i) {
          const int k = static_cast<int>(rng() % key_count);
          const Limit& limit = limits[k][rng() % 4 == 0 ? 1 : 0];
          const bool credit = rng() % 5 < 2;
          checks.push_back({.key = key_name(k),
                            .limit = limit,
                            .cost = credit ? RandomCredit(limit, rng)
                                           : static_cast<int64_t>(rng() % 4),
                            .refund = credit});
          key_of.push_back(k);
        }
        std::vector<ModelState> tentative = stored;
        std::vector<bool> admitted(key_count, false);
        MultiDecision expected{.allowed = true, .decisions = {}};
        bool any_credit = false;
        for (int i = 0; i < n; ++i) {
          ModelState& st = tentative[key_of[i]];
          if (checks[i].refund) {
            any_credit = true;
            const ModelState before = st;
            const auto& log = before.sliding_log.entries_us;
            const bool after_now = !log.empty() && log.back() > now;
            expected.decisions.push_back(CreditModel(checks[i].limit, st, now, checks[i].cost));
            if (!(st == before)) {
              ++credits_given;
              if (checks[i].limit.algorithm == Algorithm::kSlidingLog) {
                if (after_now) ++credits_after_now;
                if (admitted[key_of[i]]) ++credits_with_pending;
              }
              const auto& was = checks[i].limit.algorithm == Algorithm::kGcra
                                    ? before.gcra.leases
                                    : before.token_bucket.leases;
              const auto& is = checks[i].limit.algorithm == Algorithm::kGcra
                                   ? st.gcra.leases
                                   : st.token_bucket.leases;
              int64_t running_was = 0;
              int64_t running_is = 0;
              for (const algorithm::LeaseEntry& e : was) {
                if (e.ends_us > now) running_was += e.granted;
              }
              for (const algorithm::LeaseEntry& e : is) {
                if (e.ends_us > now) running_is += e.granted;
              }
              if (running_is < running_was) ++credits_shortening;
            }
          } else {
            expected.decisions.push_back(DecideModel(checks[i].limit, st, now, checks[i].cost));
            if (expected.decisions.back().allowed && checks[i].cost > 0) {
              admitted[key_of[i]] = true;
            }
          }
          expected.allowed = expected.allowed && expected.decisions.back().allowed;
        }
        if (expected.allowed) {
          stored = tentative;
        } else {
          if (any_credit) ++calls_denied_with_credits;
          for (int i = 0; i < n; ++i) {
            if (!expected.decisions[i].allowed) continue;
            ModelState peek = stored[key_of[i]];
            expected.decisions[i] = DecideModel(checks[i].limit, peek, now, 0);
          }
        }
        absl::StatusOr<MultiDecision> got = CheckAllForTest(*conn_, now, checks);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->allowed, expected.allowed);
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(got->decisions[i], expected.decisions[i])
              << "check " << i << " " << Describe(checks[i].limit)
              << (checks[i].refund ? " credit " : " cost ") << checks[i].cost;
        }
      }
      for (int k = 0; k < key_count; ++k) {
        ASSERT_TRUE(StoredStateIs(*conn_, key_name(k), algorithm_of[k], stored[k])) << "key " << k;
      }
    }
  }
  std::cout << "credits given " << credits_given << ", after now " << credits_after_now
            << ", with pending " << credits_with_pending << ", shortening " << credits_shortening
            << ", denied calls " << calls_denied_with_credits << "\n";
  EXPECT_GT(credits_given, 100);
  EXPECT_GT(credits_after_now, 5);
  EXPECT_GT(credits_with_pending, 5);
  EXPECT_GT(credits_shortening, 5);
  EXPECT_GT(calls_denied_with_credits, 20);
}

INSTANTIATE_TEST_SUITE_P(Calls, LuaVectorsTest,
                         ::testing::Values(LuaCall::kEvalsha, LuaCall::kFcall), LuaCallName);

}  // namespace
}  // namespace sluice
