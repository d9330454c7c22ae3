#include "src/server/admin/http_api.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/config.h"
#include "sluice/failure_policy.h"
#include "sluice/memory_store.h"

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
    rate_limit: {unit: minute, requests_per_unit: 1}
)yaml";

constexpr const char* kRequest =
    R"({"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"1.2.3.4"}]}]})";

class HttpApiTest : public ::testing::Test {
 protected:
  HttpApiTest() {
    auto memory = MemoryStore::Create({.clock = &clock_});
    EXPECT_TRUE(memory.ok());
    auto faulty = std::make_unique<testing::FaultyStore>(*std::move(memory));
    faulty_ = faulty.get();
    store_ = WithFailurePolicy(std::move(faulty), {.breaker_failure_threshold = 0});
    service_ = std::make_unique<RateLimitService>(*store_, metrics_,
                                                  RateLimitServiceOptions{.clock = &clock_});
    api_ = std::make_unique<HttpApi>(*service_, metrics_, *faulty_);
  }

  void LoadConfig() {
    const ConfigSource source{.name = "edge.yaml", .content = kConfig};
    auto config = ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    service_->SetConfig(*config);
  }

  HttpResponse Send(std::string method, std::string target, std::string body = "") {
    HttpResponse out{.status = 0};
    api_->Handle(
        HttpRequest{
            .method = std::move(method), .target = std::move(target), .body = std::move(body)},
        [&out](HttpResponse r) { out = std::move(r); });
    return out;
  }

  testing::ManualClock clock_;
  Metrics metrics_;
  testing::FaultyStore* faulty_ = nullptr;
  std::unique_ptr<FailurePolicyStore> store_;
  std::unique_ptr<RateLimitService> service_;
  std::unique_ptr<HttpApi> api_;
};

TEST_F(HttpApiTest, JsonAnswers200Then429) {
  LoadConfig();
  HttpResponse ok = Send("POST", "/json", kRequest);
  EXPECT_EQ(ok.status, 200);
  EXPECT_THAT(ok.body, HasSubstr(R"("overallCode":"OK")"));
  HttpResponse over = Send("POST", "/json", kRequest);
  EXPECT_EQ(over.status, 429);
  EXPECT_THAT(over.body, HasSubstr(R"("overallCode":"OVER_LIMIT")"));
}

// RESPONSE_DYNAMIC_METADATA: /json carries it as the reference's protojson does.
TEST_F(HttpApiTest, JsonCarriesDynamicMetadataWhenOn) {
  service_ = std::make_unique<RateLimitService>(
      *store_, metrics_,
      RateLimitServiceOptions{.clock = &clock_, .response_dynamic_metadata = true});
  api_ = std::make_unique<HttpApi>(*service_, metrics_, *faulty_);
  LoadConfig();
  HttpResponse ok = Send("POST", "/json", kRequest);
  EXPECT_EQ(ok.status, 200);
  EXPECT_THAT(ok.body, HasSubstr(R"("dynamicMetadata":{)"));
  EXPECT_THAT(ok.body, HasSubstr(R"("remote_address=1.2.3.4")"));
}

TEST_F(HttpApiTest, BadJsonIs400AndChangesNothing) {
  LoadConfig();
  EXPECT_EQ(Send("POST", "/json", "{not json").status, 400);
  EXPECT_EQ(Send("POST", "/json", R"({"domain":"edge","bogus":1})").status, 400);
  EXPECT_EQ(Send("POST", "/json", R"({"domain":"edge","descriptors":[]})").status, 400);
  EXPECT_EQ(Send("POST", "/json", R"({"domain":"edge","hitsAddend":-1})").status, 400);
  EXPECT_EQ(Send("POST", "/json", kRequest).status, 200);
}

TEST_F(HttpApiTest, StoreFailureIs503NotA400) {
  LoadConfig();
  faulty_->Fail(absl::UnavailableError("redis down"));
  HttpResponse r = Send("POST", "/json", kRequest);
  EXPECT_EQ(r.status, 503);
  EXPECT_THAT(r.body, HasSubstr("redis down"));
}

// Verifies health follows config, store and termination, and that unhealthy is 500, as the
// reference answers it (load balancers configured for the reference expect it).
TEST_F(HttpApiTest, HealthNeedsConfigStoreAndNoTermination) {
  EXPECT_EQ(Send("GET", "/healthcheck").status, 500);  // No config yet.
  LoadConfig();
  EXPECT_EQ(Send("GET", "/healthcheck").status, 200);
  faulty_->Fail(absl::UnavailableError("redis down"));
  EXPECT_EQ(Send("GET", "/healthcheck").status, 500);
  faulty_->Heal();
  EXPECT_EQ(Send("GET", "/healthcheck").status, 200);
  api_->MarkTerminating();
  EXPECT_EQ(Send("GET", "/healthcheck").status, 500);
}

// Verifies /healthcheck follows the listeners' health: a dead listener makes it 500, naming it.
TEST_F(HttpApiTest, HealthFailsWhileAListenerIsDead) {
  LoadConfig();
  absl::Status listeners = absl::OkStatus();
  api_->SetListenerHealth([&listeners] { return listeners; });
  EXPECT_EQ(Send("GET", "/healthcheck").status, 200);
  listeners = absl::UnavailableError("grpc listener stopped accepting: Invalid argument");
  const HttpResponse dead = Send("GET", "/healthcheck");
  EXPECT_EQ(dead.status, 500);
  EXPECT_NE(dead.body.find("grpc listener stopped accepting"), std::string::npos) << dead.body;
  listeners = absl::OkStatus();
  EXPECT_EQ(Send("GET", "/healthcheck").status, 200);
}

TEST_F(HttpApiTest, MetricsAndUnknownRoutes) {
  LoadConfig();
  Send("POST", "/json", kRequest);
  HttpResponse m = Send("GET", "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_THAT(m.content_type, HasSubstr("text/plain"));
  EXPECT_THAT(m.body, HasSubstr("ratelimit_service_rate_limit_total_hits_total"));
  EXPECT_EQ(Send("GET", "/nope").status, 404);
  EXPECT_EQ(Send("GET", "/json").status, 405);
}

}  // namespace
}  // namespace sluice::server
