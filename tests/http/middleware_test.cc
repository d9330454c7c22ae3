// Tests of the middleware core over the memory store and a manual clock: rule and tier selection,
// several limits per request, headers and bodies, dry run, counters, failures, hooks, async
// completion, config swaps and identity resolution.
#include "sluice/http/middleware.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <boost/json/parse.hpp>

#include "sluice/http/client_ip.h"
#include "sluice/key.h"
#include "sluice/memory_store.h"

#include "tests/http/http_test_util.h"
#include "tests/mocks/mock_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice::http {
namespace {

using ::sluice::http::testing::HeaderOr;
using ::sluice::http::testing::RecordingStore;
using ::sluice::http::testing::Rules;
using ::sluice::http::testing::Send;
using ::sluice::http::testing::TestRequest;
using ::sluice::http::testing::ViewOf;
using std::chrono::seconds;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StrictMock;

constexpr char kShopRules[] = R"(
area: shop
identity:
  trusted_proxies: [10.0.0.0/8]
response:
  legacy_headers: true
routes:
  - name: orders
    method: GET
    path: /api/orders/{id}
    tiers:
      anonymous:
        - {name: burst, limit: 2, period: 1s}
        - {name: hourly, limit: 3, period: 1h}
      premium:
        - {name: burst, limit: 5, period: 1s}
      gold: []
      "*":
        - {name: other, limit: 1, period: 1m}
  - name: create
    method: POST
    path: /api/orders
    cost: 3
    limits:
      - {name: writes, limit: 5, period: 1m}
)";

class MiddlewareTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(kShopRules); }

  void Build(std::string_view yaml, MiddlewareOptions options = {}) {
    memory_ = MemoryStore::Create({.clock = &clock_}).value();
    recording_ = std::make_unique<RecordingStore>(*memory_);
    options.store = recording_.get();
    options.config = Rules(yaml);
    options.clock = &clock_;
    middleware_ = Middleware::Create(std::move(options)).value();
  }

  Verdict Get(std::string path, std::string peer = "192.0.2.7",
              std::vector<std::pair<std::string, std::string>> headers = {}) {
    return Send(*middleware_, TestRequest{.method = "GET",
                                          .path = std::move(path),
                                          .peer = std::move(peer),
                                          .headers = std::move(headers)});
  }

  sluice::testing::ManualClock clock_;
  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<RecordingStore> recording_;
  std::unique_ptr<Middleware> middleware_;
};

TEST_F(MiddlewareTest, RequestWithoutRuleNeitherCallsTheStoreNorAddsHeaders) {
  StrictMock<sluice::testing::MockStore> store;  // Any call fails the test.
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = &store, .config = Rules(kShopRules)}).value();
  const Verdict v = Send(*middleware, {.method = "GET", .path = "/healthz"});
  EXPECT_TRUE(v.passed());
  EXPECT_TRUE(v.headers.empty());
  EXPECT_TRUE(Send(*middleware, {.method = "DELETE", .path = "/api/orders/1"}).passed());
  EXPECT_EQ(middleware->Stats().enabled, 0u);
}

// Verifies that ids in the URL do not make separate counters: the key holds the template.
TEST_F(MiddlewareTest, CountsPerRouteTemplateNotPerUrl) {
  EXPECT_TRUE(Get("/api/orders/1").passed());
  EXPECT_TRUE(Get("/api/orders/2?x=1").passed());
  const Verdict third = Get("/api/orders/3");
  EXPECT_FALSE(third.passed());
  EXPECT_EQ(third.status, 429);
  EXPECT_THAT(recording_->keys(),
              ElementsAre(R"({ip:192.0.2.7}shop:GET /api/orders/{id}:anonymous:burst)",
                          R"({ip:192.0.2.7}shop:GET /api/orders/{id}:anonymous:hourly)"));
}

