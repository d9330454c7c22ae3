// No way around a rule: every request that reaches a rule's handler is counted by that rule.
//
// The HEAD request that cpp-httplib answers with the GET handler, the spellings of a method, and
// the forms of a path (trailing slash, "//", "/./", "/../", percent-encoding and "%2F", ";", query,
// fragment, the absolute form, a long path): for the framework-neutral core, for the cpp-httplib
// adapter behind a real cpp-httplib server, and for the Beast adapter behind a BeastServer whose
// application routes as leniently as a Beast application might (percent-decoded, dot segments
// resolved, any method case). In the adapter tests the limit is spent first; then no form may reach
// the handler again: each is either counted (429) or refused by the framework or the adapter.
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include "sluice/http/beast.h"
#include "sluice/memory_store.h"
#include "sluice/net/beast_server.h"

#include "src/http/request_target.h"
#include "tests/http/http_test_util.h"
#include "tests/testing/http_client.h"

#ifdef SLUICE_HAVE_HTTPLIB
#include "sluice/http/httplib.h"
#endif

namespace sluice::http {
namespace {

using ::sluice::http::testing::Rules;
using ::sluice::http::testing::Send;
using ::sluice::net::BeastServer;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kRules =
    "routes:\n"
    "  - name: orders\n    method: GET\n    path: /api/orders\n"
    "    limits: [{name: orders, limit: 1, period: 1h}]\n"
    "  - name: item\n    method: GET\n    path: /api/items/{id}\n"
    "    limits: [{name: item, limit: 1, period: 1h}]\n";

// Methods a client may send where the rules say GET.
const std::vector<std::string> kMethods = {"GET", "HEAD", "get", "Get", "gEt", "head"};

// Spellings of the two routes' paths. Each either names the route for some router or names no
// route at all; none may reach a handler uncounted.
const std::vector<std::string> kTargets = {
    "/api/orders",
    "/api/orders/",
    "/api//orders",
    "//api/orders",
    "/api/./orders",
    "/api/x/../orders",
    "/api/orders/.",
    "/api/%6Frders",
    "/api/%6frders",
    "/api%2Forders",
    "/api%2forders",
    "/%61pi/orders",
    "/api/orders;x=1",
    "/api/orders?q=1",
    "/api/orders?q=/api/other",
    "/api/orders#fragment",
    "http://127.0.0.1/api/orders",
    "HTTP://127.0.0.1:80/api/orders?q",
    "https://elsewhere.example/api/orders",
    "/api\\orders",
    "/api/orders%00",
    "/api/items/42",
    "/api/items/42/",
    "/api/items/..",
    "/api/items/%2e%2e",
    "/api/items/a%2Fb",
    "/api/items/a;b",
    "/api/items/%34%32",
    "/api/items/" + std::string(6000, 'a'),
};

// ---------------------------------------------------------------------------------------------
// The core, as an adapter sees it.

class CoreBypassTest : public ::testing::Test {
 protected:
  void Use(std::string_view yaml) {
    middleware_ = Middleware::Create({.store = store_.get(), .config = Rules(yaml)}).value();
  }

