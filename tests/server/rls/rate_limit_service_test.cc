#include "src/server/rls/rate_limit_service.h"

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <google/protobuf/text_format.h>

#include "sluice/config.h"
#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"
#include "sluice/store_wrapper.h"

#include "src/server/grpc/rls_proto.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/faulty_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;

constexpr const char* kConfig = R"yaml(
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: path
    value: /login
    rate_limit: {unit: second, requests_per_unit: 2, name: login}
  - key: internal
    rate_limit: {unlimited: true}
  - key: blocked
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: user
    rate_limits:
      - {unit: second, requests_per_unit: 2, name: user_per_second}
      - {unit: hour, requests_per_unit: 5, name: user_per_hour}
  - key: tier
    value: free
    rate_limit: {unit: minute, requests_per_unit: 100, name: tier_free}
    descriptors:
      - key: tenant
        rate_limit:
          unit: minute
          requests_per_unit: 1
          name: tenant_limit
          replaces: [{name: tier_free}]
  - key: quota_a
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1, name: quota_a}
  - key: quota_b
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2, name: quota_b}
  - key: quota_zero
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: quota_shadow
    quota_mode: true
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: five_minutes
    rate_limit: {unit: minute, unit_multiplier: 5, requests_per_unit: 2}
  - key: sliding
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: sliding_window}
  - key: in_flight
    rate_limit: {unit: hour, requests_per_unit: 2, debt: true}
)yaml";

class RateLimitServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(RateLimitServiceOptions{}); }

  void Build(RateLimitServiceOptions options) {
    auto memory = MemoryStore::Create({.clock = &clock_});
    ASSERT_TRUE(memory.ok());
    auto faulty = std::make_unique<testing::FaultyStore>(*std::move(memory));
    faulty_ = faulty.get();
    store_ = WithFailurePolicy(
        std::move(faulty),
        {.mode = FailureMode::kPropagate, .breaker_failure_threshold = 0, .clock = &clock_});
    options.clock = &clock_;
    service_ = std::make_unique<RateLimitService>(*store_, metrics_, options);
    const ConfigSource source{.name = "edge.yaml", .content = kConfig};
    auto config = ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    service_->SetConfig(*config);
  }

  absl::StatusOr<RateLimitResponse> Call(const std::string& text_proto) {
    RateLimitRequest request;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text_proto, &request)) << text_proto;
    absl::StatusOr<RateLimitResponse> out = absl::InternalError("callback not run");
    int calls = 0;
    ShouldRateLimit(*service_, request, [&](absl::StatusOr<RateLimitResponse> r) {
      ++calls;
      out = std::move(r);
    });
    EXPECT_EQ(calls, 1);  // The memory store completes inline.
    return out;
  }

  testing::ManualClock clock_{std::chrono::seconds(1'700'000'000)};
  Metrics metrics_;
  testing::FaultyStore* faulty_ = nullptr;
  std::unique_ptr<FailurePolicyStore> store_;
  std::unique_ptr<RateLimitService> service_;
};

constexpr const char* kIp =
    R"pb(domain: "edge"
         descriptors { entries { key: "remote_address" value: "10.0.0.1" } })pb";

TEST_F(RateLimitServiceTest, AdmitsUpToTheLimitThenOverLimit) {
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kIp);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
    ASSERT_EQ(r->statuses_size(), 1);
    EXPECT_EQ(r->statuses(0).limit_remaining(), static_cast<uint32_t>(2 - i));
    EXPECT_EQ(r->statuses(0).current_limit().requests_per_unit(), 3u);
    EXPECT_EQ(r->statuses(0).current_limit().unit(), RateLimitResponse::RateLimit::MINUTE);
  }
  absl::StatusOr<RateLimitResponse> r = Call(kIp);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 0u);
  // The window is aligned to the minute: 1'700'000'000 s is 20 s into one.
  EXPECT_EQ(r->statuses(0).duration_until_reset().seconds(), 40);
}

