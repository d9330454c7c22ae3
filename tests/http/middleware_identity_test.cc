// Who a request is counted as, under hostile clients (issue 13, point 8): an API key is an
// identity only when vouched for (a verifier, or the api_key_unverified opt-in), and the global
// flood guard counts a merely claimed identity by its client address.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/http/middleware.h"
#include "sluice/memory_store.h"

#include "tests/http/http_test_util.h"
#include "tests/testing/manual_clock.h"

namespace sluice::http {
namespace {

using ::sluice::http::testing::Rules;
using ::sluice::http::testing::Send;
using ::sluice::http::testing::TestRequest;

// A flood guard of 20 an hour per client and a route limit of 10 an hour, for every tier.
constexpr char kGuardedRules[] = R"(
global:
  limits:
    - {name: guard, limit: 20, period: 1h}
routes:
  - name: items
    path: /api/items
    limits:
      - {name: items, limit: 10, period: 1h}
)";

constexpr char kRouteOnlyRules[] = R"(
routes:
  - name: items
    path: /api/items
    limits:
      - {name: items, limit: 10, period: 1h}
)";

class MiddlewareIdentityTest : public ::testing::Test {
 protected:
  void Build(std::string_view yaml, MiddlewareOptions options = {}) {
    memory_ = MemoryStore::Create({.clock = &clock_}).value();
    options.store = memory_.get();
    options.config = Rules(yaml);
    options.clock = &clock_;
    middleware_ = Middleware::Create(std::move(options)).value();
  }

  // Sends `n` requests from `peer`, each with a different X-API-Key; returns how many passed.
  int RotateKeys(int n, const std::string& peer = "192.0.2.7", const std::string& prefix = "k") {
    int admitted = 0;
    for (int i = 0; i < n; ++i) {
      TestRequest request{.path = "/api/items", .peer = peer};
      request.Header("X-API-Key", absl::StrCat(prefix, i));
      admitted += Send(*middleware_, request).passed() ? 1 : 0;
    }
    return admitted;
  }

  sluice::testing::ManualClock clock_;
  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<Middleware> middleware_;
};

// Verifies issue 13's attack is closed by default: 1,000 requests with 1,000 different API keys
// and no verifier get the address's limit (10), not 1,000.
TEST_F(MiddlewareIdentityTest, RotatingApiKeysWithoutAVerifierGetNoFreshBucket) {
  Build(kRouteOnlyRules);
  EXPECT_EQ(RotateKeys(1000), 10);
  // The same holds behind the flood guard: the route's 10 bind first.
  Build(kGuardedRules);
  EXPECT_EQ(RotateKeys(1000), 10);
}

// Verifies the opt-in: with api_key_unverified each key has its own route bucket, but the flood
// guard counts the client address, so 1,000 keys from one address get the guard's 20, and
// another address has a guard of its own.
TEST_F(MiddlewareIdentityTest, UnverifiedKeysShareTheFloodGuardOfTheirAddress) {
  Build(absl::StrCat("identity: {api_key_unverified: true}\n", kGuardedRules));
  EXPECT_EQ(RotateKeys(1000), 20);
  EXPECT_EQ(RotateKeys(1000, "192.0.2.8", "other"), 20);
  // One key is still limited by its own route bucket (10), from any address.
  int admitted = 0;
  for (int i = 0; i < 30; ++i) {
    TestRequest request{.path = "/api/items", .peer = absl::StrCat("198.51.100.", i)};
    request.Header("X-API-Key", "one-key");
    admitted += Send(*middleware_, request).passed() ? 1 : 0;
  }
  EXPECT_EQ(admitted, 10);
}

// Verifies that a verified key is an identity of its own for the flood guard too: two valid keys
// from one address get 10 each, and made-up keys fall back to the address.
TEST_F(MiddlewareIdentityTest, VerifiedKeysAreIdentitiesOfTheirOwn) {
  MiddlewareOptions options;
  options.verify_api_key = [](std::string_view key) -> std::optional<std::string> {
    if (key == "valid-1" || key == "valid-2") return "";
    return std::nullopt;
  };
  Build(kGuardedRules, std::move(options));
  for (const char* key : {"valid-1", "valid-2"}) {
    int admitted = 0;
    for (int i = 0; i < 15; ++i) {
      TestRequest request{.path = "/api/items"};
      request.Header("X-API-Key", key);
      admitted += Send(*middleware_, request).passed() ? 1 : 0;
    }
    EXPECT_EQ(admitted, 10) << key;
  }
  EXPECT_EQ(RotateKeys(1000, "192.0.2.7", "made-up"), 10);
}