TEST_F(MiddlewareTest, EachClientHasItsOwnBucket) {
  EXPECT_TRUE(Get("/api/orders/1", "192.0.2.1").passed());
  EXPECT_TRUE(Get("/api/orders/1", "192.0.2.1").passed());
  EXPECT_FALSE(Get("/api/orders/1", "192.0.2.1").passed());
  EXPECT_TRUE(Get("/api/orders/1", "192.0.2.2").passed());
}

// Verifies every spelling of one IPv4 client is one bucket: the plain form, its IPv4-mapped IPv6
// form and text with surrounding spaces all give the key of the canonical text.
TEST_F(MiddlewareTest, OneIpv4ClientIsOneBucketWhateverTheTextOfItsAddress) {
  EXPECT_TRUE(Get("/api/orders/1", "198.51.100.9").passed());
  EXPECT_TRUE(Get("/api/orders/1", "::ffff:198.51.100.9").passed());
  EXPECT_FALSE(Get("/api/orders/1", " 198.51.100.9 ").passed());
  for (const std::string& key : recording_->keys()) {
    EXPECT_THAT(key, ::testing::StartsWith("{ip:198.51.100.9}"));
  }
}

// Verifies the identity of a peer address is the canonical text of what ParseIpAddress() reads
// from it ("ip:unknown" when it reads nothing), whichever way the middleware gets there.
TEST_F(MiddlewareTest, PeerIdentityIsTheCanonicalAddressOrUnknown) {
  const std::vector<std::string> peers = {"0.0.0.0",     "255.255.255.255", "256.1.2.3",
                                          "1.2.3.256",   "01.2.3.4",        "1.2.3.04",
                                          "1.2.3",       "1.2.3.4.5",       "1..2.3",
                                          "1.2.3.",      ".1.2.3",          "299.0.0.1",
                                          "199.0.0.1",   "1.2.3.999",       "1a.2.3.4",
                                          "::1",         "::ffff:1.2.3.4",  "",
                                          "2001:db8::1", "10.0.0.10",       "100.200.250.255"};
  for (const std::string& peer : peers) {
    Build(kShopRules);
    Get("/api/orders/1", peer);
    const std::optional<IpAddress> ip = ParseIpAddress(peer);
    std::string expected = "ip:unknown";
    if (ip.has_value() && !ip->v6) expected = "ip:" + ip->ToString();
    if (ip.has_value() && ip->v6) continue;  // IPv6 keys are per /64; tested above.
    const std::vector<std::string> keys = recording_->keys();
    ASSERT_FALSE(keys.empty()) << peer;
    // The identity is the key's tag (docs/keys.md).
    const KeyParts parts = SplitKey(keys[0]);
    EXPECT_TRUE(parts.tagged);
    EXPECT_EQ(UnescapeKeyTag(parts.tag), expected) << "peer '" << peer << "'";
  }
}

TEST_F(MiddlewareTest, EachTierHasItsOwnLimits) {
  MiddlewareOptions options;
  options.authenticate = [](const RequestView& r) -> std::optional<Principal> {
    std::optional<std::string_view> user = r.Header("X-User");
    std::optional<std::string_view> tier = r.Header("X-Tier");
    if (!user) return std::nullopt;
    return Principal{.id = std::string(*user), .tier = std::string(tier.value_or(""))};
  };
  Build(kShopRules, std::move(options));
  auto as = [&](std::string user, std::string tier) {
    return Get("/api/orders/7", "192.0.2.7", {{"X-User", user}, {"X-Tier", tier}});
  };
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(as("alice", "premium").passed()) << i;
  EXPECT_FALSE(as("alice", "premium").passed());
  // Another premium user has a bucket of their own, with the premium limit.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(as("bob", "premium").passed()) << i;
  // An anonymous client from the same address is held to the anonymous limit.
  EXPECT_TRUE(Get("/api/orders/7").passed());
  EXPECT_TRUE(Get("/api/orders/7").passed());
  EXPECT_FALSE(Get("/api/orders/7").passed());
  // gold is listed with no limits; unlisted tiers (and "authenticated", the default of a principal
  // without a tier) get "*".
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(as("carol", "gold").passed());
  EXPECT_TRUE(as("dave", "").passed());
  EXPECT_FALSE(as("dave", "").passed());
  EXPECT_EQ(HeaderOr(as("erin", "silver"), "RateLimit-Policy"), R"("other";q=1;w=60)");
}