  std::unique_ptr<MemoryStore> store_ = MemoryStore::Create({}).value();
  std::unique_ptr<Middleware> middleware_;
};

// Verifies a GET rule counts HEAD requests in the same counter as GET (the HEAD bypass: a
// framework answers HEAD with the GET handler).
TEST_F(CoreBypassTest, GetRuleCountsHeadInTheSameCounter) {
  Use("routes:\n  - name: orders\n    method: GET\n    path: /api/orders\n"
      "    limits: [{name: orders, limit: 2, period: 1h}]\n");
  EXPECT_TRUE(Send(*middleware_, {.method = "GET", .path = "/api/orders"}).passed());
  const Verdict head = Send(*middleware_, {.method = "HEAD", .path = "/api/orders"});
  EXPECT_TRUE(head.passed());
  EXPECT_THAT(testing::HeaderOr(head, "RateLimit"), HasSubstr("r=0"));
  EXPECT_EQ(Send(*middleware_, {.method = "GET", .path = "/api/orders"}).status, 429);
  EXPECT_EQ(Send(*middleware_, {.method = "HEAD", .path = "/api/orders"}).status, 429);
}

// Verifies the opt-out: with head_matches_get false, HEAD is limited only by rules naming it.
TEST_F(CoreBypassTest, HeadMatchesGetCanBeTurnedOff) {
  Use("head_matches_get: false\nroutes:\n  - name: orders\n    method: GET\n"
      "    path: /api/orders\n    limits: [{name: orders, limit: 1, period: 1h}]\n");
  for (int i = 0; i < 3; ++i) {
    const Verdict head = Send(*middleware_, {.method = "HEAD", .path = "/api/orders"});
    EXPECT_TRUE(head.passed());
    EXPECT_EQ(head.FindHeader("RateLimit"), nullptr);
  }
  EXPECT_TRUE(Send(*middleware_, {.method = "GET", .path = "/api/orders"}).passed());
  EXPECT_EQ(Send(*middleware_, {.method = "GET", .path = "/api/orders"}).status, 429);
}

// Verifies a HEAD rule after a GET rule of the same path is refused as shadowed (it could never
// match), and accepted when HEAD does not follow GET.
TEST(CoreBypassConfig, HeadRuleAfterGetRuleIsShadowedUnlessTurnedOff) {
  constexpr std::string_view kTwoRules =
      "routes:\n"
      "  - name: read\n    method: GET\n    path: /a\n    limits: [{name: r, limit: 1, period: "
      "1s}]\n"
      "  - name: head\n    method: HEAD\n    path: /a\n    limits: [{name: h, limit: 1, period: "
      "1s}]\n";
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
      ParseMiddlewareConfig(kTwoRules, "rules.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("shadowed by routes[0]"));
  EXPECT_TRUE(
      ParseMiddlewareConfig("head_matches_get: false\n" + std::string(kTwoRules), "rules.yaml")
          .ok());
}

// Verifies every spelling of the method matches the rule's (a router that accepts "get" must not
// see it walk around the GET rule), and other methods do not.
TEST_F(CoreBypassTest, MethodsMatchIgnoringCase) {
  Use(kRules);
  EXPECT_TRUE(Send(*middleware_, {.method = "GET", .path = "/api/orders"}).passed());
  for (const std::string& method : kMethods) {
    EXPECT_EQ(Send(*middleware_, {.method = method, .path = "/api/orders"}).status, 429) << method;
  }
  for (const char* method : {"POST", "OPTIONS", "GETS", "GE"}) {
    const Verdict v = Send(*middleware_, {.method = method, .path = "/api/orders"});
    EXPECT_TRUE(v.passed()) << method;
    EXPECT_EQ(v.FindHeader("RateLimit"), nullptr) << method;
  }
}

// Verifies the query, the fragment and the scheme and authority of an absolute-form target are
// not part of the path a rule matches.
TEST_F(CoreBypassTest, QueryFragmentAndAbsoluteFormAreNotThePath) {
  Use(kRules);
  EXPECT_TRUE(Send(*middleware_, {.path = "/api/orders"}).passed());
  for (const char* path :
       {"/api/orders?q=1", "/api/orders#f", "/api/orders?a#b", "http://h/api/orders",
        "HTTPS://h:443/api/orders?x=/y", "web+app://h/api/orders#x", "/api//orders/"}) {
    EXPECT_EQ(Send(*middleware_, {.path = path}).status, 429) << path;
  }
}

// Verifies a long path is matched whole: the item rule counts a 6000-byte id.
TEST_F(CoreBypassTest, LongPathIsMatched) {
  Use(kRules);
  const std::string path = "/api/items/" + std::string(6000, 'z');
  EXPECT_TRUE(Send(*middleware_, {.path = path}).passed());
  EXPECT_EQ(Send(*middleware_, {.path = path}).status, 429);
}

// Verifies an adapter that asks for it gets 400 for a path a router could read as another route,
// before any rule or store, and that the same paths go on to the rules when it does not ask.
TEST_F(CoreBypassTest, AmbiguousPathsAreRefusedWhenTheAdapterAsks) {
  Use(kRules);
  for (const char* path :
       {"/api/./orders", "/api/x/../orders", "/api/%6Frders", "/api%2Forders", "/api\\orders",
        "/api/items/..", "/api/items/%2e%2e", "/a%00", "http://h/api/%6frders?q"}) {
    RequestView view{.method = "GET", .path = path, .refuse_ambiguous_path = true};
    const Verdict refused = middleware_->Decide(view);
    EXPECT_EQ(refused.status, 400) << path;
    EXPECT_EQ(refused.content_type, "application/problem+json");
    EXPECT_THAT(refused.body, HasSubstr(R"("status":400)"));
    EXPECT_THAT(refused.body, Not(HasSubstr("violated-policies")));
    view.refuse_ambiguous_path = false;
    EXPECT_NE(middleware_->Decide(view).status, 400) << path;
  }
  EXPECT_EQ(middleware_->Stats().ambiguous_path, 9u);
  // Unambiguous paths pass the check and meet the rules.
  for (const char* path : {"/api/orders", "/api/items/a;b", "/api/items/%3F%23", "/a/.b/..c/"}) {
    RequestView view{.method = "GET", .path = path, .refuse_ambiguous_path = true};
    EXPECT_NE(middleware_->Decide(view).status, 400) << path;
  }
  EXPECT_EQ(middleware_->Stats().ambiguous_path, 9u);
}

TEST(RoutingPath, CutsQueryFragmentAndAbsoluteForm) {
  EXPECT_EQ(internal::RoutingPath("/a/b?c#d"), "/a/b");
  EXPECT_EQ(internal::RoutingPath("/a#d?c"), "/a");
  EXPECT_EQ(internal::RoutingPath("http://host:80/a/b?c"), "/a/b");
  EXPECT_EQ(internal::RoutingPath("http://host"), "/");
  EXPECT_EQ(internal::RoutingPath("http://host?x=/y"), "/");
  EXPECT_EQ(internal::RoutingPath("*"), "*");
  EXPECT_EQ(internal::RoutingPath("a/b"), "a/b");
  EXPECT_EQ(internal::RoutingPath("1http://h/a"), "1http://h/a");
  EXPECT_EQ(internal::RoutingPath(""), "");
}

TEST(AmbiguousPath, NamesWhatARouterCouldReadTwoWays) {
  EXPECT_EQ(internal::AmbiguousPath("/a/b/c"), "");
  EXPECT_EQ(internal::AmbiguousPath("/a/%3F/%zz/%4"), "");  // reserved or not an escape
  EXPECT_EQ(internal::AmbiguousPath("/..a/a../..."), "");
  EXPECT_THAT(internal::AmbiguousPath("/a/.."), HasSubstr("dot segment"));
  EXPECT_THAT(internal::AmbiguousPath("./a"), HasSubstr("dot segment"));
  EXPECT_THAT(internal::AmbiguousPath("/a/./"), HasSubstr("dot segment"));
  EXPECT_THAT(internal::AmbiguousPath("/a%2fb"), HasSubstr("encoded '/'"));
  EXPECT_THAT(internal::AmbiguousPath("/a%5Cb"), HasSubstr("encoded '/'"));
  EXPECT_THAT(internal::AmbiguousPath("/a\\b"), HasSubstr("backslash"));
  EXPECT_THAT(internal::AmbiguousPath("/a%00"), HasSubstr("NUL"));
  EXPECT_THAT(internal::AmbiguousPath("/%7Euser"), HasSubstr("unreserved"));
  EXPECT_THAT(internal::AmbiguousPath("/a/%2E%2E"), HasSubstr("unreserved"));
}

// ---------------------------------------------------------------------------------------------
// The adapters, behind real servers.

// Sends every method of kMethods with every target of kTargets and returns how many reached a
// handler, checking that each answer is a count (429) or a refusal.
int SendEveryForm(int port, const std::atomic<int>& handled) {
  const int before = handled.load();
  for (const std::string& method : kMethods) {
    for (const std::string& target : kTargets) {
      const int handled_before = handled.load();
      absl::StatusOr<int> status = ::sluice::testing::RawHttpStatus(port, method, target);
      EXPECT_TRUE(status.ok()) << method << " " << target << ": " << status.status();
      if (!status.ok()) continue;
      EXPECT_THAT(*status, AnyOf(429, 400, 404, 405, 414, 431)) << method << " " << target;
      EXPECT_EQ(handled.load(), handled_before)
          << method << " " << target << " reached the handler uncounted (" << *status << ")";
    }
  }
  return handled.load() - before;
}

#ifdef SLUICE_HAVE_HTTPLIB
TEST(HttplibBypass, NoFormOfARequestReachesTheHandlerOnceTheLimitIsSpent) {
  std::unique_ptr<MemoryStore> store = MemoryStore::Create({}).value();
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(), .config = Rules(kRules)}).value();
  std::atomic<int> handled{0};
  httplib::Server server;
  InstallRateLimit(server, *middleware);
  const auto handler = [&handled](const httplib::Request&, httplib::Response& res) {
    handled.fetch_add(1);
    res.set_content("ok", "text/plain");
  };
  server.Get("/api/orders", handler);
  server.Get(R"(/api/items/([^/]+))", handler);
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread listener([&server] { server.listen_after_bind(); });

