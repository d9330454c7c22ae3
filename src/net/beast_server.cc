#include "sluice/net/beast_server.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "src/net/response_bytes.h"
#include "src/net/tcp_listener.h"

namespace sluice::net {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace internal {

class BeastSession;

// The sessions waiting for a request (a new connection, or a kept-alive one between requests),
// oldest first: at the connection cap the oldest is closed to make room, so that connections
// held open without requests (an idle flood, slowloris) cannot keep new clients out. Sessions
// add and remove themselves on their own threads; the listener takes from the front on its own.
class IdleSessions {
 public:
  using Position = std::list<BeastSession*>::iterator;

  // Lists `session` last unless it is listed.
  void Add(BeastSession* session, std::optional<Position>& position) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (!position.has_value()) position = list_.insert(list_.end(), session);
  }
  void Remove(std::optional<Position>& position) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (position.has_value()) list_.erase(*std::exchange(position, std::nullopt));
  }
  // Removes the oldest and returns it, or null when there is none (or it is being destroyed).
  std::shared_ptr<BeastSession> TakeOldest();

 private:
  std::mutex mu_;
  std::list<BeastSession*> list_;
};

// Concrete executor types rather than the type-erased default: measured on sluiced's /json path.
using Stream = beast::basic_stream<tcp, BeastServer::Executor>;

// One client connection: read a request, hand it to the handler, write its answer, repeat.
class BeastSession : public std::enable_shared_from_this<BeastSession> {
 public:
  // `open` counts the connection while the session lives; it, `handler` and `options` must outlive
  // the session.
  BeastSession(Stream::socket_type socket, const BeastServer::Handler& handler,
               const BeastServerOptions& options, std::atomic<size_t>& open, IdleSessions& idle)
      : stream_(std::move(socket)), handler_(handler), options_(options), open_(open), idle_(idle) {
    // Waiting for its first request from the start: listed before it is counted in the cap.
    waiting_ = true;
    idle_.Add(this, idle_position_);
    open_.fetch_add(1);
    boost::system::error_code ignored;
    peer_ = stream_.socket().remote_endpoint(ignored);
  }
  BeastSession(const BeastSession&) = delete;
  BeastSession& operator=(const BeastSession&) = delete;
  ~BeastSession() {
    idle_.Remove(idle_position_);
    open_.fetch_sub(1);
  }

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  BeastServer::Executor executor() { return stream_.get_executor(); }