TEST_F(MiddlewareTest, EnforcesEveryLimitAndRetryAfterIsTheTimeUntilPassing) {
  EXPECT_TRUE(Get("/api/orders/1").passed());
  clock_.Advance(std::chrono::milliseconds(300));
  EXPECT_TRUE(Get("/api/orders/1").passed());
  Verdict burst = Get("/api/orders/1");
  ASSERT_FALSE(burst.passed());
  // 700 ms until the next second: rounded up to 1, not the hour.
  EXPECT_EQ(HeaderOr(burst, "Retry-After"), "1");
  EXPECT_THAT(burst.body, HasSubstr(R"("violated-policies":["burst"])"));
  clock_.Advance(std::chrono::milliseconds(700));
  EXPECT_TRUE(Get("/api/orders/1").passed());  // The third of the hour.
  clock_.Advance(seconds(1));
  Verdict hourly = Get("/api/orders/1");
  ASSERT_FALSE(hourly.passed());
  // The clock started 800 s into an hour and moved 2 s: 2798 s to the end of the window.
  EXPECT_EQ(HeaderOr(hourly, "Retry-After"), "2798");
  EXPECT_EQ(HeaderOr(hourly, "RateLimit"), R"("burst";r=2;t=1, "hourly";r=0;t=2798)");
  EXPECT_EQ(HeaderOr(hourly, "X-RateLimit-Reset"), "2798");
  EXPECT_THAT(hourly.body, HasSubstr(R"("violated-policies":["hourly"])"));
  clock_.Advance(seconds(2797));
  EXPECT_FALSE(Get("/api/orders/1").passed());
  clock_.Advance(seconds(1));
  EXPECT_TRUE(Get("/api/orders/1").passed());
}

// Verifies that Retry-After is the real wait of a sliding window counter, which can exceed its
// period: with a limit of 1 the previous window's request weighs until the window after next.
TEST_F(MiddlewareTest, SlidingWindowRetryAfterIsTheRealWaitBeyondOnePeriod) {
  Build(
      "routes:\n  - name: r\n    path: /r\n"
      "    limits: [{name: s, limit: 1, period: 1m, algorithm: sliding_window}]\n");
  // 20 s into a minute window (see below): admitted.
  EXPECT_TRUE(Get("/r").passed());
  clock_.Advance(seconds(10));
  const Verdict denied = Get("/r");
  ASSERT_FALSE(denied.passed());
  // The request weighs 1 until the end of this window (30 s) and then fades over the next 60 s.
  EXPECT_EQ(HeaderOr(denied, "Retry-After"), "90");
  EXPECT_EQ(HeaderOr(denied, "RateLimit-Policy"), R"("s";q=1;w=60)");
  clock_.Advance(seconds(89));
  EXPECT_FALSE(Get("/r").passed());
  clock_.Advance(seconds(1));
  EXPECT_TRUE(Get("/r").passed());
}

// Verifies the GlobalLimiter order and CheckAll's all-or-nothing: a request refused by its route
// takes nothing from the global limit.
TEST_F(MiddlewareTest, GlobalLimitsComeFirstAndAreNotSpentOnRejections) {
  Build(R"(
global:
  limits: [{name: global, limit: 10, period: 1m}]
routes:
  - name: r
    path: /r
    limits: [{name: route, limit: 1, period: 1m}]
)");
  // Minute windows are aligned to the epoch; the clock starts 20 s into one.
  const Verdict first = Get("/r");
  EXPECT_EQ(HeaderOr(first, "RateLimit-Policy"), R"("global";q=10;w=60, "route";q=1;w=60)");
  EXPECT_EQ(HeaderOr(first, "RateLimit"), R"("global";r=9;t=40, "route";r=0;t=40)");
  for (int i = 0; i < 5; ++i) {
    const Verdict denied = Get("/r");
    ASSERT_FALSE(denied.passed());
    EXPECT_EQ(HeaderOr(denied, "RateLimit"), R"("global";r=9;t=40, "route";r=0;t=40)");
  }
  // A request no route matches meets the global limit alone.
  EXPECT_EQ(HeaderOr(Get("/other"), "RateLimit"), R"("global";r=8;t=40)");
}

