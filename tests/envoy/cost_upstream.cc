#include "tests/envoy/cost_upstream.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace sluice::testing {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::tcp;

}  // namespace

absl::StatusOr<std::unique_ptr<CostUpstream>> CostUpstream::Start() {
  std::unique_ptr<CostUpstream> upstream(new CostUpstream());
  if (absl::Status s = upstream->Listen(); !s.ok()) return s;
  return upstream;
}

int CostUpstream::answered() const {
  absl::MutexLock lock(&mu_);
  return answered_;
}

void CostUpstream::Serve(tcp::socket& socket) {
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
}

}  // namespace sluice::testing
