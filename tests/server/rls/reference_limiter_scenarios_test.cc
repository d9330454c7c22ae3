// envoyproxy/ratelimit's limiter tests (test/limiter/base_limiter_test.go,
// test/redis/fixed_cache_impl_test.go) and its stats-name test (test/stats/manager_impl_test.go),
// ported as scenarios on sluice's RateLimitService over the memory store and real Redis servers.
// The reference feeds its limiter mocked counters; here each scenario first brings a real counter
// to where the mock starts it. Counts and the list of what is not ported: docs/compatibility.md,
// "Reference scenarios".
#include <chrono>
#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "tests/server/rls/reference_scenario_fixture.h"

namespace sluice::server {
namespace {

using Code = RateLimitResponse::Code;

constexpr std::chrono::seconds kHour{3600};

class ReferenceLimiterScenarios : public ReferenceScenarioTest {};
// --- limiter/base_limiter_test.go: one limit's status and stats from its counter ---

constexpr const char* kKeyValue = R"yaml(
domain: domain
descriptors:
  - key: key
    value: value
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: shadow
    value: value
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: ten
    value: value
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: shadowten
    value: value
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 10}
)yaml";

std::string Request(const std::string& key, int hits) {
  return "domain: \"domain\" hits_addend: " + std::to_string(hits) +
         " descriptors { entries { key: \"" + key + "\" value: \"value\" } }";
}

// Ports limiter/base_limiter_test.go TestGetResponseStatusEmptyKey: a descriptor without a limit is
// OK with nothing remaining.
TEST_P(ReferenceLimiterScenarios, GetResponseStatusEmptyKey) {
  Build(kKeyValue);
  absl::StatusOr<RateLimitResponse> r = Call(Request("nothing", 1));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNoLimit(r->statuses(0));
}

// Ports limiter/base_limiter_test.go TestGetResponseStatusOverLimit: counter 2 of 5, 5 hits: the
// 2 hits past the limit are over_limit, the one between the near-limit threshold (4) and the limit
// near_limit. Documented difference: the rejected hits are not recorded (the counter stays at 2).
// In exact-reference mode they are, as the reference's INCRBY records them: the counter stands at
// 7, so 3 more hits are all over.
TEST_P(ReferenceLimiterScenarios, GetResponseStatusOverLimit) {
  EnsureWindowRoom(kHour);
  Build(kKeyValue);
  Admit(Request("key", 2), 1);
  absl::StatusOr<RateLimitResponse> r = Call(Request("key", 5));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStatus(r->statuses(0), RateLimitResponse::OVER_LIMIT, 5, RateLimitResponse::RateLimit::HOUR,
               0);
  EXPECT_EQ(Stat("domain.key_value", "over_limit"), 2u);
  EXPECT_EQ(Stat("domain.key_value", "near_limit"), 1u);
  EXPECT_EQ(Stat("domain.key_value", "shadow_mode"), 0u);
  r = Call(Request("key", 3));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->statuses(0).limit_remaining(), 0u);
  if (exact()) {
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
    EXPECT_EQ(Stat("domain.key_value", "over_limit"), 5u);
    EXPECT_EQ(Stat("domain.key_value", "near_limit"), 1u);
  } else {
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  }
}

// Ports limiter/base_limiter_test.go TestGetResponseStatusOverLimitShadowMode: the same in shadow
// mode: OK, nothing remaining, over_limit 2, near_limit 1, and shadow_mode counted.
TEST_P(ReferenceLimiterScenarios, GetResponseStatusOverLimitShadowMode) {
  EnsureWindowRoom(kHour);
  Build(kKeyValue);
  Admit(Request("shadow", 2), 1);
  absl::StatusOr<RateLimitResponse> r = Call(Request("shadow", 5));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 5, RateLimitResponse::RateLimit::HOUR, 0);
  EXPECT_EQ(Stat("domain.shadow_value", "over_limit"), 2u);
  EXPECT_EQ(Stat("domain.shadow_value", "near_limit"), 1u);
  EXPECT_EQ(Stat("domain.shadow_value", "shadow_mode"), 2u);
}