TEST_F(MiddlewareTest, RouteCostIsTakenFromEveryLimit) {
  TestRequest post{.method = "POST", .path = "/api/orders"};
  const Verdict first = Send(*middleware_, post);
  EXPECT_TRUE(first.passed());
  EXPECT_EQ(HeaderOr(first, "RateLimit"), R"("writes";r=2;t=40)");
  EXPECT_FALSE(Send(*middleware_, post).passed());
}

TEST_F(MiddlewareTest, PassedResponsesCarryTheDraftAndLegacyHeaders) {
  const Verdict v = Get("/api/orders/1");
  ASSERT_TRUE(v.passed());
  EXPECT_EQ(v.status, 0);
  EXPECT_THAT(
      v.headers,
      ElementsAre(ResponseHeader{"RateLimit-Policy", R"("burst";q=2;w=1, "hourly";q=3;w=3600)"},
                  ResponseHeader{"RateLimit", R"("burst";r=1;t=1, "hourly";r=2;t=2800)"},
                  ResponseHeader{"X-RateLimit-Limit", "2"},
                  ResponseHeader{"X-RateLimit-Remaining", "1"},
                  ResponseHeader{"X-RateLimit-Reset", "1"}));
}

TEST_F(MiddlewareTest, RejectionIsProblemJson) {
  Get("/api/orders/1");
  Get("/api/orders/1");
  const Verdict v = Get("/api/orders/1");
  ASSERT_FALSE(v.passed());
  EXPECT_EQ(v.status, 429);
  EXPECT_EQ(v.content_type, "application/problem+json");
  EXPECT_EQ(v.headers.front(), (ResponseHeader{"Retry-After", "1"}));
  const boost::json::object body = boost::json::parse(v.body).as_object();
  EXPECT_EQ(body.at("type").as_string(),
            "https://iana.org/assignments/http-problem-types#quota-exceeded");
  EXPECT_EQ(body.at("title").as_string(), "Quota exceeded");
  EXPECT_EQ(body.at("status").as_int64(), 429);
  EXPECT_EQ(body.at("detail").as_string(), "Quota exceeded for 'burst'; retry in 1 s.");
  ASSERT_EQ(body.at("violated-policies").as_array().size(), 1u);
  EXPECT_EQ(body.at("violated-policies").as_array()[0].as_string(), "burst");
}

TEST_F(MiddlewareTest, OverLimitStatusIsConfigurable) {
  Build(
      "response: {over_limit_status: 403}\nroutes:\n  - name: r\n    path: /r\n"
      "    limits: [{limit: 1, period: 1s}]\n");
  Get("/r");
  EXPECT_EQ(Get("/r").status, 403);
}

TEST_F(MiddlewareTest, DryRunDecidesCountsAndReportsButNeverRejects) {
  Build(R"(
dry_run: true
routes:
  - name: r
    path: /r
    limits: [{name: p, limit: 1, period: 1m}]
)");
  EXPECT_TRUE(Get("/r").passed());
  const Verdict over = Get("/r");
  EXPECT_TRUE(over.passed());
  EXPECT_EQ(HeaderOr(over, "RateLimit"), R"("p";r=0;t=40)");
  EXPECT_EQ(over.FindHeader("Retry-After"), nullptr);
  const MiddlewareStats stats = middleware_->Stats();
  EXPECT_EQ(stats.enabled, 2u);
  EXPECT_EQ(stats.ok, 1u);
  EXPECT_EQ(stats.over_limit, 1u);
  EXPECT_EQ(stats.enforced, 0u);
}

