// A blocking HTTP/1.1 client for end-to-end tests (one request per connection).
// HttpExchange() sends a Beast request and returns the whole answer; HttpRequest() and its
// shorthands return status and body.
//
// Example:
//   absl::StatusOr<HttpResult> r = HttpPost(port, "/json", body);
//
// Thread safety: thread-safe (no shared state).
#ifndef SLUICE_TESTS_TESTING_HTTP_CLIENT_H_
#define SLUICE_TESTS_TESTING_HTTP_CLIENT_H_

#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace sluice::testing {

struct HttpResult {
  int status = 0;
  std::string body{};
};

using BeastRequest = boost::beast::http::request<boost::beast::http::string_body>;
using BeastResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Sends `req` (its payload prepared here) and returns the whole answer, headers included.
inline absl::StatusOr<BeastResponse> HttpExchange(int port, BeastRequest req) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  namespace net = boost::asio;
  try {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(10));
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"),
                                          static_cast<unsigned short>(port)));
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    BeastResponse res;
    http::read(stream, buffer, res);
    beast::error_code ignored;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    return res;
  } catch (const std::exception& e) {
    return absl::UnavailableError(e.what());
  }
}

inline absl::StatusOr<HttpResult> HttpRequest(int port, const std::string& method,
                                              const std::string& target,
                                              const std::string& body = "") {
  namespace http = boost::beast::http;
  BeastRequest req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = body;
  absl::StatusOr<BeastResponse> res = HttpExchange(port, std::move(req));
  if (!res.ok()) return res.status();
  return HttpResult{.status = static_cast<int>(res->result_int()), .body = res->body()};
}

inline absl::StatusOr<HttpResult> HttpPost(int port, const std::string& target,
                                           const std::string& body) {
  return HttpRequest(port, "POST", target, body);
}

inline absl::StatusOr<HttpResult> HttpGet(int port, const std::string& target) {
  return HttpRequest(port, "GET", target);
}

// Sends `method` `target` as written (no encoding, no checks: any bytes a client could send) with
// "Connection: close", and returns the answer's status code, or an error when none came.
inline absl::StatusOr<int> RawHttpStatus(int port, const std::string& method,
                                         const std::string& target) {
  namespace net = boost::asio;
  try {
    net::io_context ioc;
    boost::beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(10));
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"),
                                          static_cast<unsigned short>(port)));
    const std::string request =
        method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    net::write(stream, net::buffer(request));
    std::string answer;
    net::read_until(stream, net::dynamic_buffer(answer), "\r\n");
    // "HTTP/1.1 200 OK"
    if (answer.size() < 12 || !answer.starts_with("HTTP/1.")) {
      return absl::DataLossError("not an HTTP answer: " + answer);
    }
    return std::stoi(answer.substr(9, 3));
  } catch (const std::exception& e) {
    return absl::UnavailableError(e.what());
  }
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_HTTP_CLIENT_H_