// Ports limiter/base_limiter_test.go TestGetResponseStatusBelowLimit: counter 2 of 10, then 4 hits:
// 4 remaining, within_limit, no near_limit (threshold 8). The reference passes 1 hit with a
// counter that moved by 4; here the hits are the counter's move, so within_limit is 4.
TEST_P(ReferenceLimiterScenarios, GetResponseStatusBelowLimit) {
  EnsureWindowRoom(kHour);
  Build(kKeyValue);
  Admit(Request("ten", 2), 1);
  absl::StatusOr<RateLimitResponse> r = Call(Request("ten", 4));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 10, RateLimitResponse::RateLimit::HOUR, 4);
  EXPECT_EQ(Stat("domain.ten_value", "near_limit"), 0u);
  EXPECT_EQ(Stat("domain.ten_value", "within_limit"), 6u);
  EXPECT_EQ(Stat("domain.ten_value", "shadow_mode"), 0u);
}

// Ports limiter/base_limiter_test.go TestGetResponseStatusBelowLimitShadowMode: the same below the
// limit in shadow mode: 4 remaining, within_limit, no shadow_mode count.
TEST_P(ReferenceLimiterScenarios, GetResponseStatusBelowLimitShadowMode) {
  EnsureWindowRoom(kHour);
  Build(kKeyValue);
  Admit(Request("shadowten", 2), 1);
  absl::StatusOr<RateLimitResponse> r = Call(Request("shadowten", 4));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 10, RateLimitResponse::RateLimit::HOUR, 4);
  EXPECT_EQ(Stat("domain.shadowten_value", "near_limit"), 0u);
  EXPECT_EQ(Stat("domain.shadowten_value", "within_limit"), 6u);
  EXPECT_EQ(Stat("domain.shadowten_value", "shadow_mode"), 0u);
}

// Ports limiter/base_limiter_test.go TestGetResponseStatusOverLimitWithLocalCache and
// TestOverLimitWithLocalCache, and the cache half of redis/fixed_cache_impl_test.go
// TestOverLimitWithLocalCache: once a key is over its limit, the over-limit cache answers it with
// no store call, counting over_limit and over_limit_with_local_cache. Documented difference: the
// entry lives for the denial's retry_after, not the whole unit.
TEST_P(ReferenceLimiterScenarios, GetResponseStatusOverLimitWithLocalCache) {
  EnsureWindowRoom(kHour);
  Build(kKeyValue, {.over_limit_cache_entries = 100});
  Admit(Request("key", 5), 1);
  absl::StatusOr<RateLimitResponse> r = Call(Request("key", 1));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  store_->Fail(absl::UnavailableError("the cache must answer"));
  r = Call(Request("key", 2));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStatus(r->statuses(0), RateLimitResponse::OVER_LIMIT, 5, RateLimitResponse::RateLimit::HOUR,
               0);
  EXPECT_EQ(Stat("domain.key_value", "over_limit"), 3u);
  EXPECT_EQ(Stat("domain.key_value", "over_limit_with_local_cache"), 2u);
  EXPECT_EQ(Stat("domain.key_value", "shadow_mode"), 0u);
}

// Ports limiter/base_limiter_test.go TestNoOverLimitWithLocalCache: a key the cache does not hold
// goes to the store.
TEST_P(ReferenceLimiterScenarios, NoOverLimitWithLocalCache) {
  Build(kKeyValue, {.over_limit_cache_entries = 100});
  store_->Fail(absl::UnavailableError("down"));
  EXPECT_TRUE(absl::IsUnavailable(Call(Request("key", 1)).status()));
  EXPECT_EQ(store_->failed(), 1);
}

// --- redis/fixed_cache_impl_test.go: the fixed window over the store ---

constexpr const char* kFixedCache = R"yaml(
domain: domain
descriptors:
  - key: key
    value: value
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: key2
    value: value2
    descriptors:
      - key: subkey2
        value: subvalue2
        rate_limit: {unit: hour, requests_per_unit: 10}
  - key: key3
    value: value3
    rate_limit: {unit: hour, requests_per_unit: 10}
    descriptors:
      - key: subkey3
        value: subvalue3
        rate_limit: {unit: day, requests_per_unit: 10}
  - {key: key4, value: value4, rate_limit: {unit: hour, requests_per_unit: 15}}
  - {key: key5, value: value5, rate_limit: {unit: hour, requests_per_unit: 20}}
  - {key: key6, value: value6, rate_limit: {unit: hour, requests_per_unit: 8}}
  - {key: key7, value: value7, rate_limit: {unit: hour, requests_per_unit: 20}}
  - {key: key8, value: value8, rate_limit: {unit: hour, requests_per_unit: 20}}
  - {key: key9, value: value9, rate_limit: {unit: hour, requests_per_unit: 20}}
  - {key: key10, value: value10, rate_limit: {unit: hour, requests_per_unit: 10}}
  - {key: key4s, value: value4, rate_limit: {unit: hour, requests_per_unit: 15}}
  - {key: key5s, value: value5, rate_limit: {unit: hour, requests_per_unit: 14}}
)yaml";

