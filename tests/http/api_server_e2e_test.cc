// End-to-end test of examples/api_server: two processes on one redis-server enforce one limit
// between them; a third on the memory store has its own. Real processes and sockets are involved,
// so every wait is bounded (a poll on an observable condition, never a fixed sleep), and the limit
// uses a one-hour window so that no timing can make the counts flake.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kLimit = 5;

constexpr char kRules[] = R"(area: e2e
routes:
  - name: list-items
    method: GET
    path: /api/items
    tiers:
      anonymous:
        - {name: items, limit: 5, period: 1h}
      premium:
        - {name: items, limit: 50, period: 1h}
  - name: get-order
    method: GET
    path: /api/orders/{id}
    limits:
      - {name: orders, limit: 5, period: 1h}
)";

struct Reply {
  int status = 0;
  std::string ratelimit{};
  std::string retry_after{};
  std::string body{};
};

// A blocking HTTP/1.1 client: one request per connection, every step under a 10 s deadline.
absl::StatusOr<Reply> Get(int port, const std::string& target, const std::string& auth = "") {
  namespace beast = boost::beast;
  namespace bhttp = beast::http;
  namespace net = boost::asio;
  try {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(10));
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"),
                                          static_cast<unsigned short>(port)));
    bhttp::request<bhttp::empty_body> req(bhttp::verb::get, target, 11);
    req.set(bhttp::field::host, "127.0.0.1");
    if (!auth.empty()) req.set(bhttp::field::authorization, auth);
    bhttp::write(stream, req);
    beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(stream, buffer, res);
    beast::error_code ignored;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    return Reply{.status = static_cast<int>(res.result_int()),
                 .ratelimit = std::string(res["RateLimit"]),
                 .retry_after = std::string(res[bhttp::field::retry_after]),
                 .body = res.body()};
  } catch (const std::exception& e) {
    return absl::UnavailableError(e.what());
  }
}

int Status(int port, const std::string& target, const std::string& auth = "") {
  absl::StatusOr<Reply> r = Get(port, target, auth);
  return r.ok() ? r->status : -1;
}

