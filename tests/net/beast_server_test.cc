// BeastServer: what the handler sees (method, target, headers, body, peer), answers from another
// thread, keep-alive and the HTTP version, the size limits (431, 413), the connection cap, the log
// callback, and a listening socket that fails. Loopback only; real time only as a watchdog.
#include "sluice/net/beast_server.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include <boost/beast/http.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/idle_connections.h"

namespace sluice::net {
namespace {

namespace bhttp = boost::beast::http;

// Writes `bytes` on `fd` and reads until `answers` complete answers (header block and
// Content-Length body) arrived, the peer closed, or 10 s passed. Returns what was read.
std::string Exchange(int fd, const std::string& bytes, int answers) {
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // The server may answer and close before reading everything.
    sent += static_cast<size_t>(n);
  }
  std::string read;
  auto complete = [&] {
    size_t pos = 0;
    for (int i = 0; i < answers; ++i) {
      const size_t end = read.find("\r\n\r\n", pos);
      if (end == std::string::npos) return false;
      const size_t cl = read.find("Content-Length: ", pos);
      size_t body = 0;
      if (cl != std::string::npos && cl < end) body = std::stoul(read.substr(cl + 16));
      pos = end + 4 + body;
      if (read.size() < pos) return false;
    }
    return true;
  };
  char buffer[4096];
  while (!complete()) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    read.append(buffer, static_cast<size_t>(n));
  }
  return read;
}

std::string StatusLine(int port, const std::string& request) {
  testing::IdleConnections connection(port, 1);
  if (connection.size() != 1) return "";
  const std::string answer = Exchange(connection.fd(0), request, 1);
  return answer.substr(0, answer.find("\r\n"));
}

std::string Get(size_t header_bytes) {
  return "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(header_bytes, 'a') + "\r\n\r\n";
}

BeastServer::Response Ok(std::string body) {
  BeastServer::Response res(bhttp::status::ok, 11);
  res.body() = std::move(body);
  return res;
}

class BeastServerTest : public ::testing::Test {
 protected:
  void Start(BeastServerOptions options, BeastServer::Handler handler = {}) {
    options.port = 0;
    if (!handler) {
      handler = [](BeastServer::Request&, const boost::asio::ip::tcp::endpoint&,
                   BeastServer::Responder respond) { std::move(respond)(Ok("ok")); };
    }
    server_ = std::make_unique<BeastServer>(std::move(options), std::move(handler));
    ASSERT_TRUE(server_->Start().ok());
  }
  size_t LineCount() {
    const std::lock_guard<std::mutex> lock(mu_);
    return lines_.size();
  }

  // What the handlers and the log callback record, from the server's threads; declared before
  // the server, which stops (and stops calling them) first.
  std::mutex mu_;
  std::string seen_;
  std::vector<std::string> lines_;
  std::unique_ptr<BeastServer> server_;
};

// Verifies the handler sees the request as sent (method, target with its query, a header, the
// body) and the client's address, and that its answer reaches the client with the Server field.
TEST_F(BeastServerTest, HandlerSeesTheRequestAndThePeer) {
  Start({.server_header = "test-server"},
        [this](BeastServer::Request& req, const boost::asio::ip::tcp::endpoint& peer,
               BeastServer::Responder respond) {
          {
            const std::lock_guard<std::mutex> lock(mu_);
            seen_ = std::string(req.method_string()) + " " + std::string(req.target()) + " " +
                    std::string(req[bhttp::field::authorization]) + " " + req.body() + " " +
                    peer.address().to_string();
          }
          std::move(respond)(Ok("answer"));
        });
  testing::IdleConnections connection(server_->port(), 1);
  ASSERT_EQ(connection.size(), 1u);
  const std::string answer = Exchange(connection.fd(0),
                                      "POST /a/b?c=d HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                                      "u\r\nContent-Length: 4\r\n\r\nbody",
                                      1);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_NE(answer.find("Server: test-server\r\n"), std::string::npos) << answer;
  EXPECT_TRUE(answer.ends_with("\r\n\r\nanswer")) << answer;
  const std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(seen_, "POST /a/b?c=d Bearer u body 127.0.0.1");
}

// Verifies an answer given later from another thread (as an asynchronous store answers) reaches
// the client, and that the request stays valid until then: the late answer echoes its target.
TEST_F(BeastServerTest, AnswersFromAnotherThreadArrive) {
  std::mutex mu;
  std::vector<std::thread> answerers;
  Start({}, [&](BeastServer::Request& req, const boost::asio::ip::tcp::endpoint&,
                BeastServer::Responder respond) {
    const std::lock_guard<std::mutex> lock(mu);
    answerers.emplace_back([&req, respond = std::move(respond)]() mutable {
      std::this_thread::yield();
      std::move(respond)(Ok(std::string(req.target())));
    });
  });
  absl::StatusOr<testing::HttpResult> r = testing::HttpGet(server_->port(), "/late");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "/late");
  server_->Stop();
  const std::lock_guard<std::mutex> lock(mu);
  for (std::thread& t : answerers) t.join();
}