TEST(MiddlewareIdentityConfig, ParsesTheOptInAndTheFailureModes) {
  std::shared_ptr<const MiddlewareConfig> config = Rules(
      "identity: {api_key_unverified: true}\n"
      "response: {store_error: local, local_fallback_instances: 3}\n");
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(config->spec().identity.api_key_unverified);
  EXPECT_EQ(config->spec().response.store_error, StoreErrorAction::kLocal);
  EXPECT_EQ(config->spec().response.local_fallback_instances, 3);
  std::shared_ptr<const MiddlewareConfig> defaults = Rules("area: a\n");
  ASSERT_NE(defaults, nullptr);
  EXPECT_FALSE(defaults->spec().identity.api_key_unverified);
  EXPECT_EQ(defaults->spec().response.store_error, StoreErrorAction::kLocal);
  EXPECT_EQ(defaults->spec().response.local_fallback_instances, 1);
}

// Verifies that an identity the application verified already (RequestView::principal) is the
// request's identity and tier, and that the authentication callback is then not called.
TEST_F(MiddlewareIdentityTest, AVerifiedPrincipalReplacesTheAuthenticateCallback) {
  int calls = 0;
  Build(R"(
routes:
  - name: items
    path: /api/items
    tiers:
      premium: [{name: items, limit: 3, period: 1h}]
      "*": [{name: items, limit: 1, period: 1h}]
)",
        {.authenticate = [&calls](const RequestView&) -> std::optional<Principal> {
          ++calls;
          return Principal{.id = "from-callback", .tier = ""};
        }});
  const Principal alice{.id = "alice", .tier = "premium"};
  testing::TestRequest request{.path = "/api/items"};
  int passed = 0;
  for (int i = 0; i < 4; ++i) {
    testing::ViewOf view(request);
    RequestView with_principal = view.view();
    with_principal.principal = &alice;
    passed += middleware_->Decide(with_principal).passed() ? 1 : 0;
  }
  EXPECT_EQ(passed, 3);  // premium's 3, alice's own bucket
  EXPECT_EQ(calls, 0);
  // Without a principal the callback decides, as before: another user, the "*" limit.
  EXPECT_TRUE(Send(*middleware_, request).passed());
  EXPECT_FALSE(Send(*middleware_, request).passed());
  EXPECT_EQ(calls, 2);
}

// Verifies that a principal with an empty id (the application found no user) skips the callback
// too, and the request is counted by its address.
TEST_F(MiddlewareIdentityTest, AnEmptyPrincipalSkipsTheCallbackAndCountsTheAddress) {
  int calls = 0;
  Build(kRouteOnlyRules, {.authenticate = [&calls](const RequestView&) -> std::optional<Principal> {
          ++calls;
          return Principal{.id = "bob", .tier = ""};
        }});
  const Principal nobody;
  int passed = 0;
  for (int i = 0; i < 12; ++i) {
    // Two addresses: 10 each would pass if the callback's "bob" were used for both, 10 in all.
    testing::TestRequest request{.path = "/api/items",
                                 .peer = i % 2 == 0 ? "192.0.2.7" : "192.0.2.8"};
    testing::ViewOf view(request);
    RequestView anonymous = view.view();
    anonymous.principal = &nobody;
    passed += middleware_->Decide(anonymous).passed() ? 1 : 0;
  }
  EXPECT_EQ(passed, 12);
  EXPECT_EQ(calls, 0);
}

TEST(MiddlewareIdentityConfig, RefusesBadValuesWithTheirField) {
  for (const auto& [yaml, message] : std::vector<std::pair<std::string, std::string>>{
           {"identity: {api_key_unverified: yes}\n",
            "identity.api_key_unverified: must be true or false"},
           {"response: {store_error: open}\n",
            "response.store_error: must be local, reject or allow"},
           {"response: {local_fallback_instances: 0}\n",
            "response.local_fallback_instances: must be"}}) {
    absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
        ParseMiddlewareConfig(yaml, "test.yaml");
    ASSERT_FALSE(config.ok()) << yaml;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(), ::testing::HasSubstr(message)) << yaml;
  }
  MiddlewareSpec spec;
  spec.response.local_fallback_instances = 0;
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> created =
      MiddlewareConfig::Create(std::move(spec));
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.status().message(),
              ::testing::HasSubstr("response.local_fallback_instances: must be in [1, 1000000]"));
}

}  // namespace
}  // namespace sluice::http