// Verifies exact-reference mode on a fixed window and a sliding window (sluice's extension) in one
// request: the fixed window counts every hit, also of rejected requests, and a 0-hit check is OK
// at exactly its limit; the sliding window keeps sluice's counting (a denial records nothing).
TEST_F(RateLimitServiceTest, ExactReferenceModeCountsRejectedHitsOfFixedWindowsOnly) {
  Build({.response_headers = true, .reference_semantics = true});
  constexpr const char* kBoth =
      R"pb(domain: "edge"
           descriptors { entries { key: "remote_address" value: "10.0.0.9" } }
           descriptors { entries { key: "sliding" value: "s" } })pb";
  constexpr const char* kIpZeroHits =
      R"pb(domain: "edge"
           descriptors {
             entries { key: "remote_address" value: "10.0.0.9" }
             hits_addend { value: 0 }
           })pb";
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kBoth);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  }
  absl::StatusOr<RateLimitResponse> r = Call(kBoth);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OK);  // 3 of 3: counted.
  EXPECT_EQ(r->statuses(0).limit_remaining(), 0u);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  for (const auto& h : r->response_headers_to_add()) EXPECT_NE(h.key(), "Retry-After");
  // At exactly the limit a 0-hit check is OK, as the reference answers.
  r = Call(kIpZeroHits);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 0u);
  // The fixed window counts this rejected request's hit too (4 of 3); the sliding window recorded
  // none of its denials.
  r = Call(kBoth);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  r = Call(kIpZeroHits);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  // Half way into the next minute the previous one weighs half: 2 admitted count 1, so 1 is left.
  // (Had the sliding window recorded its two denials, 4 would count 2: nothing left.)
  clock_.Advance(std::chrono::seconds(70));
  r = Call(R"pb(domain: "edge"
                descriptors {
                  entries { key: "sliding" value: "s" }
                  hits_addend { value: 0 }
                })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 1u);
}

// Verifies exact-reference mode with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: a request that a
// `requests_per_unit: 0` limit rejects leaves the other descriptors' counters untouched (the
// reference's GET sees the blocked key go past its limit of 0), and one that goes past a limit
// increments that limit only.
TEST_F(RateLimitServiceTest, ExactReferenceModeWithStopIncrementsOnlyTheLimitsGoingOver) {
  Build({.reference_semantics = true, .stop_increment_when_over_limit = true});
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "edge"
                descriptors { entries { key: "blocked" value: "x" } }
                descriptors { entries { key: "remote_address" value: "10.0.0.7" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).limit_remaining(), 3u);  // Not incremented.
  constexpr const char* kTwo =
      R"pb(domain: "edge"
           descriptors {
             entries { key: "remote_address" value: "10.0.0.7" }
             hits_addend { value: 2 }
           }
           descriptors {
             entries { key: "path" value: "/login" }
             hits_addend { value: 2 }
           })pb";
  r = Call(kTwo);  // 2 of 3 and 2 of 2.
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  r = Call(kTwo);  // Both would go over: both are incremented (4 of 3, 4 of 2).
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  r = Call(R"pb(domain: "edge"
                descriptors {
                  entries { key: "remote_address" value: "10.0.0.7" }
                  hits_addend { value: 0 }
                })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
}

TEST_F(RateLimitServiceTest, EachValueOfAValuelessKeyHasItsOwnCounter) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(kIp).ok());
  absl::StatusOr<RateLimitResponse> other =
      Call(R"pb(domain: "edge"
                descriptors { entries { key: "remote_address" value: "10.0.0.2" } })pb");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->overall_code(), RateLimitResponse::OK);
}

TEST_F(RateLimitServiceTest, UnmatchedDescriptorIsOkWithoutALimit) {
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "edge"
                descriptors { entries { key: "nothing" value: "x" } })pb");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ASSERT_EQ(r->statuses_size(), 1);
  EXPECT_FALSE(r->statuses(0).has_current_limit());
}

TEST_F(RateLimitServiceTest, UnlimitedNeverTouchesTheStore) {
  faulty_->Fail(absl::UnavailableError("down"));
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "edge"
                descriptors { entries { key: "internal" value: "x" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 4294967295u);
  EXPECT_EQ(faulty_->failed(), 0);
}

TEST_F(RateLimitServiceTest, ZeroRequestsPerUnitDeniesEverything) {
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "edge"
                descriptors { entries { key: "blocked" value: "x" } })pb");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
}

// Verifies a request over one limit consumes none of the others (all-or-nothing).
TEST_F(RateLimitServiceTest, RejectedRequestConsumesNoOtherDescriptor) {
  constexpr const char* kIpAndBlocked = R"pb(
    domain: "edge"
    descriptors { entries { key: "remote_address" value: "10.0.0.9" } }
    descriptors { entries { key: "blocked" value: "x" } })pb";
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kIpAndBlocked);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
    EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OK);
    EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  }
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "edge"
                descriptors { entries { key: "remote_address" value: "10.0.0.9" } })pb");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).limit_remaining(), 2u);
}

// Verifies a limit only peeked at, because another limit already rejected the request, reports
// OVER_LIMIT when its own hits would not fit (as the reference reports each descriptor), and that
// such a peek is not put in the over-limit cache: the store denied nothing.
TEST_F(RateLimitServiceTest, PeekedLimitThatWouldNotFitIsOverButNotCached) {
  Build({.over_limit_cache_entries = 100});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(kIp).ok());
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "edge"
                descriptors { entries { key: "blocked" value: "x" } }
                descriptors { entries { key: "remote_address" value: "10.0.0.1" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).limit_remaining(), 0u);
  faulty_->Fail(absl::UnavailableError("down"));
  EXPECT_TRUE(absl::IsUnavailable(Call(kIp).status()));
}

