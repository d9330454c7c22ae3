// Policies attached to handlers by name (MiddlewareSpec::policies, RequestView::policy): read from
// YAML and C++, validated, and decided by name alone, without the route rules or the global rule.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/http/middleware.h"
#include "sluice/http/middleware_config.h"
#include "sluice/memory_store.h"

#include "tests/http/http_test_util.h"

namespace sluice::http {
namespace {

using ::sluice::http::testing::HeaderOr;
using ::sluice::http::testing::RecordingStore;
using ::sluice::http::testing::Rules;
using ::sluice::http::testing::Send;
using ::sluice::http::testing::TestRequest;
using ::sluice::http::testing::ViewOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kRules[] = R"(
area: shop
global:
  limits: [{name: guard, limit: 100, period: 1h}]
routes:
  - name: items
    path: /api/items
    limits: [{name: items, limit: 5, period: 1h}]
policies:
  - name: orders-read
    tiers:
      premium: [{name: orders, limit: 4, period: 1h, algorithm: gcra}]
      "*": [{name: orders, limit: 2, period: 1h, algorithm: gcra}]
)";

Verdict SendByPolicy(Middleware& middleware, const TestRequest& request, std::string_view policy) {
  ViewOf view(request);
  RequestView by_policy = view.view();
  by_policy.policy = policy;
  return middleware.Decide(by_policy);
}

class MiddlewarePolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    memory_ = MemoryStore::Create({}).value();
    recording_ = std::make_unique<RecordingStore>(*memory_);
    middleware_ = Middleware::Create({.store = recording_.get(), .config = Rules(kRules)}).value();
  }

  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<RecordingStore> recording_;
  std::unique_ptr<Middleware> middleware_;
};

// Verifies that a request naming a policy meets that policy's limits alone, whatever its path:
// neither the route rule its path matches nor the global rule (the pre-routing handler's).
TEST_F(MiddlewarePolicyTest, DecidesByTheNamedPolicyAloneWhateverThePath) {
  const TestRequest request{.path = "/api/items"};
  Verdict first = SendByPolicy(*middleware_, request, "orders-read");
  ASSERT_TRUE(first.passed());
  EXPECT_EQ(HeaderOr(first, "RateLimit-Policy"), R"("orders";q=2;w=3600)");
  EXPECT_TRUE(SendByPolicy(*middleware_, request, "orders-read").passed());
  Verdict third = SendByPolicy(*middleware_, request, "orders-read");
  ASSERT_FALSE(third.passed());
  EXPECT_EQ(third.status, 429);
  EXPECT_THAT(third.body, HasSubstr(R"("violated-policies":["orders"])"));
  EXPECT_THAT(recording_->keys(), ElementsAre(R"({ip:192.0.2.7}shop:@orders-read:*:orders)"));
  // The same request by path meets the route and the global rule, with counters of their own.
  Verdict by_path = Send(*middleware_, request);
  ASSERT_TRUE(by_path.passed());
  EXPECT_EQ(HeaderOr(by_path, "RateLimit-Policy"), R"("guard";q=100;w=3600, "items";q=5;w=3600)");
}

TEST_F(MiddlewarePolicyTest, UsesTheTierOfTheIdentity) {
  MiddlewareOptions options{.store = memory_.get(), .config = Rules(kRules)};
  options.authenticate = [](const RequestView&) -> std::optional<Principal> {
    return Principal{.id = "alice", .tier = "premium"};
  };
  std::unique_ptr<Middleware> middleware = Middleware::Create(std::move(options)).value();
  int passed = 0;
  for (int i = 0; i < 6; ++i) {
    passed += SendByPolicy(*middleware, {.path = "/x"}, "orders-read").passed() ? 1 : 0;
  }
  EXPECT_EQ(passed, 4);
}

// Verifies that a name the running config lacks limits nothing (Limited() refuses it when wiring)
// and never falls back to the global rule, which the pre-routing handler applies already.
TEST_F(MiddlewarePolicyTest, AnUnknownPolicyLimitsNothing) {
  for (int i = 0; i < 3; ++i) {
    Verdict v = SendByPolicy(*middleware_, {.path = "/api/items"}, "no-such-policy");
    EXPECT_TRUE(v.passed());
    EXPECT_TRUE(v.headers.empty());
  }
  EXPECT_TRUE(recording_->keys().empty());
  EXPECT_TRUE(middleware_->config()->HasPolicy("orders-read"));
  EXPECT_FALSE(middleware_->config()->HasPolicy("no-such-policy"));
  EXPECT_FALSE(middleware_->config()->HasPolicy("items"));  // a route, not a policy
}

TEST(MiddlewarePolicyConfig, ReadsPoliciesFromYamlAndCpp) {
  std::shared_ptr<const MiddlewareConfig> config = Rules(kRules);
  ASSERT_NE(config, nullptr);
  ASSERT_EQ(config->spec().policies.size(), 1u);
  EXPECT_EQ(config->spec().policies[0].name, "orders-read");
  EXPECT_EQ(config->spec().policies[0].location, "test.yaml:10:5");
  EXPECT_THAT(config->Describe(), HasSubstr("policy orders-read [premium]: orders="));

  using std::chrono_literals::operator""s;
  MiddlewareSpec spec{
      .policies = {
          {.name = "search",
           .tiers = {{.tier = "*",
                      .limits = {{.name = "search", .limit = {.limit = 1, .period = 1s}}}}}}}};
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> created =
      MiddlewareConfig::Create(std::move(spec));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE((*created)->HasPolicy("search"));
}

TEST(MiddlewarePolicyConfig, RefusesBadPoliciesWithTheirField) {
  for (const auto& [yaml, message] : std::vector<std::pair<std::string, std::string>>{
           {"policies:\n  - {limits: [{limit: 1, period: 1s}]}\n",
            "test.yaml:2:5: policies[0].name: is required"},
           {"policies:\n  - {name: p, path: /x, limits: [{limit: 1, period: 1s}]}\n",
            "policies[0].path: unknown field"},
           {"policies:\n  - {name: p, method: GET, limits: [{limit: 1, period: 1s}]}\n",
            "policies[0].method: unknown field"},
           {"policies: {name: p}\n", "policies: must be a list of policies"},
           {"routes:\n  - {name: p, path: /x, limits: [{limit: 1, period: 1s}]}\n"
            "policies:\n  - {name: p, limits: [{limit: 1, period: 1s}]}\n",
            "policies[0].name: 'p' is the name of routes[0] too"},
           {"policies:\n  - {name: p, limits: [{limit: 1, period: 1s}]}\n"
            "  - {name: p, limits: [{limit: 2, period: 1s}]}\n",
            "policies[1].name: 'p' is the name of policies[0] too"},
           {"global:\n  limits: [{name: x, limit: 9, period: 1s}]\n"
            "policies:\n  - {name: p, limits: [{name: x, limit: 1, period: 1s}]}\n",
            "policy name 'x' of tier '*' is used twice"},
           {"policies:\n  - {name: p, limits: [{limit: 0, period: 1s}]}\n",
            "policies[0].limits[0].limit: must be in"}}) {
    absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
        ParseMiddlewareConfig(yaml, "test.yaml");
    ASSERT_FALSE(config.ok()) << yaml;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(), HasSubstr(message)) << yaml;
  }
  // A spec built in C++ goes through the same checks.
  MiddlewareSpec spec{.policies = {{.name = "p", .path = "/x"}}};
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> created =
      MiddlewareConfig::Create(std::move(spec));
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.status().message(), HasSubstr("policies[0]: a policy is attached"));
}

}  // namespace
}  // namespace sluice::http
