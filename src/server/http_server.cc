#include "src/server/http_server.h"

#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "sluice/http/accept_backoff.h"

#include "src/util/log_throttle.h"

namespace sluice::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// Each I/O thread runs its own io_context and owns the connections accepted onto it, so a
// connection's handlers never run concurrently and need no strand, and executors are the concrete
// io_context type rather than the type-erased default (both measured on the /json hot path).
using Executor = net::io_context::executor_type;
using Stream = beast::basic_stream<tcp, Executor>;

// One client connection: read a request, hand it to the handler, write its answer, repeat.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Stream::socket_type socket, const HttpServer::Handler& handler,
          const HttpServerOptions& options)
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
    // The answer may come inline (this thread) or from another thread (an async store): dispatch
    // writes at once in the first case and hops onto this connection's thread in the second.
    // Nothing in this function runs after the handler returns.
    handler_(std::move(request), [self = shared_from_this()](HttpResponse response) mutable {
      Executor executor = self->stream_.get_executor();
      net::dispatch(executor, [self = std::move(self), response = std::move(response)]() mutable {
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
    for (auto& [name, value] : response.headers) res_.insert(name, value);
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

  Stream stream_;
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
      : options(std::move(o)),
        handler(std::move(h)),
        acceptor_context(1),
        acceptor(acceptor_context),
        accept_timer(acceptor_context) {
    for (int i = 0; i < std::max(1, options.threads); ++i) {
      // Concurrency hint 1: one thread runs each context, which lets Asio skip some locking.
      contexts.push_back(std::make_unique<net::io_context>(1));
    }
  }

  // Accepts on the first context's thread; each connection goes to the next context in turn.
  void Accept() {
    net::io_context& target = *contexts[next_context++ % contexts.size()];
    acceptor.async_accept(target.get_executor(),
                          [this](beast::error_code ec, Stream::socket_type socket) {
                            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
                            if (PauseAfter(ec)) return;
                            if (!ec) {
                              std::make_shared<Session>(std::move(socket), handler, options)->Run();
                            }
                            Accept();
                          });
  }

  // Out of descriptors, accepting again at once would spin (sluice/http/accept_backoff.h): returns
  // true when it arranged to accept again after a wait.
  bool PauseAfter(const beast::error_code& ec) {
    const std::chrono::milliseconds wait = backoff.After(ec);
    if (wait.count() == 0) return false;
    if (internal::LogPermit p = accept_log.Acquire(); p.log) {
      spdlog::warn("http: accept failed ({}); accepting again in {} ms ({} such failures){}",
                   ec.message(), wait.count(), backoff.exhausted(),
                   internal::SuppressedNote(p.suppressed));
    }
    accept_timer.expires_after(wait);
    accept_timer.async_wait([this](beast::error_code timer_ec) {
      if (!timer_ec && acceptor.is_open()) Accept();
    });
    return true;
  }

  HttpServerOptions options;
  Handler handler;
  std::vector<std::unique_ptr<net::io_context>> contexts;
  // The acceptor has a context and a thread of its own, so that accepting never waits behind
  // connection traffic.
  net::io_context acceptor_context;
  tcp::acceptor acceptor;
  net::steady_timer accept_timer;
  sluice::http::AcceptBackoff backoff;
  internal::LogThrottle accept_log;  // One line a second.
  size_t next_context = 0;
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
  impl_->threads.emplace_back([this] { impl_->acceptor_context.run(); });
  for (auto& context : impl_->contexts) {
    // Keeps the context running while it has no connection yet.
    impl_->threads.emplace_back([context = context.get()] {
      auto work = net::make_work_guard(*context);
      context->run();
    });
  }
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (impl_->threads.empty()) return;
  net::post(impl_->acceptor_context, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->accept_timer.cancel();
  });
  impl_->acceptor_context.stop();
  for (auto& context : impl_->contexts) context->stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
}

uint16_t HttpServer::port() const { return impl_->bound_port; }

}  // namespace sluice::server