  // Writes `response` on this connection's thread: at once when called there, else dispatched.
  // Closes the connection if it is still waiting for a request (it may have received one since it
  // was chosen). On the session's thread.
  void CloseIfIdle() {
    if (!waiting_) return;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  std::optional<IdleSessions::Position>& idle_position() { return idle_position_; }

  static void Answer(std::shared_ptr<BeastSession> self, BeastServer::Response response) {
    const BeastServer::Executor executor = self->stream_.get_executor();
    asio::dispatch(executor, [self = std::move(self), response = std::move(response)]() mutable {
      self->Write(std::move(response));
    });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(options_.max_header_bytes);
    parser_->body_limit(options_.max_body_bytes);
    stream_.expires_after(options_.idle_timeout);
    waiting_ = true;
    idle_.Add(this, idle_position_);
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    waiting_ = false;
    idle_.Remove(idle_position_);
    if (ec == bhttp::error::header_limit) {
      return Refuse(bhttp::status::request_header_fields_too_large,
                    R"({"error":"request header fields too large"})");
    }
    if (ec == bhttp::error::body_limit) {
      return Refuse(bhttp::status::payload_too_large, R"({"error":"request body too large"})");
    }
    if (ec) return Close();  // end_of_stream, timeout, reset: nothing to answer.
    request_ = parser_->release();
    keep_alive_ = request_.keep_alive();
    version_ = request_.version();
    // Nothing here runs after the handler returns: the answer may already be written.
    handler_(request_, peer_, BeastServer::Responder(shared_from_this()));
  }

  // Answers a request that broke a size limit, then closes: the rest of it is still unread, so
  // the connection cannot carry another request.
  void Refuse(bhttp::status status, const char* body) {
    keep_alive_ = false;
    BeastServer::Response response(status, version_);
    response.set(bhttp::field::content_type, "application/json");
    response.body() = body;
    Write(std::move(response));
  }

  void Write(BeastServer::Response response) {
    response_ = std::move(response);
    // Read before the version changes: keep_alive() depends on it when no Connection field says.
    const bool keep_alive = keep_alive_ && response_.keep_alive();
    response_.version(version_);
    response_.keep_alive(keep_alive);
    if (!options_.server_header.empty()) {
      response_.set(bhttp::field::server, options_.server_header);
    }
    response_.prepare_payload();
    WriteResponseBytes(response_, out_);
    asio::async_write(stream_, asio::buffer(out_),
                      [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  Stream stream_;
  tcp::endpoint peer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  BeastServer::Request request_;
  BeastServer::Response response_;
  std::string out_;  // The answer's bytes (response_bytes.h); its capacity is kept across answers.
  const BeastServer::Handler& handler_;
  const BeastServerOptions& options_;
  std::atomic<size_t>& open_;
  IdleSessions& idle_;
  // Where this session is in idle_ while it waits for a request; guarded by idle_'s lock.
  std::optional<IdleSessions::Position> idle_position_;
  bool waiting_ = false;  // Waiting for a request; on the session's thread.
  bool keep_alive_ = true;
  unsigned version_ = 11;
};

std::shared_ptr<BeastSession> IdleSessions::TakeOldest() {
  const std::lock_guard<std::mutex> lock(mu_);
  if (list_.empty()) return nullptr;
  BeastSession* oldest = list_.front();
  list_.pop_front();
  oldest->idle_position().reset();
  // Alive while listed (its destructor removes it under this lock), but perhaps already being
  // destroyed: then lock() is null.
  return oldest->weak_from_this().lock();
}

}  // namespace internal

void BeastServer::Responder::operator()(Response response) && {
  internal::BeastSession::Answer(std::move(session_), std::move(response));
}

BeastServer::Executor BeastServer::Responder::executor() const { return session_->executor(); }

struct BeastServer::Impl {
  Impl(BeastServerOptions o, Handler h)
      : options(std::move(o)),
        handler(std::move(h)),
        acceptor_context(1),
        listener(
            acceptor_context,
            internal::TcpListenerOptions{
                .name = options.name,
                .address = options.address,
                .port = options.port,
                .max_connections = options.max_connections,
                .max_connections_per_address = options.max_connections_per_address,
                .log = options.log,
                .make_room = [this] { return MakeRoom(); }},
            [this]() -> asio::io_context& { return *contexts[next_context++ % contexts.size()]; },
            [this](internal::Stream::socket_type socket) {
              std::make_shared<internal::BeastSession>(std::move(socket), handler, options, open,
                                                       idle)
                  ->Run();
            },
            [this] { return open.load(); }) {
    for (int i = 0; i < std::max(1, options.threads); ++i) {
      // Concurrency hint 1: one thread runs each context, which lets Asio skip some locking.
      contexts.push_back(std::make_unique<asio::io_context>(1));
    }
  }

  // At the cap: asks the longest-idle session to close, on its own thread. The connections may
  // pass the cap by the closes still on their way, at most a sixteenth of it.
  bool MakeRoom() {
    if (!options.close_idle_at_cap) return false;
    if (open.load() >=
        options.max_connections + std::max<size_t>(1, options.max_connections / 16)) {
      return false;
    }
    std::shared_ptr<internal::BeastSession> oldest = idle.TakeOldest();
    if (oldest == nullptr) return false;
    const BeastServer::Executor executor = oldest->executor();
    asio::post(executor, [oldest = std::move(oldest)] { oldest->CloseIfIdle(); });
    return true;
  }

  BeastServerOptions options;
  Handler handler;
  // Sessions waiting for a request. Declared before the contexts, as `open` is.
  internal::IdleSessions idle;
  // Open sessions. Declared before the contexts, whose destruction destroys the last sessions.
  std::atomic<size_t> open{0};
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  // The listener has a context and a thread of its own, so that accepting never waits behind
  // connection traffic; each connection goes to the next I/O context in turn.
  asio::io_context acceptor_context;
  internal::TcpListener listener;
  size_t next_context = 0;
  std::vector<std::thread> threads;
};

BeastServer::BeastServer(BeastServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

BeastServer::~BeastServer() {
  // Stop() throws only when a thread cannot be joined (std::system_error), which leaves no state
  // to carry on from: say why, then end the process as the escaping exception would have.
  try {
    Stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: stopping the server failed: %s\n", impl_->options.name.c_str(),
                 e.what());
    std::terminate();
  } catch (...) {
    std::terminate();
  }
}

absl::Status BeastServer::Start() {
  if (absl::Status s = impl_->listener.Listen(); !s.ok()) return s;
  impl_->threads.emplace_back([this] { impl_->acceptor_context.run(); });
  for (auto& context : impl_->contexts) {
    // Keeps the context running while it has no connection yet.
    impl_->threads.emplace_back([context = context.get()] {
      auto work = asio::make_work_guard(*context);
      context->run();
    });
  }
  return absl::OkStatus();
}

void BeastServer::Stop() {
  if (impl_->threads.empty()) return;
  asio::post(impl_->acceptor_context, [this] { impl_->listener.Close(); });
  impl_->acceptor_context.stop();
  for (auto& context : impl_->contexts) context->stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  // The posted close may not have run before the context stopped; no thread runs it now.
  impl_->listener.Close();
}

uint16_t BeastServer::port() const { return impl_->listener.port(); }

absl::Status BeastServer::ListenerHealth() const { return impl_->listener.Health(); }

ListenerStats BeastServer::listener_stats() const { return impl_->listener.Stats(); }

size_t BeastServer::open_connections() const { return impl_->open.load(); }

}  // namespace sluice::net