std::string KeyRequest(int n, int hits) {
  const std::string i = std::to_string(n);
  return "domain: \"domain\" hits_addend: " + std::to_string(hits) +
         " descriptors { entries { key: \"key" + i + "\" value: \"value" + i + "\" } }";
}

// The stats of one stats key, for comparing a request's effect.
struct Stats {
  uint64_t total = 0, within = 0, near = 0, over = 0;
  bool operator==(const Stats&) const = default;
};

void PrintTo(const Stats& s, std::ostream* os) {
  *os << "{total " << s.total << ", within " << s.within << ", near " << s.near << ", over "
      << s.over << "}";
}

// Ports redis/fixed_cache_impl_test.go testRedis (both variants: the RedisPerSecond store is its
// usePerSecondRedis, which must hold the one per-second counter): (1) 10 per second, 5 hits: 5
// remaining (the reference's mocked counter reads 5 after its hit); (2) a descriptor with no limit
// and hits_addend 0 beside a nested one over its limit; (3) a per-descriptor hits_addend of 0 on a
// used-up limit beside a used-up nested limit: both OVER_LIMIT, the 0-hit one adding no stats. The
// reference's mocked counters in (3) stand past their limits (11 and 13 of 10), which only its
// counting of rejected hits produces; here they stop at 10 (documented difference: a rejected
// request consumes nothing), with the same answer. Verifies, too, that a limit only peeked at (the
// request was already rejected) is reported over when its own hits would not fit. In
// exact-reference mode the counters are brought to the reference's 11 and 13 by counting rejected
// hits, and a 0-hit check at exactly the limit is first seen OK, as the reference answers it.
TEST_P(ReferenceLimiterScenarios, FixedCacheRedis) {
  EnsureWindowRoom(kHour);
  Build(kFixedCache);
  // One request of 5 hits: a second's window could roll between two requests on Redis.
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "domain"
                hits_addend: 5
                descriptors { entries { key: "key" value: "value" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 10, RateLimitResponse::RateLimit::SECOND, 5);
  EXPECT_EQ(Stat("domain.key_value", "total_hits"), 5u);
  EXPECT_EQ(Stat("domain.key_value", "within_limit"), 5u);
  EXPECT_EQ(Stat("domain.key_value", "near_limit"), 0u);

  constexpr const char* kNested = R"pb(
    domain: "domain"
    descriptors {
      entries { key: "key2" value: "value2" }
      hits_addend { value: 0 }
    }
    descriptors {
      entries { key: "key2" value: "value2" }
      entries { key: "subkey2" value: "subvalue2" }
      hits_addend { value: 1 }
    })pb";
  Admit(kNested, 10);
  r = Call(kNested);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  ExpectNoLimit(r->statuses(0));
  ExpectStatus(r->statuses(1), RateLimitResponse::OVER_LIMIT, 10,
               RateLimitResponse::RateLimit::HOUR, 0);
  EXPECT_EQ(Stat("domain.key2_value2.subkey2_subvalue2", "total_hits"), 11u);
  EXPECT_EQ(Stat("domain.key2_value2.subkey2_subvalue2", "over_limit"), 1u);

  constexpr const char* kZeroHits = R"pb(
    domain: "domain"
    descriptors {
      entries { key: "key3" value: "value3" }
      hits_addend { value: 0 }
    }
    descriptors {
      entries { key: "key3" value: "value3" }
      entries { key: "subkey3" value: "subvalue3" }
      hits_addend { value: 1 }
    })pb";
  Admit(R"pb(domain: "domain"
             hits_addend: 10
             descriptors { entries { key: "key3" value: "value3" } }
             descriptors {
               entries { key: "key3" value: "value3" }
               entries { key: "subkey3" value: "subvalue3" }
             })pb",
        1);
  if (exact()) {
    r = Call(R"pb(domain: "domain"
                  descriptors {
                    entries { key: "key3" value: "value3" }
                    hits_addend { value: 0 }
                  })pb");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
    ExpectStatus(r->statuses(0), RateLimitResponse::OK, 10, RateLimitResponse::RateLimit::HOUR, 0);
    // Counted although rejected: 11 and 12, so that the next request finds 11 and makes 13.
    r = Call(R"pb(domain: "domain"
                  descriptors {
                    entries { key: "key3" value: "value3" }
                    hits_addend { value: 1 }
                  }
                  descriptors {
                    entries { key: "key3" value: "value3" }
                    entries { key: "subkey3" value: "subvalue3" }
                    hits_addend { value: 2 }
                  })pb");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  }
  const uint64_t key3_hits = Stat("domain.key3_value3", "total_hits");
  const uint64_t key3_over = Stat("domain.key3_value3", "over_limit");
  const uint64_t subkey3_over = Stat("domain.key3_value3.subkey3_subvalue3", "over_limit");
  r = Call(kZeroHits);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  ExpectStatus(r->statuses(0), RateLimitResponse::OVER_LIMIT, 10,
               RateLimitResponse::RateLimit::HOUR, 0);
  ExpectStatus(r->statuses(1), RateLimitResponse::OVER_LIMIT, 10, RateLimitResponse::RateLimit::DAY,
               0);
  EXPECT_EQ(Stat("domain.key3_value3", "total_hits"), key3_hits);  // 0 hits add nothing.
  EXPECT_EQ(Stat("domain.key3_value3", "over_limit"), key3_over);
  if (store_kind() == StoreKind::kRedisPerSecond) {
    EXPECT_EQ(PerSecondKeys(), 1);
  }
  EXPECT_EQ(Stat("domain.key3_value3.subkey3_subvalue3", "over_limit") - subkey3_over, 1u);
}

