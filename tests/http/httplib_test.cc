// Tests of the cpp-httplib adapter with a real server on a loopback port.
#include "sluice/http/httplib.h"

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

}  // namespace
}  // namespace sluice::http
