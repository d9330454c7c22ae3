// Tests of the cpp-httplib adapter with a real server on a loopback port.
#include "sluice/http/httplib.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/memory_store.h"

#include "tests/http/http_test_util.h"

namespace sluice::http {
namespace {

using ::sluice::http::testing::Rules;
using ::testing::HasSubstr;

class HttplibAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = MemoryStore::Create({}).value();
    middleware_ =
        Middleware::Create(
            {.store = store_.get(),
             .config = Rules("routes:\n  - name: items\n    method: GET\n    path: /items\n"
                             "    limits: [{name: burst, limit: 2, period: 1h}]\n")})
            .value();
    InstallRateLimit(server_, *middleware_);
    server_.Get("/items", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"items":[]})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    listener_ = std::thread([this] { server_.listen_after_bind(); });
  }

  void TearDown() override {
    server_.stop();
    if (listener_.joinable()) listener_.join();
  }

  std::unique_ptr<MemoryStore> store_;
  std::unique_ptr<Middleware> middleware_;
  httplib::Server server_;
  int port_ = 0;
  std::thread listener_;
};

TEST_F(HttplibAdapterTest, PassesWithHeadersThenRejectsBeforeRouting) {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  for (int i = 0; i < 2; ++i) {
    httplib::Result ok = client.Get("/items");
    ASSERT_TRUE(ok) << httplib::to_string(ok.error());
    EXPECT_EQ(ok->status, 200);
    EXPECT_EQ(ok->body, R"({"items":[]})");
    EXPECT_EQ(ok->get_header_value("RateLimit-Policy"), R"("burst";q=2;w=3600)");
    EXPECT_THAT(ok->get_header_value("RateLimit"), HasSubstr(i == 0 ? "r=1" : "r=0"));
  }
  httplib::Result denied = client.Get("/items");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 429);
  EXPECT_EQ(denied->get_header_value("Content-Type"), "application/problem+json");
  EXPECT_FALSE(denied->get_header_value("Retry-After").empty());
  EXPECT_THAT(denied->body, HasSubstr(R"("violated-policies":["burst"])"));
  // Routes without a rule are untouched.
  httplib::Result missing = client.Get("/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_FALSE(missing->has_header("RateLimit"));
  EXPECT_EQ(middleware_->Stats().enforced, 1u);
}

// A server wired by each test, on a loopback port.
class HttplibServer {
 public:
  explicit HttplibServer(std::string_view rules, MiddlewareOptions options = {}) {
    store_ = MemoryStore::Create({}).value();
    options.store = store_.get();
    options.config = Rules(rules);
    middleware_ = Middleware::Create(std::move(options)).value();
  }
  HttplibServer(const HttplibServer&) = delete;
  HttplibServer& operator=(const HttplibServer&) = delete;
  ~HttplibServer() {
    server_.stop();
    if (listener_.joinable()) listener_.join();
  }

  void Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    listener_ = std::thread([this] { server_.listen_after_bind(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_connection_timeout(5);
    client_->set_read_timeout(5);
  }

  // GET `path` with `headers`; the status, or -1 when the request failed.
  int Get(const std::string& path, const httplib::Headers& headers = {}) {
    httplib::Result result = client_->Get(path.c_str(), headers);
    if (!result) return -1;
    last_ = *result;
    return result->status;
  }

  httplib::Server& server() { return server_; }
  Middleware& middleware() { return *middleware_; }
  const httplib::Response& last() const { return last_; }

 private:
  std::unique_ptr<MemoryStore> store_;
  std::unique_ptr<Middleware> middleware_;
  httplib::Server server_;
  int port_ = 0;
  std::thread listener_;
  std::unique_ptr<httplib::Client> client_;
  httplib::Response last_;
};

constexpr char kPolicyRules[] = R"(
global:
  limits: [{name: guard, limit: 100, period: 1h}]
policies:
  - name: orders-read
    limits: [{name: orders, limit: 2, period: 1h, algorithm: gcra}]
)";

// Verifies that a policy attached with Limited() limits its handler, across the ids of its route,
// and no other handler; a rejected request never reaches the handler.
TEST(HttplibLimited, EnforcesThePolicyOnTheWrappedHandlerOnly) {
  HttplibServer s(kPolicyRules);
  InstallRateLimit(s.server(), s.middleware());
  std::atomic<int> handled{0};
  absl::StatusOr<httplib::Server::Handler> get_order = Limited(
      s.middleware(), "orders-read", [&handled](const httplib::Request&, httplib::Response& res) {
        handled.fetch_add(1);
        res.set_content("{}", "application/json");
      });
  ASSERT_TRUE(get_order.ok()) << get_order.status();
  s.server().Get(R"(/api/orders/(\d+))", *std::move(get_order));
  s.server().Get("/api/items", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("[]", "application/json");
  });
  s.Start();