TEST_F(RateLimitServiceTest, SeveralLimitsOnOneDescriptorAreAllEnforced) {
  constexpr const char* kUser = R"pb(domain: "edge"
                                     descriptors { entries { key: "user" value: "u1" } })pb";
  int admitted = 0;
  for (int second = 0; second < 4; ++second) {
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<RateLimitResponse> r = Call(kUser);
      ASSERT_TRUE(r.ok());
      admitted += r->overall_code() == RateLimitResponse::OK ? 1 : 0;
    }
    clock_.Advance(std::chrono::seconds(1));
  }
  // 2 per second for 4 seconds would be 8, but the hourly limit is 5.
  EXPECT_EQ(admitted, 5);
  absl::StatusOr<RateLimitResponse> r = Call(kUser);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).current_limit().name(), "user_per_hour");
}

// Verifies quota mode as the reference defines it: the request is over only when every quota-mode
// descriptor is over (or a normal limit is); a quota-mode descriptor over on its own reports
// OVER_LIMIT in its status while the overall code stays OK.
TEST_F(RateLimitServiceTest, QuotaModeIsOverOnlyWhenEveryQuotaDescriptorIsOver) {
  constexpr const char* kBothQuotas = R"pb(
    domain: "edge"
    descriptors { entries { key: "quota_a" value: "t" } }
    descriptors { entries { key: "quota_b" value: "t" } })pb";
  // 1st: both admit. 2nd: a (1/min) is over, b (2/min) admits: OK overall.
  // 3rd: both over: OVER_LIMIT.
  const RateLimitResponse::Code expected_overall[] = {RateLimitResponse::OK, RateLimitResponse::OK,
                                                      RateLimitResponse::OVER_LIMIT};
  const RateLimitResponse::Code expected_a[] = {
      RateLimitResponse::OK, RateLimitResponse::OVER_LIMIT, RateLimitResponse::OVER_LIMIT};
  const RateLimitResponse::Code expected_b[] = {RateLimitResponse::OK, RateLimitResponse::OK,
                                                RateLimitResponse::OVER_LIMIT};
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kBothQuotas);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->overall_code(), expected_overall[i]) << i;
    EXPECT_EQ(r->statuses(0).code(), expected_a[i]) << i;
    EXPECT_EQ(r->statuses(1).code(), expected_b[i]) << i;
  }
}

// Verifies a quota-mode descriptor whose rule is also in shadow mode counts as one that passed, as
// the reference reports it OK: beside it, another quota-mode descriptor over its limit does not
// make the request over.
TEST_F(RateLimitServiceTest, ShadowQuotaDescriptorCountsAsPassed) {
  constexpr const char* kZeroAndShadow = R"pb(
    domain: "edge"
    descriptors { entries { key: "quota_zero" value: "s" } }
    descriptors { entries { key: "quota_shadow" value: "s" } })pb";
  absl::StatusOr<RateLimitResponse> r = Call(kZeroAndShadow);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OK);
}

// Verifies a normal limit still rejects on its own beside an admitting quota-mode descriptor, and
// that a request rejected because every quota-mode descriptor is over consumes no normal limit.
TEST_F(RateLimitServiceTest, QuotaModeBesideNormalLimits) {
  constexpr const char* kQuotaAndBlocked = R"pb(
    domain: "edge"
    descriptors { entries { key: "quota_b" value: "n" } }
    descriptors { entries { key: "blocked" value: "x" } })pb";
  absl::StatusOr<RateLimitResponse> r = Call(kQuotaAndBlocked);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OK);

  constexpr const char* kZeroQuotaAndIp = R"pb(
    domain: "edge"
    descriptors { entries { key: "quota_zero" value: "z" } }
    descriptors { entries { key: "remote_address" value: "10.9.9.9" } })pb";
  for (int i = 0; i < 4; ++i) {
    r = Call(kZeroQuotaAndIp);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
    EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
    EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OK);
  }
  // The IP limit (3/min) was only peeked at by the rejected requests.
  r = Call(R"pb(domain: "edge"
                descriptors { entries { key: "remote_address" value: "10.9.9.9" } })pb");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).limit_remaining(), 2u);
}

