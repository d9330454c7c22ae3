// ReferenceScenarioTest: the fixture of the ported envoyproxy/ratelimit scenarios
// (reference_*_scenarios_test.cc). Each test runs on the memory store, on a ManualClock; on a real
// Redis, whose windows follow Redis TIME; and on two real Redis servers, one for the limits of one
// second (the reference's REDIS_PERSECOND). Every store sits behind a FaultyStore, so a scenario
// can also make the store fail. Each runs in both modes: sluice's semantics (the default, where a
// test asserts the documented differences) and exact-reference mode
// (RateLimitServiceOptions::reference_semantics, where it asserts the reference's own numbers);
// exact() says which, and Build() sets the option.
//
// Example:
//   TEST_P(ReferenceServiceScenarios, Something) {
//     Build("domain: d\ndescriptors: [{key: k, rate_limit: {unit: hour, requests_per_unit: 1}}]");
//     absl::StatusOr<RateLimitResponse> r = Call(R"pb(domain: "d"
//                                                   descriptors { entries { key: "k" } })pb");
//   }
//   INSTANTIATE_TEST_SUITE_P(Stores, ReferenceServiceScenarios, kAllStores, StoreName);
//
// Thread safety: a test fixture; drive it from the test's thread.
#ifndef SLUICE_TESTS_SERVER_RLS_REFERENCE_SCENARIO_FIXTURE_H_
#define SLUICE_TESTS_SERVER_RLS_REFERENCE_SCENARIO_FIXTURE_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include <google/protobuf/text_format.h>

#include "sluice/config.h"
#include "sluice/memory_store.h"
#include "sluice/redis_store.h"

#include "src/server/grpc/rls_proto.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"
#include "src/store/split/per_second_store.h"
#include "tests/testing/faulty_store.h"
#include "tests/testing/manual_clock.h"
#include "tests/testing/peer_configs.h"
#include "tests/testing/redis_server.h"

namespace sluice::server {

// kRedisPerSecond: limits of one second on a Redis of their own (PerSecondStore, the reference's
// REDIS_PERSECOND), every other limit on the main one.
enum class StoreKind { kMemory, kRedis, kRedisPerSecond };

inline std::string StoreKindName(StoreKind kind) {
  switch (kind) {
    case StoreKind::kMemory:
      return "Memory";
    case StoreKind::kRedis:
      return "Redis";
    case StoreKind::kRedisPerSecond:
      return "RedisPerSecond";
  }
  return "?";
}

// The decision semantics a scenario runs under: sluice's own, or exact-reference mode.
enum class Semantics { kSluice, kReference };

using ScenarioParam = std::tuple<StoreKind, Semantics>;

// "Memory", "Redis", "RedisPerSecond" in sluice's semantics; "...ExactReference" in the other.
inline std::string ScenarioParamName(const ScenarioParam& param) {
  return StoreKindName(std::get<0>(param)) +
         (std::get<1>(param) == Semantics::kReference ? "ExactReference" : "");
}

inline std::string StoreName(const ::testing::TestParamInfo<ScenarioParam>& info) {
  return ScenarioParamName(info.param);
}

// Every store in both modes.
inline const auto kAllStores = ::testing::Combine(
    ::testing::Values(StoreKind::kMemory, StoreKind::kRedis, StoreKind::kRedisPerSecond),
    ::testing::Values(Semantics::kSluice, Semantics::kReference));

// The reference's MockClock in service/ratelimit_test.go answers 2222 s since the epoch; the memory
// store starts there so that reset times match the reference's (a minute window: 58 s left).
inline constexpr std::chrono::seconds kReferenceNow{2222};

// The fixture without its parameter: a suite says which store a test runs on.
class ReferenceScenarioBase : public ::testing::Test {
 protected:
  virtual StoreKind store_kind() const = 0;
  virtual Semantics semantics() const = 0;
  // True in exact-reference mode: the test asserts the reference's own expectation.
  bool exact() const { return semantics() == Semantics::kReference; }

  // One redis-server for the whole suite (flushed before each test): starting one per test would
  // cost most of the time budget.
  static void TearDownTestSuite() {
    redis_server().reset();
    per_second_server().reset();
  }