  // The limit of each route is 1: spend it.
  EXPECT_EQ(::sluice::testing::RawHttpStatus(port, "GET", "/api/orders").value_or(0), 200);
  EXPECT_EQ(::sluice::testing::RawHttpStatus(port, "GET", "/api/items/1").value_or(0), 200);
  ASSERT_EQ(handled.load(), 2);
  EXPECT_EQ(SendEveryForm(port, handled), 0);

  server.stop();
  listener.join();
}
#endif  // SLUICE_HAVE_HTTPLIB

// An application on Beast that routes as leniently as one might: the target parsed as a URL
// (origin or absolute form), dot segments resolved, percent-decoded, empty segments skipped, the
// method in any case, HEAD served by GET routes. Returns whether a route takes the request.
bool LenientRoute(const BeastServer::Request& req) {
  const std::string_view target(req.target().data(), req.target().size());
  boost::urls::url url;
  if (!target.empty() && target.front() == '/') {
    auto parsed = boost::urls::parse_origin_form(target);
    if (!parsed) return false;
    url = *parsed;
  } else {
    auto parsed = boost::urls::parse_absolute_uri(target);
    if (!parsed) return false;
    url = *parsed;
  }
  url.normalize_path();
  std::vector<std::string> segments;
  for (const std::string segment : url.segments()) {
    if (!segment.empty()) segments.push_back(segment);
  }
  const std::string method(req.method_string());
  if (!EqualsIgnoreAsciiCase(method, "GET") && !EqualsIgnoreAsciiCase(method, "HEAD")) {
    return false;
  }
  if (segments.size() == 2) return segments[0] == "api" && segments[1] == "orders";
  return segments.size() == 3 && segments[0] == "api" && segments[1] == "items";
}

TEST(BeastBypass, NoFormOfARequestReachesALenientRouterOnceTheLimitIsSpent) {
  std::unique_ptr<MemoryStore> store = MemoryStore::Create({}).value();
  std::unique_ptr<Middleware> middleware =
      Middleware::Create({.store = store.get(), .config = Rules(kRules)}).value();
  std::atomic<int> handled{0};
  BeastServer server({.port = 0}, [&](BeastServer::Request& req,
                                      const boost::asio::ip::tcp::endpoint& peer,
                                      BeastServer::Responder respond) {
    const BeastServer::Executor executor = respond.executor();
    CheckBeastRequest(*middleware, executor, req, peer,
                      [&, respond = std::move(respond)](const Verdict& verdict) mutable {
                        if (!verdict.passed()) {
                          return std::move(respond)(MakeRejection(verdict, req.version(), false));
                        }
                        namespace bhttp = boost::beast::http;
                        const bool routed = LenientRoute(req);
                        if (routed) handled.fetch_add(1);
                        BeastServer::Response res(
                            routed ? bhttp::status::ok : bhttp::status::not_found, req.version());
                        res.body() = routed ? "ok" : "not found";
                        std::move(respond)(std::move(res));
                      });
  });
  ASSERT_TRUE(server.Start().ok());
  const int port = server.port();

  EXPECT_EQ(::sluice::testing::RawHttpStatus(port, "GET", "/api/orders").value_or(0), 200);
  EXPECT_EQ(::sluice::testing::RawHttpStatus(port, "GET", "/api/items/1").value_or(0), 200);
  ASSERT_EQ(handled.load(), 2);
  EXPECT_EQ(SendEveryForm(port, handled), 0);
  EXPECT_GT(middleware->Stats().ambiguous_path, 0u);
  server.Stop();
}

}  // namespace
}  // namespace sluice::http
