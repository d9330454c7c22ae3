#include "tests/envoy/test_upstream.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include <sys/socket.h>

namespace sluice::testing {

using boost::asio::ip::tcp;

absl::Status TestUpstream::Listen() {
  try {
    const tcp::endpoint loopback(boost::asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(loopback.protocol());
    acceptor_.bind(loopback);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("upstream: cannot listen: ", e.what()));
  }
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return absl::OkStatus();
}

void TestUpstream::Stop() {
  if (joined_ || !accept_thread_.joinable()) return;
  std::vector<std::thread> connections;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    // shutdown() wakes the threads blocked in accept() and read() on these sockets.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    for (const int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  accept_thread_.join();
  {
    absl::MutexLock lock(&mu_);
    connections.swap(connections_);
  }
  for (std::thread& t : connections) t.join();
  joined_ = true;
}

void TestUpstream::AcceptLoop() {
  while (true) {
    tcp::socket socket(io_);
    boost::system::error_code ec;
    acceptor_.accept(socket, ec);
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    if (ec) continue;
    open_fds_.insert(socket.native_handle());
    connections_.emplace_back(
        [this, s = std::move(socket)]() mutable { ServeAndForget(std::move(s)); });
  }
}

void TestUpstream::ServeAndForget(tcp::socket socket) {
  Serve(socket);
  absl::MutexLock lock(&mu_);
  open_fds_.erase(socket.native_handle());
}

}  // namespace sluice::testing