// Verifies keep-alive: two HTTP/1.1 requests on one connection get two answers; an answer that
// says "close" closes the connection after it; HTTP/1.0 without keep-alive closes, and the
// answer carries the request's version.
TEST_F(BeastServerTest, KeepAliveFollowsTheRequestAndTheAnswer) {
  Start({}, [](BeastServer::Request& req, const boost::asio::ip::tcp::endpoint&,
               BeastServer::Responder respond) {
    BeastServer::Response res = Ok("x");
    if (req.target() == "/close") res.keep_alive(false);
    std::move(respond)(std::move(res));
  });
  {
    testing::IdleConnections c(server_->port(), 1);
    ASSERT_EQ(c.size(), 1u);
    const std::string two = Exchange(
        c.fd(0), "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n", 2);
    EXPECT_EQ(two,
              "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
              "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx");
  }
  {
    testing::IdleConnections c(server_->port(), 1);
    ASSERT_EQ(c.size(), 1u);
    const std::string answer = Exchange(c.fd(0), "GET /close HTTP/1.1\r\nHost: x\r\n\r\n", 1);
    EXPECT_NE(answer.find("Connection: close\r\n"), std::string::npos) << answer;
    EXPECT_TRUE(testing::ClosedByPeer(c.fd(0), std::chrono::seconds(10)));
  }
  {
    testing::IdleConnections c(server_->port(), 1);
    ASSERT_EQ(c.size(), 1u);
    const std::string answer = Exchange(c.fd(0), "GET / HTTP/1.0\r\n\r\n", 1);
    EXPECT_TRUE(answer.starts_with("HTTP/1.0 200 OK\r\n")) << answer;
    EXPECT_TRUE(testing::ClosedByPeer(c.fd(0), std::chrono::seconds(10)));
  }
  {
    testing::IdleConnections c(server_->port(), 1);
    ASSERT_EQ(c.size(), 1u);
    const std::string answer =
        Exchange(c.fd(0), "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 1);
    EXPECT_TRUE(answer.starts_with("HTTP/1.0 200 OK\r\n")) << answer;
    EXPECT_NE(answer.find("Connection: keep-alive\r\n"), std::string::npos) << answer;
    EXPECT_FALSE(testing::ClosedByPeer(c.fd(0), std::chrono::seconds(1)));
  }
}

// Verifies the boundaries of the header limit (431, as RFC 6585 says, not 413) and of the body
// limit (413), each at the configured size.
TEST_F(BeastServerTest, HeadersTooLargeAre431AndBodyTooLargeIs413) {
  Start({.max_header_bytes = 8 * 1024, .max_body_bytes = 1024});
  EXPECT_EQ(StatusLine(server_->port(), Get(7 * 1024)), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(server_->port(), Get(9 * 1024)),
            "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(
      StatusLine(server_->port(), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n" +
                                      std::string(1025, 'b')),
      "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(
      StatusLine(server_->port(), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n" +
                                      std::string(1024, 'b')),
      "HTTP/1.1 200 OK");
}

// Verifies the connection cap without `close_idle_at_cap`: with 2 open, a third is closed at once,
// counted and logged through the log callback; once the 2 are gone, the server serves again.
TEST_F(BeastServerTest, ConnectionsBeyondTheCapAreClosedAtOnce) {
  Start({.name = "capped",
         .max_connections = 2,
         .close_idle_at_cap = false,
         .log = [this](std::string_view line) {
           const std::lock_guard<std::mutex> lock(mu_);
           lines_.emplace_back(line);
         }});
  const int port = server_->port();
  auto held = std::make_unique<testing::IdleConnections>(port, 2);
  ASSERT_EQ(held->size(), 2u);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->open_connections() == 2; }, 10'000));
  testing::IdleConnections third(port, 1);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_TRUE(testing::ClosedByPeer(third.fd(0), std::chrono::seconds(10)));
  EXPECT_EQ(server_->listener_stats().rejected_over_cap, 1u);
  EXPECT_EQ(server_->listener_stats().accepted, 2u);
  // Logged just after the close.
  ASSERT_TRUE(testing::WaitFor([&] { return LineCount() == 1; }, 10'000));
  {
    const std::lock_guard<std::mutex> lock(mu_);
    EXPECT_TRUE(lines_[0].starts_with("capped: 2 connections open, the cap; closing new"))
        << lines_[0];
  }
  held.reset();
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        absl::StatusOr<testing::HttpResult> r = testing::HttpGet(port, "/");
        return r.ok() && r->status == 200;
      },
      10'000));
}

// Verifies the default at the cap: with 2 idle connections open, a new client is served, and one
// of the idle connections (the one waiting longest) is closed to make room, counted and logged.
TEST_F(BeastServerTest, IdleConnectionsMakeRoomAtTheCap) {
  Start({.name = "capped", .max_connections = 2, .log = [this](std::string_view line) {
           const std::lock_guard<std::mutex> lock(mu_);
           lines_.emplace_back(line);
         }});
  const int port = server_->port();
  testing::IdleConnections held(port, 2);
  ASSERT_EQ(held.size(), 2u);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->open_connections() == 2; }, 10'000));
  absl::StatusOr<testing::HttpResult> r = testing::HttpGet(port, "/");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  ASSERT_TRUE(testing::WaitFor(
      [&] { return testing::ClosedByPeerNow(held.fd(0)) || testing::ClosedByPeerNow(held.fd(1)); },
      10'000));
  EXPECT_FALSE(testing::ClosedByPeerNow(held.fd(0)) && testing::ClosedByPeerNow(held.fd(1)));
  EXPECT_EQ(server_->listener_stats().closed_idle_at_cap, 1u);
  EXPECT_EQ(server_->listener_stats().rejected_over_cap, 0u);
  ASSERT_TRUE(testing::WaitFor([&] { return LineCount() == 1; }, 10'000));
  const std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(
      lines_[0].starts_with("capped: 2 connections open, the cap; closing the longest-idle"))
      << lines_[0];
}

// Verifies a connection with a request in progress is never closed to make room: with 2 such
// connections at a cap of 2, a third is closed at once; once they are answered, new clients are
// served again.
TEST_F(BeastServerTest, BusyConnectionsAreNotClosedToMakeRoom) {
  std::vector<BeastServer::Responder> pending;
  Start({.max_connections = 2}, [&](BeastServer::Request&, const boost::asio::ip::tcp::endpoint&,
                                    BeastServer::Responder respond) {
    const std::lock_guard<std::mutex> lock(mu_);
    pending.push_back(std::move(respond));
  });
  const int port = server_->port();
  testing::IdleConnections busy(port, 2);
  ASSERT_EQ(busy.size(), 2u);
  const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  for (size_t i = 0; i < busy.size(); ++i) {
    ASSERT_EQ(::send(busy.fd(i), get.data(), get.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(get.size()));
  }
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const std::lock_guard<std::mutex> lock(mu_);
        return pending.size() == 2;
      },
      10'000));
  testing::IdleConnections third(port, 1);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_TRUE(testing::ClosedByPeer(third.fd(0), std::chrono::seconds(10)));
  EXPECT_EQ(server_->listener_stats().rejected_over_cap, 1u);
  EXPECT_EQ(server_->listener_stats().closed_idle_at_cap, 0u);
  EXPECT_FALSE(testing::ClosedByPeerNow(busy.fd(0)));
  EXPECT_FALSE(testing::ClosedByPeerNow(busy.fd(1)));
  {
    const std::lock_guard<std::mutex> lock(mu_);
    for (BeastServer::Responder& respond : pending) std::move(respond)(Ok("late"));
    pending.clear();
  }
  for (size_t i = 0; i < busy.size(); ++i) {
    EXPECT_TRUE(Exchange(busy.fd(i), "", 1).ends_with("\r\n\r\nlate"));
  }
  server_->Stop();  // Before `pending` goes.
}

// Verifies ListenerHealth() notices a listening socket that fails for good (shut down under the
// server: Linux wakes the pending accept with EINVAL), and a stopped server.
TEST_F(BeastServerTest, ListenerHealthNoticesADeadListener) {
  Start({});
  EXPECT_TRUE(server_->ListenerHealth().ok());
  ASSERT_TRUE(testing::ShutDownListeningSocket(server_->port()));
  ASSERT_TRUE(testing::WaitFor([&] { return !server_->ListenerHealth().ok(); }, 10'000));
  EXPECT_NE(server_->ListenerHealth().message().find("http listener stopped accepting"),
            std::string::npos)
      << server_->ListenerHealth();
  server_->Stop();
  EXPECT_FALSE(server_->ListenerHealth().ok());
}

}  // namespace
}  // namespace sluice::net