// Ports redis/fixed_cache_impl_test.go TestNearLimit: the near_limit arithmetic for single hits
// and for hits_addend > 1 that end under the near-limit threshold, across it, above it, across the
// limit, across both, and past the limit. Each case first brings the counter to where the
// reference's mocked INCRBY starts it. The reference's units are seconds; hours here, so that a
// real Redis window cannot roll between the set-up and the checked request. Where the reference's
// counter starts past the limit (key10: 27 of 10), here it stops at the limit (documented
// difference); the stats agree.
TEST_P(ReferenceLimiterScenarios, NearLimit) {
  EnsureWindowRoom(kHour);
  Build(kFixedCache);
  auto stats = [this](int n) {
    const std::string key = "domain.key" + std::to_string(n) + "_value" + std::to_string(n);
    return Stats{Stat(key, "total_hits"), Stat(key, "within_limit"), Stat(key, "near_limit"),
                 Stat(key, "over_limit")};
  };
  // Brings key n to `count` and returns its stats then.
  auto prepare = [&](int n, int count) {
    if (count > 0) Admit(KeyRequest(n, count), 1);
    return stats(n);
  };
  auto check = [&](int n, int hits, Code code, uint32_t remaining, Stats delta, Stats before) {
    SCOPED_TRACE("key" + std::to_string(n));
    absl::StatusOr<RateLimitResponse> r = Call(KeyRequest(n, hits));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->statuses(0).code(), code);
    EXPECT_EQ(r->statuses(0).limit_remaining(), remaining);
    const Stats after = stats(n);
    EXPECT_EQ((Stats{after.total - before.total, after.within - before.within,
                     after.near - before.near, after.over - before.over}),
              delta);
  };
  // key4, 15 per unit (near-limit threshold 12), one hit at a time: 10 -> 11, 12 -> 13, 15 -> over.
  check(4, 1, RateLimitResponse::OK, 4, {1, 1, 0, 0}, prepare(4, 10));
  check(4, 1, RateLimitResponse::OK, 2, {1, 1, 1, 0}, prepare(4, 1));
  check(4, 1, RateLimitResponse::OVER_LIMIT, 0, {1, 0, 0, 1}, prepare(4, 2));
  // key5, 20 (threshold 16): 2 + 3 = 5, under the threshold.
  check(5, 3, RateLimitResponse::OK, 15, {3, 3, 0, 0}, prepare(5, 2));
  // key6, 8 (threshold 6): 5 + 2 = 7, one hit above the threshold.
  check(6, 2, RateLimitResponse::OK, 1, {2, 2, 1, 0}, prepare(6, 5));
  // key7, 20: 16 + 3 = 19, all above the threshold.
  check(7, 3, RateLimitResponse::OK, 1, {3, 3, 3, 0}, prepare(7, 16));
  // key8, 20: 19 + 3 = 22: one near, two over.
  check(8, 3, RateLimitResponse::OVER_LIMIT, 0, {3, 0, 1, 2}, prepare(8, 19));
  // key9, 20: 15 + 7 = 22: four near (17..20), two over.
  check(9, 7, RateLimitResponse::OVER_LIMIT, 0, {7, 0, 4, 2}, prepare(9, 15));
  // key10, 10: at the limit, 3 more: all over.
  check(10, 3, RateLimitResponse::OVER_LIMIT, 0, {3, 0, 0, 3}, prepare(10, 10));
}