// A store that answers every asynchronous check on a thread of its own per call, as the Redis
// store answers on its I/O threads, so that quota-mode, shadow and enforced answers race.
class ThreadedStore final : public StoreWrapper {
 public:
  explicit ThreadedStore(Store& target) : StoreWrapper(target) {}
  ~ThreadedStore() override { Join(); }
  void Join() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
  }
  std::string_view Name() const override { return "threaded"; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    std::vector<std::string> keys;
    std::vector<LimitCheck> copy(checks.begin(), checks.end());
    for (const LimitCheck& c : checks) keys.emplace_back(c.key);
    Start([this, keys = std::move(keys), copy = std::move(copy), done = std::move(done)]() mutable {
      for (size_t i = 0; i < copy.size(); ++i) copy[i].key = keys[i];
      DecideOn(inner(), copy, std::move(done));
    });
  }

 private:
  void Start(absl::AnyInvocable<void() &&> work) {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back([work = std::move(work)]() mutable { std::move(work)(); });
  }
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

// Verifies quota mode, shadow mode and normal limits decide the same when every store answer comes
// on another thread (run under TSan by `make tsan`).
TEST(RateLimitServiceThreaded, QuotaShadowAndNormalLimitsWithAnswersOnOtherThreads) {
  testing::ManualClock clock{std::chrono::seconds(1'700'000'000)};
  auto memory = MemoryStore::Create({.clock = &clock});
  ASSERT_TRUE(memory.ok());
  ThreadedStore store(**memory);
  Metrics metrics;
  RateLimitService service(store, metrics, RateLimitServiceOptions{.clock = &clock});
  const ConfigSource source{.name = "edge.yaml", .content = kConfig};
  auto config = ParseRateLimitConfig({&source, 1});
  ASSERT_TRUE(config.ok()) << config.status();
  service.SetConfig(*config);
  RateLimitRequest request;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        domain: "edge"
        descriptors { entries { key: "quota_a" value: "x" } }
        descriptors { entries { key: "quota_b" value: "x" } }
        descriptors { entries { key: "shadow" value: "x" } }
        descriptors { entries { key: "user" value: "x" } })pb",
      &request));
  // quota_a 1/min, quota_b 2/min, user 2/s and 5/h: OK, OK (a over), then over (both quotas).
  const RateLimitResponse::Code expected[] = {RateLimitResponse::OK, RateLimitResponse::OK,
                                              RateLimitResponse::OVER_LIMIT};
  for (const RateLimitResponse::Code want : expected) {
    std::promise<absl::StatusOr<RateLimitResponse>> answer;
    ShouldRateLimit(service, request, [&answer](absl::StatusOr<RateLimitResponse> r) {
      answer.set_value(std::move(r));
    });
    absl::StatusOr<RateLimitResponse> r = answer.get_future().get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), want);
    ASSERT_EQ(r->statuses_size(), 4);
  }
  store.Join();
  // The rejected third request consumed none of the user limits: the hourly limit (5) has room
  // for exactly three more, at most two a second.
  RateLimitRequest user;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(domain: "edge"
           descriptors { entries { key: "user" value: "x" } })pb",
      &user));
  auto decide = [&service, &user] {
    std::promise<absl::StatusOr<RateLimitResponse>> answer;
    ShouldRateLimit(service, user, [&answer](absl::StatusOr<RateLimitResponse> r) {
      answer.set_value(std::move(r));
    });
    absl::StatusOr<RateLimitResponse> r = answer.get_future().get();
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->overall_code() : RateLimitResponse::UNKNOWN;
  };
  int admitted = 0;
  for (int second = 0; second < 3; ++second) {
    clock.Advance(std::chrono::seconds(1));
    for (int i = 0; i < 2; ++i) admitted += decide() == RateLimitResponse::OK ? 1 : 0;
  }
  EXPECT_EQ(admitted, 3);
  store.Join();
}

TEST_F(RateLimitServiceTest, ShadowModeCountsButNeverDenies) {
  constexpr const char* kShadow = R"pb(domain: "edge"
                                       descriptors { entries { key: "shadow" value: "s" } })pb";
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kShadow);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  }
  EXPECT_THAT(
      metrics_.Render(),
      HasSubstr(
          "ratelimit_service_rate_limit_shadow_mode_total{domain=\"edge\",key=\"shadow\"} 2"));
}

TEST_F(RateLimitServiceTest, DescriptorHitsAddendWinsEvenWhenZero) {
  constexpr const char* kPeek = R"pb(
    domain: "edge"
    hits_addend: 2
    descriptors {
      entries { key: "remote_address" value: "10.0.0.7" }
      hits_addend { value: 0 }
    })pb";
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kPeek);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
    EXPECT_EQ(r->statuses(0).limit_remaining(), 3u);
  }
  constexpr const char* kTwoHits = R"pb(
    domain: "edge"
    hits_addend: 2
    descriptors { entries { key: "remote_address" value: "10.0.0.7" } })pb";
  absl::StatusOr<RateLimitResponse> r = Call(kTwoHits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).limit_remaining(), 1u);
}

