// RateLimitService over stores whose answers arrive later, on another thread (as Redis answers on
// its I/O thread): the response waits for every check it reports, and nothing races (this file
// runs under TSan in CI).
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <google/protobuf/text_format.h>

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/grpc/rls_proto.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/deferred_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;

constexpr const char* kConfig = R"yaml(
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
)yaml";

class RateLimitServiceAsyncTest : public ::testing::Test {
 protected:
  void Build(RateLimitServiceOptions options) {
    auto memory = MemoryStore::Create({.clock = &clock_});
    ASSERT_TRUE(memory.ok());
    memory_ = *std::move(memory);
    store_ = std::make_unique<testing::DeferredStore>(*memory_);
    options.clock = &clock_;
    service_ = std::make_unique<RateLimitService>(*store_, metrics_, options);
    const ConfigSource source{.name = "edge.yaml", .content = kConfig};
    auto config = ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    service_->SetConfig(*config);
  }

  // Starts a decision; the answer lands in `answer_` when the service completes.
  void Start(const std::string& text_proto) {
    RateLimitRequest request;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text_proto, &request));
    ShouldRateLimit(*service_, request, [this](absl::StatusOr<RateLimitResponse> r) {
      answer_.set_value(std::move(r));
    });
  }

  bool Answered() { return future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

  testing::ManualClock clock_{std::chrono::seconds(1'700'000'000)};
  Metrics metrics_;
  std::unique_ptr<Store> memory_;
  std::unique_ptr<testing::DeferredStore> store_;
  std::unique_ptr<RateLimitService> service_;
  std::promise<absl::StatusOr<RateLimitResponse>> answer_;
  std::future<absl::StatusOr<RateLimitResponse>> future_ = answer_.get_future();
};

constexpr const char* kShadow = R"pb(domain: "edge"
                                     descriptors { entries { key: "shadow" value: "s" } })pb";

// Verifies a request whose only limit is in shadow mode is answered after the shadow check, with
// that check's limit and its stats, and with the store's answer on another thread.
TEST_F(RateLimitServiceAsyncTest, ShadowOnlyRequestWaitsForTheShadowCheck) {
  Build({});
  for (int i = 0; i < 2; ++i) {
    answer_ = {};
    future_ = answer_.get_future();
    Start(kShadow);
    EXPECT_FALSE(Answered()) << "answered before the shadow check";
    EXPECT_EQ(store_->RunPendingOnThread(), 1u);
    ASSERT_TRUE(Answered());
    absl::StatusOr<RateLimitResponse> r = future_.get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
    ASSERT_EQ(r->statuses_size(), 1);
    EXPECT_EQ(r->statuses(0).current_limit().requests_per_unit(), 1u);
  }
  EXPECT_THAT(
      metrics_.Render(),
      HasSubstr(
          "ratelimit_service_rate_limit_shadow_mode_total{domain=\"edge\",key=\"shadow\"} 1"));
}

// Verifies the same with global shadow mode, where every limit is shadowed.
TEST_F(RateLimitServiceAsyncTest, GlobalShadowModeWaitsForTheChecks) {
  Build({.global_shadow_mode = true});
  constexpr const char* kIp =
      R"pb(domain: "edge"
           descriptors { entries { key: "remote_address" value: "10.0.0.1" } })pb";
  for (int i = 0; i < 4; ++i) {
    answer_ = {};
    future_ = answer_.get_future();
    Start(kIp);
    EXPECT_FALSE(Answered()) << "answered before the check";
    EXPECT_GE(store_->RunPendingOnThread(), 1u);
    ASSERT_TRUE(Answered());
    absl::StatusOr<RateLimitResponse> r = future_.get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK) << i;
    ASSERT_EQ(r->statuses_size(), 1);
    EXPECT_EQ(r->statuses(0).current_limit().requests_per_unit(), 3u);
  }
}

}  // namespace
}  // namespace sluice::server
