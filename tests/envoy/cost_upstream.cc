#include "tests/envoy/cost_upstream.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <sys/socket.h>

namespace sluice::testing {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::tcp;

}  // namespace

absl::StatusOr<std::unique_ptr<CostUpstream>> CostUpstream::Start() {
  std::unique_ptr<CostUpstream> upstream(new CostUpstream());
  try {
    const tcp::endpoint loopback(boost::asio::ip::make_address("127.0.0.1"), 0);
    upstream->acceptor_.open(loopback.protocol());
    upstream->acceptor_.bind(loopback);
    upstream->acceptor_.listen();
    upstream->port_ = upstream->acceptor_.local_endpoint().port();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("upstream: cannot listen: ", e.what()));
  }
  upstream->accept_thread_ = std::thread([u = upstream.get()] { u->AcceptLoop(); });
  return upstream;
}

CostUpstream::~CostUpstream() {
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
}

int CostUpstream::answered() const {
  absl::MutexLock lock(&mu_);
  return answered_;
}

void CostUpstream::AcceptLoop() {
  while (true) {
    tcp::socket socket(io_);
    boost::system::error_code ec;
    acceptor_.accept(socket, ec);
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    if (ec) continue;
    open_fds_.insert(socket.native_handle());
    connections_.emplace_back([this, s = std::move(socket)]() mutable { Serve(std::move(s)); });
  }
}

void CostUpstream::Serve(tcp::socket socket) {
  const int fd = socket.native_handle();
  boost::beast::flat_buffer buffer;
  // Envoy keeps upstream connections open: serve requests until it closes this one.
  while (true) {
    http::request<http::string_body> request;
    boost::system::error_code ec;
    http::read(socket, buffer, request, ec);
    if (ec) break;
    http::response<http::string_body> response{http::status::ok, request.version()};
    const auto cost = request.find("x-cost");
    if (cost != request.end()) response.set("x-tokens", cost->value());
    response.body() = "ok\n";
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    {
      // Counted before the answer leaves, so that a test that has the answer sees it counted.
      absl::MutexLock lock(&mu_);
      ++answered_;
    }
    http::write(socket, response, ec);
    if (ec || !request.keep_alive()) break;
  }
  absl::MutexLock lock(&mu_);
  open_fds_.erase(fd);
}

}  // namespace sluice::testing