  void SetUp() override {
    std::unique_ptr<Store> store;
    if (redis()) {
      std::unique_ptr<RedisStore> main = ConnectTo(redis_server());
      ASSERT_NE(main, nullptr);
      if (store_kind() == StoreKind::kRedisPerSecond) {
        per_second_redis_ = ConnectTo(per_second_server());
        ASSERT_NE(per_second_redis_, nullptr);
        main_redis_ = std::move(main);
        store = std::make_unique<PerSecondStore>(*main_redis_, *per_second_redis_);
      } else {
        store = std::move(main);
      }
    } else {
      absl::StatusOr<std::unique_ptr<MemoryStore>> memory = MemoryStore::Create({.clock = &clock_});
      ASSERT_TRUE(memory.ok()) << memory.status();
      store = *std::move(memory);
    }
    store_ = std::make_unique<testing::FaultyStore>(std::move(store));
  }

  bool redis() const { return store_kind() != StoreKind::kMemory; }

  // Starts `server` once per suite, flushes it, and returns a store connected to it.
  static std::unique_ptr<RedisStore> ConnectTo(std::unique_ptr<testing::RedisServer>& server) {
    if (server == nullptr) {
      absl::StatusOr<std::unique_ptr<testing::RedisServer>> started = testing::RedisServer::Start();
      EXPECT_TRUE(started.ok()) << started.status();
      if (!started.ok()) return nullptr;
      server = *std::move(started);
    }
    EXPECT_TRUE(server->Command({"FLUSHALL"}).ok());
    // Generous: sanitizer builds on two shared cores must not turn into timeouts.
    absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(
        {.url = server->Url(), .command_timeout = std::chrono::milliseconds(5000)});
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    EXPECT_TRUE((*store)->WaitForConnection(std::chrono::seconds(10)).ok());
    return *std::move(store);
  }

  // The number of keys on the per-second Redis (kRedisPerSecond only).
  int64_t PerSecondKeys() const {
    absl::StatusOr<std::string> n = per_second_server()->Command({"DBSIZE"});
    int64_t keys = -1;
    return n.ok() && absl::SimpleAtoi(*n, &keys) ? keys : -1;
  }

  // Makes the service on `config_yaml` (one file named "config.yaml").
  void Build(const std::string& config_yaml, RateLimitServiceOptions options = {}) {
    const ConfigSource source{.name = "config.yaml", .content = config_yaml};
    absl::StatusOr<std::shared_ptr<const RateLimitConfig>> config =
        ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    BuildWith(*config, options);
  }

  // Makes the service on a loaded config, in this test's semantics.
  void BuildWith(std::shared_ptr<const RateLimitConfig> config,
                 RateLimitServiceOptions options = {}) {
    if (!redis()) options.clock = &clock_;
    options.reference_semantics = exact();
    service_ = std::make_unique<RateLimitService>(*store_, metrics_, options);
    service_->SetConfig(std::move(config));
  }

