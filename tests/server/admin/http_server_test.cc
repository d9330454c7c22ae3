// HttpServer: sluiced's struct-in, struct-out front of BeastServer (whose limits, keep-alive and
// accept loop tests/http/beast_server_test.cc covers): what the handler gets, what the client gets
// back (status, content type, extra headers, "Server: sluiced"), answers from another thread, and
// the options that reach the Beast server. Loopback only; real time only as a watchdog.
#include "src/server/admin/http_server.h"

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include <boost/beast/http.hpp>

#include "tests/testing/http_client.h"

namespace sluice::server {
namespace {

namespace bhttp = boost::beast::http;

// Sends one request and returns the whole answer (a status of 0 when there was none).
bhttp::response<bhttp::string_body> Send(int port, bhttp::request<bhttp::string_body> req) {
  absl::StatusOr<testing::BeastResponse> res = testing::HttpExchange(port, std::move(req));
  if (res.ok()) return *std::move(res);
  bhttp::response<bhttp::string_body> none;
  none.result(0u);
  return none;
}

// Verifies the handler gets method, target and body, and that the answer's status, content type,
// extra headers and body reach the client with "Server: sluiced".
TEST(HttpServerTest, RequestAndAnswerAreMappedBothWays) {
  std::mutex mu;
  std::string seen;
  HttpServer server({.port = 0}, [&](HttpRequest req, HttpServer::Respond respond) {
    {
      const std::lock_guard<std::mutex> lock(mu);
      seen = req.method + " " + req.target + " " + req.body;
    }
    std::move(respond)(HttpResponse{.status = 429,
                                    .content_type = "text/plain",
                                    .body = "slow down",
                                    .headers = {{"Retry-After", "7"}, {"X-Extra", "a b"}}});
  });
  ASSERT_TRUE(server.Start().ok());
  bhttp::request<bhttp::string_body> req(bhttp::verb::post, "/json?x=1", 11);
  req.set(bhttp::field::host, "127.0.0.1");
  req.body() = R"({"domain":"d"})";
  const bhttp::response<bhttp::string_body> res = Send(server.port(), std::move(req));
  EXPECT_EQ(res.result_int(), 429u);
  EXPECT_EQ(res[bhttp::field::content_type], "text/plain");
  EXPECT_EQ(res[bhttp::field::server], "sluiced");
  EXPECT_EQ(res["Retry-After"], "7");
  EXPECT_EQ(res["X-Extra"], "a b");
  EXPECT_EQ(res.body(), "slow down");
  const std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, R"(POST /json?x=1 {"domain":"d"})");
}

// Verifies an answer from another thread (an asynchronous store's) reaches the client.
TEST(HttpServerTest, AnswersFromAnotherThreadArrive) {
  std::mutex mu;
  std::vector<std::thread> answerers;
  HttpServer server({.port = 0}, [&](HttpRequest req, HttpServer::Respond respond) {
    const std::lock_guard<std::mutex> lock(mu);
    answerers.emplace_back([target = req.target, respond = std::move(respond)]() mutable {
      std::move(respond)(HttpResponse{.body = target});
    });
  });
  ASSERT_TRUE(server.Start().ok());
  absl::StatusOr<testing::HttpResult> r = testing::HttpGet(server.port(), "/late");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "/late");
  server.Stop();
  const std::lock_guard<std::mutex> lock(mu);
  for (std::thread& t : answerers) t.join();
}

// Verifies the options reach the Beast server: headers up to 16 KiB (sluiced's fixed limit) are
// served and larger ones get 431; a body over `max_body_bytes` gets 413.
TEST(HttpServerTest, SizeLimitsReachTheServer) {
  HttpServer server({.port = 0, .max_body_bytes = 100},
                    [](const HttpRequest&, HttpServer::Respond respond) {
                      std::move(respond)(HttpResponse{.body = "ok"});
                    });
  ASSERT_TRUE(server.Start().ok());
  auto get = [&](size_t header_bytes) {
    bhttp::request<bhttp::string_body> req(bhttp::verb::get, "/", 11);
    req.set("X-Big", std::string(header_bytes, 'a'));
    return Send(server.port(), std::move(req)).result_int();
  };
  EXPECT_EQ(get(15 * 1024), 200u);
  EXPECT_EQ(get(17 * 1024), 431u);
  bhttp::request<bhttp::string_body> post(bhttp::verb::post, "/", 11);
  post.body() = std::string(101, 'b');
  EXPECT_EQ(Send(server.port(), std::move(post)).result_int(), 413u);
  EXPECT_EQ(server.ListenerStats().accepted, 3u);
  EXPECT_TRUE(server.ListenerHealth().ok());
}

}  // namespace
}  // namespace sluice::server