// Verifies Envoy's "check with 0, debit later" pattern: a check with hits_addend 0 records
// nothing, and is OVER_LIMIT once the limit is exhausted.
TEST_F(RateLimitServiceTest, CheckWithZeroHitsIsOverLimitOnceExhausted) {
  constexpr const char* kCheck = R"pb(
    domain: "edge"
    descriptors {
      entries { key: "remote_address" value: "10.0.0.8" }
      hits_addend { value: 0 }
    })pb";
  constexpr const char* kDebit = R"pb(
    domain: "edge"
    descriptors { entries { key: "remote_address" value: "10.0.0.8" } })pb";
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kCheck);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK) << i;
    EXPECT_EQ(r->statuses(0).limit_remaining(), static_cast<uint32_t>(3 - i));
    ASSERT_TRUE(Call(kDebit).ok());
  }
  absl::StatusOr<RateLimitResponse> r = Call(kCheck);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 0u);
}

TEST_F(RateLimitServiceTest, ReplacesDropsTheReplacedLimit) {
  constexpr const char* kTenant = R"pb(
    domain: "edge"
    descriptors { entries { key: "tier" value: "free" } }
    descriptors {
      entries { key: "tier" value: "free" }
      entries { key: "tenant" value: "t1" }
    })pb";
  absl::StatusOr<RateLimitResponse> r = Call(kTenant);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  // The tier_free limit was replaced by tenant_limit, so the first descriptor reports no limit.
  EXPECT_FALSE(r->statuses(0).has_current_limit());
  EXPECT_EQ(r->statuses(1).current_limit().name(), "tenant_limit");
  r = Call(kTenant);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
}

TEST_F(RateLimitServiceTest, OverrideLimitBypassesTheConfig) {
  constexpr const char* kOverride = R"pb(
    domain: "edge"
    descriptors {
      entries { key: "anything" value: "x" }
      limit { requests_per_unit: 1 unit: SECOND }
    })pb";
  absl::StatusOr<RateLimitResponse> r = Call(kOverride);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).current_limit().requests_per_unit(), 1u);
  r = Call(kOverride);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
}

// Verifies Envoy 1.40's unit_multiplier: an override's window is that many units long, a
// multiplier of 0 or a window past 366 days is refused by name, and a rule's multiplier is
// reported in current_limit.
TEST_F(RateLimitServiceTest, UnitMultiplierOfAnOverrideAndInTheAnswer) {
  constexpr const char* kOverride = R"pb(
    domain: "edge"
    descriptors {
      entries { key: "anything" value: "x" }
      limit {
        requests_per_unit: 1
        unit: MINUTE
        unit_multiplier { value: 5 }
      }
    })pb";
  absl::StatusOr<RateLimitResponse> r = Call(kOverride);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->statuses(0).current_limit().unit_multiplier().value(), 5u);
  // 1'700'000'000 s is 200 s into a 5-minute window.
  EXPECT_EQ(r->statuses(0).duration_until_reset().seconds(), 100);
  clock_.Advance(std::chrono::seconds(99));
  EXPECT_EQ(Call(kOverride)->overall_code(), RateLimitResponse::OVER_LIMIT);
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Call(kOverride)->overall_code(), RateLimitResponse::OK);
  for (const char* bad : {"0", "400"}) {
    absl::StatusOr<RateLimitResponse> refused = Call(absl::StrCat(R"pb(
      domain: "edge"
      descriptors {
        entries { key: "anything" value: "x" }
        limit { requests_per_unit: 1 unit: DAY unit_multiplier { value: )pb",
                                                                 bad, "} } }"));
    EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
    EXPECT_THAT(refused.status().message(), HasSubstr("unit_multiplier"));
  }
  constexpr const char* kFive =
      R"pb(domain: "edge"
           descriptors { entries { key: "five_minutes" value: "v" } })pb";
  EXPECT_EQ(Call(kFive)->statuses(0).current_limit().unit_multiplier().value(), 5u);
  // A rule of one unit leaves the field unset, as before.
  EXPECT_FALSE(Call(kIp)->statuses(0).current_limit().has_unit_multiplier());
}

TEST_F(RateLimitServiceTest, StoreFailureIsUnavailable) {
  faulty_->Fail(absl::DeadlineExceededError("redis timed out"));
  absl::StatusOr<RateLimitResponse> r = Call(kIp);
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(
      metrics_.Render(),
      HasSubstr("ratelimit_service_should_rate_limit_error_total{err_type=\"redis_error\"} 1"));
}

