// HttpServer's limits (issue 13, points 1 and 9): headers too large, a body too large, the
// connection cap, and a listening socket that fails. Loopback only; real time only as a watchdog.
#include "src/server/http_server.h"

#include <chrono>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/idle_connections.h"

namespace sluice::server {
namespace {

// Sends `request` on a new connection and returns the status line of the answer ("" if none).
std::string StatusLine(int port, const std::string& request) {
  testing::IdleConnections connection(port, 1);
  if (connection.size() != 1) return "";
  const int fd = connection.fd(0);
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // The server may answer and close before reading everything.
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  char buffer[4096];
  while (answer.find("\r\n") == std::string::npos) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  return answer.substr(0, answer.find("\r\n"));
}

std::string Get(size_t header_bytes) {
  return "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(header_bytes, 'a') + "\r\n\r\n";
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options) {
    options.port = 0;
    server_ = std::make_unique<HttpServer>(std::move(options),
                                           [](const HttpRequest&, HttpServer::Respond respond) {
                                             std::move(respond)(HttpResponse{.body = "ok"});
                                           });
    ASSERT_TRUE(server_->Start().ok());
  }
  std::unique_ptr<HttpServer> server_;
};

// Verifies the boundary of the 16 KiB header limit (15 KB served, 17 KB answered 431, as RFC 6585
// says, not 413) and that a body over `max_body_bytes` is 413.
TEST_F(HttpServerTest, HeadersTooLargeAre431AndBodyTooLargeIs413) {
  Start({.max_body_bytes = 1024});
  EXPECT_EQ(StatusLine(server_->port(), Get(15 * 1024)), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(server_->port(), Get(17 * 1024)),
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

// Verifies the connection cap: with 2 open, a third is closed at once and counted; once the 2
// are gone, the server serves again.
TEST_F(HttpServerTest, ConnectionsBeyondTheCapAreClosedAtOnce) {
  Start({.max_connections = 2});
  const int port = server_->port();
  auto held = std::make_unique<testing::IdleConnections>(port, 2);
  ASSERT_EQ(held->size(), 2u);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->open_connections() == 2; }, 10'000));
  testing::IdleConnections third(port, 1);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_TRUE(testing::ClosedByPeer(third.fd(0), std::chrono::seconds(10)));
  EXPECT_EQ(server_->ListenerStats().rejected_over_cap, 1u);
  EXPECT_EQ(server_->ListenerStats().accepted, 2u);
  held.reset();
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        absl::StatusOr<testing::HttpResult> r = testing::HttpGet(port, "/");
        return r.ok() && r->status == 200;
      },
      10'000));
}

// Verifies ListenerHealth() notices a listening socket that fails for good (shut down under the
// server: Linux wakes the pending accept with EINVAL), and a stopped server.
TEST_F(HttpServerTest, ListenerHealthNoticesADeadListener) {
  Start({});
  EXPECT_TRUE(server_->ListenerHealth().ok());
  const int fd = testing::ListeningSocketFd(server_->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::shutdown(fd, SHUT_RDWR), 0);
  ASSERT_TRUE(testing::WaitFor([&] { return !server_->ListenerHealth().ok(); }, 10'000));
  EXPECT_NE(server_->ListenerHealth().message().find("http listener stopped accepting"),
            std::string::npos)
      << server_->ListenerHealth();
  server_->Stop();
  EXPECT_FALSE(server_->ListenerHealth().ok());
}

}  // namespace
}  // namespace sluice::server
