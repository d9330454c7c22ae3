#include "tests/envoy/held_upstream.h"

#include <cerrno>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <sys/socket.h>

#include "tests/testing/child_process.h"

namespace sluice::testing {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::tcp;

// How often a held request looks whether its client is still there.
constexpr absl::Duration kPeerCheck = absl::Milliseconds(20);

// Whether the peer of `fd` closed the connection (a FIN or a reset), without reading anything.
bool PeerClosed(int fd) {
  char byte = 0;
  const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HeldUpstream>> HeldUpstream::Start() {
  std::unique_ptr<HeldUpstream> upstream(new HeldUpstream());
  if (absl::Status s = upstream->Listen(); !s.ok()) return s;
  return upstream;
}

int HeldUpstream::held() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

bool HeldUpstream::WaitForHeld(int n, int timeout_ms) const {
  return WaitFor([&] { return held() == n; }, timeout_ms);
}

void HeldUpstream::Release(int n) {
  absl::MutexLock lock(&mu_);
  releases_ += n;
}

void HeldUpstream::Serve(tcp::socket& socket) {
  const int fd = socket.native_handle();
  boost::beast::flat_buffer buffer;
  // Envoy keeps upstream connections open: serve requests until it closes this one.
  while (true) {
    http::request<http::string_body> request;
    boost::system::error_code ec;
    http::read(socket, buffer, request, ec);
    if (ec) break;
    const bool hold = std::string_view(request.target()).starts_with("/hold");
    if (hold && !Hold(fd)) break;
    http::response<http::string_body> response{http::status::ok, request.version()};
    response.body() = hold ? "released\n" : "ok\n";
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    http::write(socket, response, ec);
    if (ec || !request.keep_alive()) break;
  }
}

bool HeldUpstream::Hold(int fd) {
  absl::MutexLock lock(&mu_);
  ++held_;
  const auto released = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return releases_ > 0 || stopping_;
  };
  while (!mu_.AwaitWithTimeout(absl::Condition(&released), kPeerCheck)) {
    if (PeerClosed(fd)) {
      --held_;
      return false;
    }
  }
  if (!stopping_) --releases_;
  --held_;
  return true;
}

}  // namespace sluice::testing