class ApiServerE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-api-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "rules.yaml") << kRules;
  }

  void TearDown() override {
    servers_.clear();  // SIGKILL and reap every child.
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Starts api_server on `store` and returns its port once it answers.
  int StartServer(const std::string& store) {
    const int port = FreeLoopbackPort().value();
    const std::string log = (dir_ / ("server-" + std::to_string(port) + ".log")).string();
    absl::StatusOr<std::unique_ptr<ChildProcess>> process =
        ChildProcess::Start({API_SERVER_PATH, "--store", store, "--port", std::to_string(port),
                             "--rules", (dir_ / "rules.yaml").string()},
                            log);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return -1;
    servers_.push_back(*std::move(process));
    EXPECT_TRUE(WaitFor([port] { return Status(port, "/healthz") == 200; }, 10'000))
        << "api_server on " << store << " did not start; log: " << log;
    return port;
  }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<ChildProcess>> servers_;
};

// Verifies the issue's acceptance criterion: a client alternating between two instances that
// share one Redis is admitted exactly `limit` times in total per window.
TEST_F(ApiServerE2eTest, TwoInstancesOnOneRedisShareTheLimit) {
  absl::StatusOr<std::unique_ptr<RedisServer>> redis = RedisServer::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const int a = StartServer((*redis)->Url());
  const int b = StartServer((*redis)->Url());
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);

  int admitted = 0;
  std::vector<std::string> remaining;
  for (int i = 0; i < 4 * kLimit; ++i) {
    absl::StatusOr<Reply> r = Get(i % 2 == 0 ? a : b, "/api/items");
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_THAT(r->status, ::testing::AnyOf(200, 429)) << r->body;
    if (r->status == 200) {
      ++admitted;
      remaining.push_back(r->ratelimit);
    } else {
      EXPECT_THAT(r->body, HasSubstr(R"("violated-policies":["items"])"));
      const int retry_after = std::stoi(r->retry_after);
      EXPECT_GE(retry_after, 1);
      EXPECT_LE(retry_after, 3600);
    }
  }
  EXPECT_EQ(admitted, kLimit);
  // Each instance reports the shared count, whichever served the request.
  ASSERT_EQ(remaining.size(), 5u);
  for (int i = 0; i < kLimit; ++i) {
    EXPECT_THAT(remaining[i], HasSubstr("\"items\";r=" + std::to_string(kLimit - 1 - i) + ";t="));
  }

  // A third process, on the memory store, knows nothing of the shared count: its limit is its own.
  const int c = StartServer("memory");
  ASSERT_GT(c, 0);
  int third = 0;
  for (int i = 0; i < 2 * kLimit; ++i) third += Status(c, "/api/items") == 200;
  EXPECT_EQ(third, kLimit);
  EXPECT_EQ(Status(a, "/api/items"), 429);

  // /api/orders/1 and /api/orders/2 count against the route template's one limit.
  int orders = 0;
  for (int i = 0; i < 4 * kLimit; ++i) {
    orders += Status(i % 2 == 0 ? a : b, "/api/orders/" + std::to_string(i)) == 200;
  }
  EXPECT_EQ(orders, kLimit);

  // Another tier has its own, larger limit across both instances too.
  int premium = 0;
  for (int i = 0; i < 60; ++i)
    premium += Status(i % 2 == 0 ? a : b, "/api/items", "Bearer p:premium") == 200;
  EXPECT_EQ(premium, 50);

  // Keys hold the route template, never the raw URL with its ids.
  absl::StatusOr<std::string> keys = (*redis)->Command({"KEYS", "*"});
  ASSERT_TRUE(keys.ok());
  EXPECT_THAT(*keys, HasSubstr("{ip:127.0.0.1}:e2e:GET%20/api/orders/%7Bid%7D:*:orders:"));
  EXPECT_THAT(*keys, Not(HasSubstr("/api/orders/1")));
}

// Verifies what the example's README warns about: the memory store is per instance.
TEST_F(ApiServerE2eTest, MemoryStoreLimitsEachInstanceSeparately) {
  const int a = StartServer("memory");
  const int b = StartServer("memory");
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  int admitted = 0;
  for (int i = 0; i < 4 * kLimit; ++i) admitted += Status(i % 2 == 0 ? a : b, "/api/items") == 200;
  EXPECT_EQ(admitted, 2 * kLimit);
  // And an instance's count is its own: a fresh one admits a full limit more.
  const int c = StartServer("memory");
  int fresh = 0;
  for (int i = 0; i < 2 * kLimit; ++i) fresh += Status(c, "/api/items") == 200;
  EXPECT_EQ(fresh, kLimit);
}

// Verifies the middleware's default on a Redis outage (store_error: local): the local limiter
// keeps limiting, so a client gets its limit and then 503 (the store could not decide), never 429
// and never unlimited; routes without limits keep working, and Redis decides again once back.
TEST_F(ApiServerE2eTest, RedisDownKeepsLimitingLocallyWith503NotA429) {
  absl::StatusOr<std::unique_ptr<RedisServer>> redis = RedisServer::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const int a = StartServer((*redis)->Url());
  ASSERT_GT(a, 0);
  EXPECT_EQ(Status(a, "/api/items"), 200);
  (*redis)->Kill();
  int passed = 0;
  Reply refused;
  for (int i = 0; i < kLimit + 3; ++i) {
    absl::StatusOr<Reply> r = Get(a, "/api/items");
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->status == 200) {
      ++passed;
      EXPECT_EQ(r->ratelimit, "");  // The local limiter's answer describes no real quota.
    } else {
      refused = *r;
    }
  }
  EXPECT_EQ(passed, kLimit);
  EXPECT_EQ(refused.status, 503);
  EXPECT_THAT(refused.body, HasSubstr("temporary-reduced-capacity"));
  EXPECT_EQ(Status(a, "/healthz"), 200);  // Routes without limits keep working.
  ASSERT_TRUE((*redis)->Restart().ok());
  EXPECT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<Reply> r = Get(a, "/api/items");
        return r.ok() && r->status == 200 && !r->ratelimit.empty();
      },
      10'000));
}

}  // namespace
}  // namespace sluice::testing
