#include "src/server/http_server.h"

#include <exception>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace sluice::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// One client connection: read a request, hand it to the handler, write its answer, repeat.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServer::Handler& handler, const HttpServerOptions& options)
      : stream_(std::move(socket)), handler_(handler), options_(options) {}

  void Run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    parser_->header_limit(16 * 1024);
    stream_.expires_after(options_.idle_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      keep_alive_ = false;
      Write(HttpResponse{.status = 413, .body = R"({"error":"request too large"})"});
      return;
    }
    if (ec) {
      // end_of_stream, timeout, reset: nothing to answer.
      Close();
      return;
    }
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    HttpRequest request{.method = std::string(req.method_string()),
                        .target = std::string(req.target()),
                        .body = std::move(req.body())};
    for (const auto& field : req) {
      request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    // The answer may come from another thread (an async store); hop back onto our strand.
    handler_(std::move(request), [self = shared_from_this()](HttpResponse response) mutable {
      net::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->Write(std::move(response));
      });
    });
  }

  void Write(HttpResponse response) {
    res_ = {};
    res_.version(version_);
    res_.result(static_cast<http::status>(response.status));
    res_.set(http::field::server, "sluiced");
    res_.set(http::field::content_type, response.content_type);
    for (auto& [name, value] : response.headers) res_.set(name, value);
    res_.body() = std::move(response.body);
    res_.keep_alive(keep_alive_);
    res_.prepare_payload();
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || !self->keep_alive_) {
        self->Close();
        return;
      }
      self->Read();
    });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  const HttpServer::Handler& handler_;
  const HttpServerOptions& options_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
};

}  // namespace

struct HttpServer::Impl {
  Impl(HttpServerOptions o, Handler h)
      : options(std::move(o)), handler(std::move(h)), ioc(options.threads), acceptor(ioc) {}

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) std::make_shared<Session>(std::move(socket), handler, options)->Run();
      Accept();
    });
  }

  HttpServerOptions options;
  Handler handler;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  uint16_t bound_port = 0;
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() {
  // Stop() throws only when an I/O thread cannot be joined (std::system_error), which leaves no
  // state to carry on from: say why, then end the process as the escaping exception would have.
  try {
    Stop();
  } catch (const std::exception& e) {
    spdlog::critical("http: stopping the server failed: {}", e.what());
    std::terminate();
  } catch (...) {
    spdlog::critical("http: stopping the server failed");
    std::terminate();
  }
}

absl::Status HttpServer::Start() {
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(impl_->options.address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("http: invalid listen address '", impl_->options.address, "'"));
  }
  const tcp::endpoint endpoint(address, impl_->options.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("http: cannot listen on ", impl_->options.address,
                                               ":", impl_->options.port, ": ", ec.message()));
  }
  impl_->bound_port = impl_->acceptor.local_endpoint().port();
  impl_->Accept();
  for (int i = 0; i < std::max(1, impl_->options.threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  }
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (impl_->threads.empty()) return;
  net::post(impl_->ioc, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->ioc.stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
}

uint16_t HttpServer::port() const { return impl_->bound_port; }

}  // namespace sluice::server