TEST_F(RateLimitServiceTest, BadRequestsAreInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(Call(R"pb(domain: "")pb").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Call(R"pb(domain: "edge")pb").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Call(R"pb(domain: "edge"
                                                descriptors { entries { key: "" value: "x" } })pb")
                                          .status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Call(R"pb(
                                        domain: "edge"
                                        descriptors {
                                          entries { key: "a" value: "x" }
                                          limit { requests_per_unit: 1 unit: UNKNOWN }
                                        })pb")
                                          .status()));
}

TEST_F(RateLimitServiceTest, ResponseHeadersDescribeTheClosestLimit) {
  Build({.response_headers = true});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(kIp).ok());
  absl::StatusOr<RateLimitResponse> r = Call(kIp);
  ASSERT_TRUE(r.ok());
  std::map<std::string, std::string> headers;
  for (const auto& h : r->response_headers_to_add()) headers[h.key()] = h.value();
  EXPECT_EQ(headers["RateLimit-Limit"], "3");
  EXPECT_EQ(headers["RateLimit-Remaining"], "0");
  EXPECT_EQ(headers["RateLimit-Reset"], "40");
  EXPECT_EQ(headers["Retry-After"], "40");
}

// Verifies the over-limit cache answers without the store until the denial's retry_after passes.
TEST_F(RateLimitServiceTest, OverLimitCacheSkipsTheStoreUntilReset) {
  Build({.over_limit_cache_entries = 100});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Call(kIp).ok());  // The 4th is denied and cached.
  faulty_->Fail(absl::UnavailableError("down"));
  absl::StatusOr<RateLimitResponse> r = Call(kIp);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(faulty_->failed(), 0);
  clock_.Advance(std::chrono::seconds(40));
  EXPECT_FALSE(Call(kIp).ok());  // Expired: the store is asked again (and is down).
}

// Verifies the over-limit cache answers with the time until the limit resets, as the store would.
TEST_F(RateLimitServiceTest, OverLimitCacheAnswerCarriesTheReset) {
  Build({.over_limit_cache_entries = 100});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Call(kIp).ok());  // The 4th is denied and cached.
  // An entry answers for at most 1 s (a refund through another instance is seen within it).
  clock_.Advance(std::chrono::milliseconds(900));
  faulty_->Fail(absl::UnavailableError("down"));
  absl::StatusOr<RateLimitResponse> r = Call(kIp);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).duration_until_reset().seconds(), 40);  // 39.1 s, rounded up
}

// Verifies a byte bound alone turns the over-limit cache on, as LOCAL_CACHE_SIZE_IN_BYTES alone
// turns on the reference's cache.
TEST_F(RateLimitServiceTest, OverLimitCacheByteBoundAloneTurnsItOn) {
  Build({.over_limit_cache_bytes = 1 << 20});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Call(kIp).ok());  // The 4th is denied and cached.
  faulty_->Fail(absl::UnavailableError("down"));
  absl::StatusOr<RateLimitResponse> r = Call(kIp);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(faulty_->failed(), 0);
}

// Verifies a byte bound too small for any entry leaves the store asked every time.
TEST_F(RateLimitServiceTest, OverLimitCacheByteBoundIsHonoured) {
  Build({.over_limit_cache_bytes = 1});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Call(kIp).ok());
  faulty_->Fail(absl::UnavailableError("down"));
  EXPECT_FALSE(Call(kIp).ok());
}

// Verifies the global quota mode (QUOTA_MODE) as the reference decides it: every descriptor is a
// quota-mode descriptor, so one over limit alone leaves the request OK, and a descriptor that no
// limit matched counts as one that passed.
TEST_F(RateLimitServiceTest, GlobalQuotaModeIsOverOnlyWhenEveryDescriptorIs) {
  Build({.global_quota_mode = true});
  constexpr const char* kBlockedAndIp = R"pb(
    domain: "edge"
    descriptors { entries { key: "blocked" value: "x" } }
    descriptors { entries { key: "remote_address" value: "10.1.1.1" } })pb";
  absl::StatusOr<RateLimitResponse> r = Call(kBlockedAndIp);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OK);

  constexpr const char* kBlockedOnly = R"pb(
    domain: "edge"
    descriptors { entries { key: "blocked" value: "x" } })pb";
  r = Call(kBlockedOnly);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);

  constexpr const char* kBlockedAndUnmatched = R"pb(
    domain: "edge"
    descriptors { entries { key: "blocked" value: "x" } }
    descriptors { entries { key: "no_such_key" value: "x" } })pb";
  r = Call(kBlockedAndUnmatched);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);

  constexpr const char* kBlockedAndUnlimited = R"pb(
    domain: "edge"
    descriptors { entries { key: "blocked" value: "x" } }
    descriptors { entries { key: "internal" value: "x" } })pb";
  r = Call(kBlockedAndUnlimited);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);

  // Once the IP is over its limit of 3 a minute too, every descriptor is over.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(kBlockedAndIp).ok());
  r = Call(kBlockedAndIp);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
}