// Ports redis/fixed_cache_impl_test.go TestOverLimitWithStopCacheKeyIncrementWhenOverlimitConfig:
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT is sluice's only behaviour. Two descriptors (15 and 14
// per unit) at 10: one hit each (4 and 3 left), two each (2 and 1 left), then two each again: the
// second goes over, so neither is incremented and the first still has 2 left. Stats as the
// reference's but one: the first descriptor's near_limit counts both of the third request's hits
// (13 -> 15 against a threshold of 12: 3 in all), where the reference counts 1 (it takes the
// counter it did not increment as the counter after the hits). In exact-reference mode with
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true, the reference's numbers: its near_limit of 2 for
// the first, and the second descriptor's rejected hits counted (15 of 14), as the reference
// increments the key that goes over.
TEST_P(ReferenceLimiterScenarios, OverLimitWithStopCacheKeyIncrementWhenOverlimitConfig) {
  EnsureWindowRoom(kHour);
  Build(kFixedCache, {.stop_increment_when_over_limit = true});
  auto pair = [](int hits) {
    return "domain: \"domain\" descriptors { entries { key: \"key4s\" value: \"value4\" } "
           "hits_addend { value: " +
           std::to_string(hits) +
           " } } descriptors { entries { key: \"key5s\" value: \"value5\" } hits_addend { value: " +
           std::to_string(hits) + " } }";
  };
  Admit(pair(10), 1);
  const uint64_t base4 = Stat("domain.key4s_value4", "total_hits");
  const uint64_t base5 = Stat("domain.key5s_value5", "total_hits");
  ASSERT_EQ(base4, 10u);
  ASSERT_EQ(base5, 10u);

  absl::StatusOr<RateLimitResponse> r = Call(pair(1));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 15, RateLimitResponse::RateLimit::HOUR, 4);
  ExpectStatus(r->statuses(1), RateLimitResponse::OK, 14, RateLimitResponse::RateLimit::HOUR, 3);

  r = Call(pair(2));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 15, RateLimitResponse::RateLimit::HOUR, 2);
  ExpectStatus(r->statuses(1), RateLimitResponse::OK, 14, RateLimitResponse::RateLimit::HOUR, 1);
  EXPECT_EQ(Stat("domain.key4s_value4", "near_limit"), 1u);
  EXPECT_EQ(Stat("domain.key5s_value5", "near_limit"), 2u);

  r = Call(pair(2));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 15, RateLimitResponse::RateLimit::HOUR, 2);
  ExpectStatus(r->statuses(1), RateLimitResponse::OVER_LIMIT, 14,
               RateLimitResponse::RateLimit::HOUR, 0);
  EXPECT_EQ(Stat("domain.key4s_value4", "total_hits") - base4, 5u);
  EXPECT_EQ(Stat("domain.key4s_value4", "over_limit"), 0u);
  EXPECT_EQ(Stat("domain.key4s_value4", "near_limit"), exact() ? 2u : 3u);
  EXPECT_EQ(Stat("domain.key4s_value4", "within_limit") - base4, 5u);
  EXPECT_EQ(Stat("domain.key5s_value5", "total_hits") - base5, 5u);
  EXPECT_EQ(Stat("domain.key5s_value5", "over_limit"), 1u);
  EXPECT_EQ(Stat("domain.key5s_value5", "near_limit"), 3u);
  EXPECT_EQ(Stat("domain.key5s_value5", "within_limit") - base5, 3u);

  // Nothing of the rejected request was recorded: 2 and 1 are still left. In exact-reference mode
  // the descriptor that went over was incremented (15 of 14), the other was not.
  r = Call(pair(0));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->statuses(0).limit_remaining(), 2u);
  if (exact()) {
    EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
    EXPECT_EQ(r->statuses(1).limit_remaining(), 0u);
  } else {
    EXPECT_EQ(r->statuses(1).limit_remaining(), 1u);
  }
}

