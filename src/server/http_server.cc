#include "src/server/http_server.h"

#include <algorithm>
#include <atomic>
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
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

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
  // `open` counts the connection while the session lives; it must outlive the session.
  Session(Stream::socket_type socket, const HttpServer::Handler& handler,
          const HttpServerOptions& options, std::atomic<size_t>& open)
      : stream_(std::move(socket)), handler_(handler), options_(options), open_(open) {
    open_.fetch_add(1);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { open_.fetch_sub(1); }

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
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      Write(HttpResponse{.status = 431, .body = R"({"error":"request headers too large"})"});
      return;
    }
    if (ec == http::error::body_limit) {
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
  std::atomic<size_t>& open_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
};

}  // namespace

struct HttpServer::Impl {
  Impl(HttpServerOptions o, Handler h)
      : options(std::move(o)),
        handler(std::move(h)),
        acceptor_context(1),
        listener(
            acceptor_context,
            TcpListenerOptions{.name = "http",
                               .address = options.address,
                               .port = options.port,
                               .max_connections = options.max_connections},
            [this]() -> net::io_context& { return *contexts[next_context++ % contexts.size()]; },
            [this](Stream::socket_type socket) {
              std::make_shared<Session>(std::move(socket), handler, options, open)->Run();
            },
            [this] { return open.load(); }) {
    for (int i = 0; i < std::max(1, options.threads); ++i) {
      // Concurrency hint 1: one thread runs each context, which lets Asio skip some locking.
      contexts.push_back(std::make_unique<net::io_context>(1));
    }
  }

  HttpServerOptions options;
  Handler handler;
  // Open sessions. Declared before the contexts, whose destruction destroys the last sessions.
  std::atomic<size_t> open{0};
  std::vector<std::unique_ptr<net::io_context>> contexts;
  // The listener has a context and a thread of its own, so that accepting never waits behind
  // connection traffic; each connection goes to the next I/O context in turn.
  net::io_context acceptor_context;
  TcpListener listener;
  size_t next_context = 0;
  std::vector<std::thread> threads;
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
  if (absl::Status s = impl_->listener.Listen(); !s.ok()) return s;
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
  net::post(impl_->acceptor_context, [this] { impl_->listener.Close(); });
  impl_->acceptor_context.stop();
  for (auto& context : impl_->contexts) context->stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  // The posted close may not have run before the context stopped; no thread runs it now.
  impl_->listener.Close();
}

uint16_t HttpServer::port() const { return impl_->listener.port(); }

absl::Status HttpServer::ListenerHealth() const { return impl_->listener.Health(); }

TcpListenerStats HttpServer::ListenerStats() const { return impl_->listener.Stats(); }

size_t HttpServer::open_connections() const { return impl_->open.load(); }

}  // namespace sluice::server