  // Decides a request given in protobuf text format; waits for the (possibly asynchronous) answer.
  absl::StatusOr<RateLimitResponse> Call(const std::string& text_proto) {
    RateLimitRequest request;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text_proto, &request)) << text_proto;
    return CallProto(request);
  }

  absl::StatusOr<RateLimitResponse> CallProto(const RateLimitRequest& request) {
    std::promise<absl::StatusOr<RateLimitResponse>> answer;
    ShouldRateLimit(*service_, request, [&answer](absl::StatusOr<RateLimitResponse> r) {
      answer.set_value(std::move(r));
    });
    std::future<absl::StatusOr<RateLimitResponse>> f = answer.get_future();
    if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      return absl::DeadlineExceededError("no answer in 30 s");
    }
    return f.get();
  }

  // Calls `text_proto` `n` times, expecting OK each time.
  void Admit(const std::string& text_proto, int n) {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<RateLimitResponse> r = Call(text_proto);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->overall_code(), RateLimitResponse::OK) << "request " << i << " of " << n;
    }
  }

  // Expects `s` to report `limit` per `unit` with `remaining` left; on the memory store also the
  // reset time the reference's clock at 2222 s gives, on Redis a reset within the unit.
  void ExpectStatus(const RateLimitResponse::DescriptorStatus& s, RateLimitResponse::Code code,
                    uint32_t limit, RateLimitResponse::RateLimit::Unit unit, uint32_t remaining) {
    EXPECT_EQ(s.code(), code);
    ASSERT_TRUE(s.has_current_limit());
    EXPECT_EQ(s.current_limit().requests_per_unit(), limit);
    EXPECT_EQ(s.current_limit().unit(), unit);
    EXPECT_EQ(s.limit_remaining(), remaining);
    const int64_t unit_seconds = unit == RateLimitResponse::RateLimit::SECOND   ? 1
                                 : unit == RateLimitResponse::RateLimit::MINUTE ? 60
                                 : unit == RateLimitResponse::RateLimit::HOUR   ? 3600
                                                                                : 86400;
    if (redis()) {
      EXPECT_GE(s.duration_until_reset().seconds(), 0);
      EXPECT_LE(s.duration_until_reset().seconds(), unit_seconds);
    } else {
      EXPECT_EQ(s.duration_until_reset().seconds(),
                unit_seconds - kReferenceNow.count() % unit_seconds);
    }
  }

  static void ExpectNoLimit(const RateLimitResponse::DescriptorStatus& s, uint32_t remaining = 0) {
    EXPECT_EQ(s.code(), RateLimitResponse::OK);
    EXPECT_FALSE(s.has_current_limit());
    EXPECT_EQ(s.limit_remaining(), remaining);
  }

  static std::string HeaderValue(const RateLimitResponse& r, const std::string& name) {
    for (const auto& h : r.response_headers_to_add()) {
      if (h.key() == name) return h.value();
    }
    return "<absent>";
  }

  // Returns the counter named as the reference's statsd name (e.g.
  // "ratelimit.service.rate_limit.domain.key.total_hits"), or 0 when it does not exist yet. Stats
  // keys that differ only in characters statsd cannot carry share a name; their values are summed,
  // as statsd sums them.
  uint64_t Counter(std::string_view statsd_name) const {
    uint64_t sum = 0;
    for (const Metrics::Counter& c : metrics_.Counters()) {
      if (c.name == statsd_name) sum += c.value;
    }
    return sum;
  }

  // Returns the rule stat `stat` (total_hits, over_limit, ...) of `stats_key` ("domain.key_value").
  uint64_t Stat(std::string_view stats_key, std::string_view stat) const {
    return Counter(std::string("ratelimit.service.rate_limit.") + std::string(stats_key) + "." +
                   std::string(stat));
  }

  // On Redis, where windows follow Redis TIME and cannot be moved, returns only when at least
  // `room` is left in the current window of `unit`, waiting out the rest of the window otherwise
  // (at most `room`), so that a scenario of a few requests never straddles two windows. The memory
  // store runs on the manual clock, which never moves by itself.
  void EnsureWindowRoom(std::chrono::seconds unit,
                        std::chrono::seconds room = std::chrono::seconds(5)) {
    if (!redis()) return;
    absl::StatusOr<std::string> time = redis_server()->Command({"TIME"});
    ASSERT_TRUE(time.ok()) << time.status();
    const std::vector<std::string> parts = absl::StrSplit(*time, ' ');
    int64_t seconds = 0;
    int64_t micros = 0;
    ASSERT_TRUE(parts.size() == 2 && absl::SimpleAtoi(parts[0], &seconds) &&
                absl::SimpleAtoi(parts[1], &micros))
        << *time;
    const std::chrono::microseconds now =
        std::chrono::seconds(seconds) + std::chrono::microseconds(micros);
    const std::chrono::microseconds left = unit - now % unit;
    if (left < room) std::this_thread::sleep_for(left + std::chrono::milliseconds(50));
  }

  static std::unique_ptr<testing::RedisServer>& redis_server() {
    static std::unique_ptr<testing::RedisServer> server;
    return server;
  }
  static std::unique_ptr<testing::RedisServer>& per_second_server() {
    static std::unique_ptr<testing::RedisServer> server;
    return server;
  }

  testing::ManualClock clock_{kReferenceNow};
  Metrics metrics_;
  // kRedisPerSecond's two stores, which the PerSecondStore in store_ refers to.
  std::unique_ptr<RedisStore> main_redis_;
  std::unique_ptr<RedisStore> per_second_redis_;
  std::unique_ptr<testing::FaultyStore> store_;
  std::unique_ptr<RateLimitService> service_;
};

class ReferenceScenarioTest : public ReferenceScenarioBase,
                              public ::testing::WithParamInterface<ScenarioParam> {
 protected:
  StoreKind store_kind() const override { return std::get<0>(GetParam()); }
  Semantics semantics() const override { return std::get<1>(GetParam()); }
};

}  // namespace sluice::server

#endif  // SLUICE_TESTS_SERVER_RLS_REFERENCE_SCENARIO_FIXTURE_H_