// Ports redis/fixed_cache_impl_test.go TestOverLimitWithLocalCacheShadowRule: a shadow-mode rule
// over its limit with the over-limit cache on: every request OK, each over-limit hit counted as
// over_limit and shadow_mode.
TEST_P(ReferenceLimiterScenarios, OverLimitWithLocalCacheShadowRule) {
  EnsureWindowRoom(kHour);
  Build(kKeyValue, {.over_limit_cache_entries = 100});
  Admit(Request("shadow", 5), 1);
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(Request("shadow", 1));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
    EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OK);
  }
  EXPECT_EQ(Stat("domain.shadow_value", "over_limit"), 3u);
  EXPECT_EQ(Stat("domain.shadow_value", "shadow_mode"), 3u);
}

// Ports limiter/base_limiter_test.go TestGetResponseStatusOverLimitWithLocalCacheShadowMode and the
// cached half of redis/fixed_cache_impl_test.go TestOverLimitWithLocalCacheShadowRule: once a
// shadow-mode limit is over, the reference answers it from its local cache (OK, and
// over_limit_with_local_cache counted besides over_limit and shadow_mode).
// The cache is a store decorator (OverLimitStore), so shadow-mode denials are cached as enforced
// ones are.
TEST_P(ReferenceLimiterScenarios, OverLimitWithLocalCacheShadowRuleAnsweredFromCache) {
  EnsureWindowRoom(kHour);
  Build(kKeyValue, {.over_limit_cache_entries = 100});
  Admit(Request("shadow", 5), 1);
  ASSERT_TRUE(Call(Request("shadow", 1)).ok());
  store_->Fail(absl::UnavailableError("the cache must answer"));
  absl::StatusOr<RateLimitResponse> r = Call(Request("shadow", 1));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 5, RateLimitResponse::RateLimit::HOUR, 0);
  EXPECT_EQ(Stat("domain.shadow_value", "over_limit"), 2u);
  EXPECT_EQ(Stat("domain.shadow_value", "over_limit_with_local_cache"), 1u);
  EXPECT_EQ(Stat("domain.shadow_value", "shadow_mode"), 2u);
}

// Ports stats/manager_impl_test.go TestEscapingInvalidChartersInMetricName: ':' and '|' in a stats
// key become '_' in the statsd name; other characters are kept.
TEST_P(ReferenceLimiterScenarios, EscapingInvalidCharactersInMetricName) {
  Build(R"yaml(
domain: domain
descriptors:
  - key: path
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 100}
)yaml");
  const std::pair<std::string, std::string> cases[] = {
      {"/foo/bar", "path_/foo/bar"},
      {"/foo:*:bar", "path_/foo_*_bar"},
      {"/foo|bar|baz", "path_/foo_bar_baz"},
      {"/foo:bar|baz", "path_/foo_bar_baz"},
  };
  for (const auto& [value, sanitized] : cases) {
    ASSERT_TRUE(Call(R"pb(domain: "domain"
                          descriptors { entries { key: "path" value: ")pb" +
                     value + R"pb(" } })pb")
                    .ok());
  }
  EXPECT_EQ(Counter("ratelimit.service.rate_limit.domain.path_/foo/bar.total_hits"), 1u);
  EXPECT_EQ(Counter("ratelimit.service.rate_limit.domain.path_/foo_*_bar.total_hits"), 1u);
  // Two stats keys that differ only in ':' and '|' share one statsd name.
  EXPECT_EQ(Counter("ratelimit.service.rate_limit.domain.path_/foo_bar_baz.total_hits"), 2u);
}

INSTANTIATE_TEST_SUITE_P(Stores, ReferenceLimiterScenarios, kAllStores, StoreName);

}  // namespace
}  // namespace sluice::server