TEST_F(MiddlewareTest, CountsEnabledEnforcedOverLimitOkAndError) {
  Get("/api/orders/1");
  Get("/api/orders/1");
  Get("/api/orders/1");
  Get("/healthz");
  const MiddlewareStats stats = middleware_->Stats();
  EXPECT_EQ(stats.enabled, 3u);
  EXPECT_EQ(stats.ok, 2u);
  EXPECT_EQ(stats.over_limit, 1u);
  EXPECT_EQ(stats.enforced, 1u);
  EXPECT_EQ(stats.error, 0u);
}

TEST_F(MiddlewareTest, RejectHookCanRewriteTheResponse) {
  MiddlewareOptions options;
  options.on_reject = [](const RejectInfo& info, Verdict& verdict) {
    EXPECT_EQ(info.reason, RejectReason::kOverLimit);
    EXPECT_EQ(info.rule, "orders");
    EXPECT_EQ(info.tier, "anonymous");
    EXPECT_EQ(info.identity, "ip:192.0.2.7");
    EXPECT_THAT(info.violated_policies, ElementsAre("burst"));
    EXPECT_EQ(info.retry_after_seconds, 1);
    verdict.status = 420;
    verdict.content_type = "text/plain";
    verdict.body = "enhance your calm";
  };
  Build(kShopRules, std::move(options));
  Get("/api/orders/1");
  Get("/api/orders/1");
  const Verdict v = Get("/api/orders/1");
  EXPECT_EQ(v.status, 420);
  EXPECT_EQ(v.body, "enhance your calm");
  EXPECT_EQ(HeaderOr(v, "Retry-After"), "1");
}

TEST_F(MiddlewareTest, AsyncCompletesInlineWithTheMemoryStore) {
  TestRequest request{.path = "/api/orders/1"};
  std::optional<Verdict> verdict;
  middleware_->DecideAsync(ViewOf(request).view(), [&](Verdict v) { verdict = std::move(v); });
  ASSERT_TRUE(verdict.has_value());
  EXPECT_TRUE(verdict->passed());
  EXPECT_EQ(HeaderOr(*verdict, "RateLimit"), R"("burst";r=1;t=1, "hourly";r=2;t=2800)");
  std::optional<Verdict> unlimited;
  middleware_->DecideAsync(ViewOf({.path = "/healthz"}).view(),
                           [&](Verdict v) { unlimited = std::move(v); });
  ASSERT_TRUE(unlimited.has_value());
  EXPECT_TRUE(unlimited->headers.empty());
}

TEST_F(MiddlewareTest, SetConfigSwapsRulesAndRefusesBadOnes) {
  Get("/api/orders/1");
  Get("/api/orders/1");
  EXPECT_FALSE(Get("/api/orders/1").passed());
  ASSERT_TRUE(
      middleware_
          ->SetConfig(Rules("area: shop\nroutes:\n  - name: orders\n    method: GET\n"
                            "    path: /api/orders/{id}\n    limits: [{limit: 100, period: 1s}]\n"))
          .ok());
  EXPECT_TRUE(Get("/api/orders/1").passed());
  EXPECT_EQ(middleware_->SetConfig(nullptr).code(), absl::StatusCode::kInvalidArgument);
  const std::filesystem::path bad =
      std::filesystem::temp_directory_path() / absl::StrCat("sluice-bad-", getpid(), ".yaml");
  std::ofstream(bad) << "routes: [{name: r}]\n";
  const absl::Status reload = middleware_->Reload(bad);
  std::filesystem::remove(bad);
  EXPECT_THAT(reload.message(), HasSubstr("sluice-bad-"));
  EXPECT_EQ(middleware_->config()->spec().routes[0].tiers[0].limits[0].limit.limit, 100);
  EXPECT_FALSE(Middleware::Create({.store = nullptr, .config = Rules(kShopRules)}).ok());
  EXPECT_FALSE(Middleware::Create({.store = memory_.get(), .config = nullptr}).ok());
}