// Verifies `requests_per_unit: 0` reports the time to the end of its unit, as the reference does.
TEST_F(RateLimitServiceTest, ZeroRequestsPerUnitReportsTheUnitReset) {
  Build({});
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "edge"
                descriptors { entries { key: "blocked" value: "x" } })pb");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).duration_until_reset().seconds(), 1);  // A per-second limit.
}

TEST_F(RateLimitServiceTest, OverLimitReportsNothingRemaining) {
  absl::StatusOr<RateLimitResponse> r = Call(R"pb(
    domain: "edge"
    hits_addend: 5
    descriptors { entries { key: "remote_address" value: "10.0.0.5" } })pb");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 0u);
}

// Verifies duration_until_reset is in whole seconds, rounded up, as the reference reports it.
TEST_F(RateLimitServiceTest, DurationUntilResetIsWholeSeconds) {
  clock_.Advance(std::chrono::milliseconds(500));
  absl::StatusOr<RateLimitResponse> r = Call(kIp);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).duration_until_reset().seconds(), 40);
  EXPECT_EQ(r->statuses(0).duration_until_reset().nanos(), 0);
}

// Verifies a request-level limit is ignored on a domain the config does not know, as the
// reference ignores it (it looks the domain up first).
TEST_F(RateLimitServiceTest, OverrideIsIgnoredOnAnUnknownDomain) {
  constexpr const char* kOverride = R"pb(
    domain: "nowhere"
    descriptors {
      entries { key: "anything" value: "x" }
      limit { requests_per_unit: 1 unit: SECOND }
    })pb";
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kOverride);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
    EXPECT_FALSE(r->statuses(0).has_current_limit());
  }
}

// Verifies global shadow mode keeps each descriptor's OVER_LIMIT and turns only the overall code
// OK, as the reference does.
TEST_F(RateLimitServiceTest, GlobalShadowModeKeepsTheDescriptorStatus) {
  Build({.global_shadow_mode = true});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(kIp).ok());
  absl::StatusOr<RateLimitResponse> r = Call(kIp);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 0u);
}

// Verifies a descriptor without entries matches nothing and is OK, as in the reference.
TEST_F(RateLimitServiceTest, DescriptorWithoutEntriesIsOk) {
  absl::StatusOr<RateLimitResponse> r = Call(R"pb(domain: "edge"
                                                  descriptors {})pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ASSERT_EQ(r->statuses_size(), 1);
  EXPECT_FALSE(r->statuses(0).has_current_limit());
}

// Verifies Envoy's is_negative_hits (a refund): the descriptor's hits go back to its limit, never
// below empty; the answer is OK with what remains after it, even while the limit is over; the
// refunded hits count in total_negative_hits and in no other stat.
TEST_F(RateLimitServiceTest, NegativeHitsGiveBackWhatWasChargedAndAreAlwaysOk) {
  constexpr const char* kRefund =
      R"pb(domain: "edge"
           descriptors {
             entries { key: "remote_address" value: "10.0.0.1" }
             hits_addend { value: 2 }
             is_negative_hits: true
           })pb";
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OK);
  ASSERT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OVER_LIMIT);
  absl::StatusOr<RateLimitResponse> r = Call(kRefund);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ASSERT_EQ(r->statuses_size(), 1);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 2u);
  EXPECT_EQ(r->statuses(0).current_limit().requests_per_unit(), 3u);
  // Exactly the two hits given back pass again.
  EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OVER_LIMIT);
  // Never below empty: refunds of more than was charged leave the limit at 3.
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Call(kRefund)->overall_code(), RateLimitResponse::OK);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OVER_LIMIT);
  const std::string metrics = metrics_.Render();
  EXPECT_THAT(metrics, HasSubstr("ratelimit_service_rate_limit_total_negative_hits_total{domain="
                                 "\"edge\",key=\"remote_address\"} 12"));
  // 3 + 1 + 3 + 4 charged hits; the refunds are in no other counter.
  EXPECT_THAT(metrics, HasSubstr("ratelimit_service_rate_limit_total_hits_total{domain=\"edge\","
                                 "key=\"remote_address\"} 11"));
}

// Verifies that a refund beside a charge in one request is given back although the charge is
// over, and that a refund to a `requests_per_unit: 0` limit is OK, as the reference answers.
TEST_F(RateLimitServiceTest, NegativeHitsAreGivenBackBesideAnOverLimitCharge) {
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OK);
  absl::StatusOr<RateLimitResponse> r = Call(
      R"pb(domain: "edge"
           descriptors {
             entries { key: "path" value: "/login" }
             hits_addend { value: 5 }
           }
           descriptors {
             entries { key: "remote_address" value: "10.0.0.1" }
             is_negative_hits: true
           }
           descriptors {
             entries { key: "blocked" value: "b" }
             is_negative_hits: true
           })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(1).limit_remaining(), 1u);
  EXPECT_EQ(r->statuses(2).code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OVER_LIMIT);
}

