// RateLimitService over the real Redis store, whose answers arrive on its I/O thread: shadow-only
// requests, global shadow mode and mixed requests from several threads at once. Run under TSan in
// CI; the totals asserted are exact.
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <google/protobuf/text_format.h>

#include "sluice/config.h"
#include "sluice/redis_store.h"

#include "src/server/grpc/rls_proto.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/redis_server.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;

constexpr const char* kConfig = R"yaml(
domain: edge
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 1000}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 5}
)yaml";

class RateLimitServiceRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::RedisServer>> server = testing::RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    // Generous: sanitizer builds on two shared cores must not turn into timeouts.
    absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(
        {.url = server_->Url(), .command_timeout = std::chrono::milliseconds(5000)});
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->WaitForConnection(std::chrono::seconds(10)).ok());
    store_ = *std::move(store);
  }

  void Build(RateLimitServiceOptions options) {
    service_ = std::make_unique<RateLimitService>(*store_, metrics_, options);
    const ConfigSource source{.name = "edge.yaml", .content = kConfig};
    auto config = ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    service_->SetConfig(*config);
  }

  absl::StatusOr<RateLimitResponse> Decide(const std::string& text_proto) {
    RateLimitRequest request;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text_proto, &request));
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

  // Runs `per_thread` decisions of `text_proto` on each of `threads` threads; returns how many
  // were answered OK overall, and fails the test on any error or missing current_limit.
  int DecideConcurrently(const std::string& text_proto, int threads, int per_thread) {
    std::atomic<int> ok{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&] {
        for (int i = 0; i < per_thread; ++i) {
          absl::StatusOr<RateLimitResponse> r = Decide(text_proto);
          EXPECT_TRUE(r.ok()) << r.status();
          if (!r.ok()) continue;
          for (const auto& s : r->statuses()) EXPECT_TRUE(s.has_current_limit());
          if (r->overall_code() == RateLimitResponse::OK) ok.fetch_add(1);
        }
      });
    }
    for (std::thread& w : workers) w.join();
    return ok.load();
  }

  std::unique_ptr<testing::RedisServer> server_;
  std::unique_ptr<RedisStore> store_;
  Metrics metrics_;
  std::unique_ptr<RateLimitService> service_;
};

// Verifies shadow-only requests wait for the shadow check: every answer carries its limit, and
// the shadow stats count exactly the hits over the limit.
TEST_F(RateLimitServiceRedisTest, ShadowOnlyRequestsAnswerAfterTheShadowCheck) {
  Build({});
  constexpr const char* kShadow = R"pb(domain: "edge"
                                       descriptors { entries { key: "shadow" value: "s" } })pb";
  EXPECT_EQ(DecideConcurrently(kShadow, 4, 5), 20);
  EXPECT_THAT(
      metrics_.Render(),
      HasSubstr(
          "ratelimit_service_rate_limit_shadow_mode_total{domain=\"edge\",key=\"shadow\"} 15"));
}

// Verifies global shadow mode over Redis: never denies, and every answer carries its limit.
TEST_F(RateLimitServiceRedisTest, GlobalShadowModeAnswersAfterTheChecks) {
  Build({.global_shadow_mode = true});
  constexpr const char* kMixed = R"pb(domain: "edge"
                                      descriptors { entries { key: "user" value: "u" } }
                                      descriptors { entries { key: "shadow" value: "g" } })pb";
  EXPECT_EQ(DecideConcurrently(kMixed, 4, 5), 20);
}

}  // namespace
}  // namespace sluice::server