TEST_F(MiddlewareTest, FrameworkRouteTemplateSelectsTheRule) {
  TestRequest request{.path = "/whatever/the/path/is", .route_template = "/api/orders/:id"};
  Send(*middleware_, request);
  Send(*middleware_, request);
  EXPECT_EQ(Send(*middleware_, request).status, 429);
}

// Verifies that the API key never reaches a store key, only its hash.
TEST_F(MiddlewareTest, ApiKeysAreHashedInKeys) {
  MiddlewareOptions options;
  options.verify_api_key = [](std::string_view) -> std::optional<std::string> { return ""; };
  Build(kShopRules, std::move(options));
  Get("/api/orders/1", "192.0.2.7", {{"X-API-Key", "sk_live_SECRET"}});
  for (const std::string& key : recording_->keys()) {
    EXPECT_THAT(key, ::testing::Not(HasSubstr("SECRET")));
    EXPECT_THAT(key, ::testing::MatchesRegex(
                         R"(\{key:[0-9a-f]{32}\}shop:GET /api/orders/\{id\}:\*:other)"));
  }
  // The API key's tier is "authenticated", which this rule does not list: "*" applies.
  EXPECT_EQ(recording_->keys().size(), 1u);
}

TEST_F(MiddlewareTest, UnknownApiKeysFallBackToTheClientIp) {
  MiddlewareOptions options;
  options.verify_api_key = [](std::string_view key) -> std::optional<std::string> {
    if (key == "good") return "premium";
    return std::nullopt;
  };
  Build(kShopRules, std::move(options));
  const Verdict good = Get("/api/orders/1", "192.0.2.7", {{"X-API-Key", "good"}});
  EXPECT_EQ(HeaderOr(good, "RateLimit-Policy"), R"("burst";q=5;w=1)");
  const Verdict bad = Get("/api/orders/1", "192.0.2.7", {{"X-API-Key", "made-up"}});
  EXPECT_EQ(HeaderOr(bad, "RateLimit-Policy"), R"("burst";q=2;w=1, "hourly";q=3;w=3600)");
}

TEST_F(MiddlewareTest, IPv6ClientsAreCountedPerSlash64) {
  EXPECT_TRUE(Get("/api/orders/1", "2001:db8:1:2::1").passed());
  EXPECT_TRUE(Get("/api/orders/1", "2001:db8:1:2:ffff::9").passed());
  EXPECT_FALSE(Get("/api/orders/1", "2001:db8:1:2::77").passed());
  EXPECT_TRUE(Get("/api/orders/1", "2001:db8:1:3::1").passed());
  EXPECT_THAT(recording_->keys()[0], ::testing::StartsWith("{ip:2001:db8:1:2::/64}"));
}

// reliability.md T17: with a trusted proxy, 1,000 different forged left-most values are one bucket.
TEST_F(MiddlewareTest, ForgedForwardedForValuesShareTheRealClientsBucket) {
  Build(
      "routes:\n  - name: r\n    path: /r\n    limits: [{limit: 5, period: 1h}]\n"
      "identity: {trusted_proxies: [10.0.0.0/8]}\n");
  std::mt19937 rng(7);
  int admitted = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string forged =
        absl::StrCat(rng() % 223 + 1, ".", rng() % 256, ".", rng() % 256, ".", rng() % 256);
    admitted += Get("/r", "10.0.0.1", {{"X-Forwarded-For", forged + ", 198.51.100.7"}}).passed();
  }
  EXPECT_EQ(admitted, 5);
  // A forged victim address cannot spend the victim's bucket.
  EXPECT_TRUE(Get("/r", "10.0.0.1", {{"X-Forwarded-For", "203.0.113.50"}}).passed());
  // From an untrusted peer the header is ignored altogether: the peer is the client.
  EXPECT_TRUE(Get("/r", "203.0.113.99", {{"X-Forwarded-For", "198.51.100.7"}}).passed());
}

}  // namespace
}  // namespace sluice::http