  EXPECT_EQ(s.Get("/api/orders/1"), 200);
  // The global rule (pre-routing) and the policy (the handler) each add their fields.
  EXPECT_EQ(s.last().get_header_value("RateLimit-Policy", 0), R"("guard";q=100;w=3600)");
  EXPECT_EQ(s.last().get_header_value("RateLimit-Policy", 1), R"("orders";q=2;w=3600)");
  EXPECT_EQ(s.Get("/api/orders/2"), 200);
  EXPECT_EQ(s.Get("/api/orders/3"), 429);
  EXPECT_THAT(s.last().body, HasSubstr(R"("violated-policies":["orders"])"));
  EXPECT_FALSE(s.last().get_header_value("Retry-After").empty());
  EXPECT_EQ(handled.load(), 2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.Get("/api/items"), 200) << i;
  EXPECT_EQ(s.last().get_header_value("RateLimit-Policy"), R"("guard";q=100;w=3600)");
  EXPECT_EQ(s.middleware().Stats().enforced, 1u);
}

// Verifies that a policy name the config does not define is refused when the server is wired,
// with the names it does define.
TEST(HttplibLimited, RefusesAnUnknownPolicyWhenWiring) {
  HttplibServer s(kPolicyRules);
  absl::StatusOr<httplib::Server::Handler> handler =
      Limited(s.middleware(), "orders-raed", [](const httplib::Request&, httplib::Response&) {});
  ASSERT_FALSE(handler.ok());
  EXPECT_EQ(handler.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(handler.status().message(),
            "rate limit policy 'orders-raed' is not defined in test.yaml (policies: orders-read)");
  HttplibServer none("routes: []\n");
  EXPECT_THAT(Limited(none.middleware(), "x", [](const httplib::Request&, httplib::Response&) {})
                  .status()
                  .message(),
              HasSubstr("the config has no policies: section"));
}

// Verifies that a reload dropping a policy a handler names makes that handler answer 500 rather
// than serve unlimited.
TEST(HttplibLimited, AnswersAnInternalErrorWhenAReloadDroppedThePolicy) {
  HttplibServer s(kPolicyRules);
  absl::StatusOr<httplib::Server::Handler> handler =
      Limited(s.middleware(), "orders-read", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("{}", "application/json");
      });
  ASSERT_TRUE(handler.ok());
  s.server().Get("/o", *std::move(handler));
  s.Start();
  EXPECT_EQ(s.Get("/o"), 200);
  ASSERT_TRUE(s.middleware().SetConfig(Rules("routes: []\n")).ok());
  EXPECT_EQ(s.Get("/o"), 500);
  EXPECT_EQ(s.last().get_header_value("Content-Type"), "application/problem+json");
}

constexpr char kPerUserRules[] = R"(
routes:
  - name: items
    path: /items
    limits: [{name: items, limit: 1, period: 1h}]
)";

// Verifies that the application's own pre-routing handler runs first and that the principal it
// names is the identity: the middleware's authenticate callback is not called again.
TEST(HttplibPreRouting, RunsTheApplicationsHandlerFirstAndUsesItsPrincipal) {
  std::atomic<int> authenticate_calls{0};
  HttplibServer s(kPerUserRules, {.authenticate = [&authenticate_calls](const RequestView&) {
                    authenticate_calls.fetch_add(1);
                    return std::optional<Principal>();
                  }});
  std::atomic<int> app_calls{0};
  InstallRateLimit(
      s.server(), s.middleware(),
      [&app_calls](const httplib::Request& req, httplib::Response& res, Principal& principal) {
        app_calls.fetch_add(1);
        if (req.path == "/blocked") {
          res.status = 403;
          return httplib::Server::HandlerResponse::Handled;
        }
        principal.id = req.get_header_value("X-User");
        return httplib::Server::HandlerResponse::Unhandled;
      });
  s.server().Get("/items", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("[]", "application/json");
  });
  s.Start();
  EXPECT_EQ(s.Get("/items", {{"X-User", "alice"}}), 200);
  EXPECT_EQ(s.Get("/items", {{"X-User", "alice"}}), 429);
  EXPECT_EQ(s.Get("/items", {{"X-User", "bob"}}), 200);  // a bucket of bob's own
  EXPECT_EQ(authenticate_calls.load(), 0);
  // No principal named: the middleware's chain, its callback included, decides (by address).
  EXPECT_EQ(s.Get("/items"), 200);
  EXPECT_EQ(authenticate_calls.load(), 1);
  // A request the application answers itself goes no further.
  EXPECT_EQ(s.Get("/blocked"), 403);
  EXPECT_EQ(app_calls.load(), 5);
  EXPECT_EQ(s.middleware().Stats().enabled, 4u);
}

// Verifies that a plain cpp-httplib pre-routing handler of the application is kept and runs
// before the limit, instead of being replaced by it.
TEST(HttplibPreRouting, KeepsAPlainPreRoutingHandlerOfTheApplication) {
  HttplibServer s(kPerUserRules);
  InstallRateLimit(s.server(), s.middleware(), [](const httplib::Request&, httplib::Response& res) {
    res.set_header("X-App", "seen");
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.server().Get("/items", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("[]", "application/json");
  });
  s.Start();
  EXPECT_EQ(s.Get("/items"), 200);
  EXPECT_EQ(s.last().get_header_value("X-App"), "seen");
  EXPECT_FALSE(s.last().get_header_value("RateLimit").empty());
  EXPECT_EQ(s.Get("/items"), 429);
  EXPECT_EQ(s.last().get_header_value("X-App"), "seen");
}

}  // namespace
}  // namespace sluice::http