// Verifies a refund in exact-reference mode: the fixed window counting rejected hits goes down by
// the refund (the reference's DecrementScript), floored at 0.
TEST_F(RateLimitServiceTest, NegativeHitsInExactReferenceModeLowerTheCounter) {
  Build({.reference_semantics = true});
  for (int i = 0; i < 5; ++i) (void)Call(kIp);  // counter 5 of 3
  absl::StatusOr<RateLimitResponse> r = Call(
      R"pb(domain: "edge"
           descriptors {
             entries { key: "remote_address" value: "10.0.0.1" }
             hits_addend { value: 3 }
             is_negative_hits: true
           })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).limit_remaining(), 1u);  // counter 2
  EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OVER_LIMIT);
}

// Verifies a `debt` rule under sluice's default counting: a refused request's hit is recorded, so
// the refund Envoy sends when that request's stream ends (it does for refused ones too) gives
// back exactly what it took, and requests in flight stay at the limit. The refused hit is also
// recorded when another limit refuses the request, and the rest of that request is only peeked.
TEST_F(RateLimitServiceTest, ADebtRuleRecordsRefusedHitsSoThatRefundsCancelThem) {
  constexpr const char* kIn = R"pb(domain: "edge"
                                   descriptors { entries { key: "in_flight" value: "u" } })pb";
  constexpr const char* kDone = R"pb(domain: "edge"
                                     descriptors {
                                       entries { key: "in_flight" value: "u" }
                                       is_negative_hits: true
                                     })pb";
  EXPECT_EQ(Call(kIn)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIn)->overall_code(), RateLimitResponse::OK);
  // Two in flight: a third and a fourth are refused, and each one's refund comes.
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<RateLimitResponse> refused = Call(kIn);
    EXPECT_EQ(refused->overall_code(), RateLimitResponse::OVER_LIMIT);
    EXPECT_EQ(refused->statuses(0).limit_remaining(), 0u);
    EXPECT_EQ(Call(kDone)->overall_code(), RateLimitResponse::OK);
  }
  // Still two in flight: the next is refused too (without `debt` it would pass).
  EXPECT_EQ(Call(kIn)->overall_code(), RateLimitResponse::OVER_LIMIT);
  ASSERT_EQ(Call(kDone)->overall_code(), RateLimitResponse::OK);
  // One finishes: one more passes, then none.
  ASSERT_EQ(Call(kDone)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIn)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kIn)->overall_code(), RateLimitResponse::OVER_LIMIT);
  ASSERT_EQ(Call(kDone)->overall_code(), RateLimitResponse::OK);
  // Beside a limit that refuses the request, the debt limit still records its hit (and its
  // refund gives it back); the refusing request charges nothing else.
  ASSERT_EQ(Call(kDone)->overall_code(), RateLimitResponse::OK);  // one in flight
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Call(kIp)->overall_code(), RateLimitResponse::OK);
  absl::StatusOr<RateLimitResponse> both = Call(
      R"pb(domain: "edge"
           descriptors { entries { key: "in_flight" value: "u" } }
           descriptors { entries { key: "remote_address" value: "10.0.0.1" } })pb");
  EXPECT_EQ(both->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(both->statuses(0).code(), RateLimitResponse::OK);
  EXPECT_EQ(both->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  // Its hit was recorded: two in flight now.
  EXPECT_EQ(Call(kIn)->overall_code(), RateLimitResponse::OVER_LIMIT);
}

}  // namespace
// Verifies unit_multiplier: 2 per 5 minutes holds across minutes, resets at the 5-minute boundary
// (aligned to the epoch: 1'700'000'000 s is 200 s into a 300 s window).
TEST_F(RateLimitServiceTest, UnitMultiplierMakesAWindowOfSeveralUnits) {
  constexpr const char* kFive =
      R"pb(domain: "edge"
           descriptors { entries { key: "five_minutes" value: "a" } })pb";
  absl::StatusOr<RateLimitResponse> r = Call(kFive);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statuses(0).duration_until_reset().seconds(), 100);
  clock_.Advance(std::chrono::seconds(61));
  ASSERT_EQ(Call(kFive)->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(Call(kFive)->overall_code(), RateLimitResponse::OVER_LIMIT);
  clock_.Advance(std::chrono::seconds(39));  // The next 5-minute window.
  EXPECT_EQ(Call(kFive)->overall_code(), RateLimitResponse::OK);
}

}  // namespace sluice::server
