#include "src/server/grpc/h2/grpc_h2_server.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "src/net/tcp_listener.h"
#include "src/server/grpc/h2/grpc_h2_connection.h"

namespace sluice::server::h2 {

namespace net = boost::asio;

// What only the server object uses; the connections hold Shared.
struct GrpcH2ServerRuntime {
  std::vector<std::shared_ptr<net::io_context>> contexts;
  // Accepting has a context and thread of its own, as in BeastServer, so that it never waits
  // behind connection traffic.
  net::io_context acceptor_context{1};
  std::unique_ptr<::sluice::net::internal::TcpListener> listener;
  size_t next_context = 0;
  std::vector<std::thread> threads;
};

namespace {

std::vector<std::shared_ptr<Connection>> Live(GrpcH2Server::Shared& shared) {
  internal::MutexLock lock(&shared.mu);
  std::vector<std::shared_ptr<Connection>> live;
  for (const std::weak_ptr<Connection>& c : shared.connections) {
    if (std::shared_ptr<Connection> p = c.lock()) live.push_back(std::move(p));
  }
  return live;
}

// At the cap: closes the oldest connection that has not sent a byte, on its own thread. The
// connections may pass the cap by the closes still on their way, at most a sixteenth of it.
bool MakeRoom(GrpcH2Server::Shared& shared) {
  const size_t cap = shared.options.max_connections;
  if (!shared.options.close_idle_at_cap) return false;
  std::vector<std::weak_ptr<Connection>> connections;
  {
    internal::MutexLock lock(&shared.mu);
    if (shared.open >= cap + std::max<size_t>(1, cap / 16)) return false;
    connections = shared.connections;
  }
  // Outside the lock: the last reference to a connection may go here, and its destructor locks.
  for (const std::weak_ptr<Connection>& c : connections) {  // Oldest first.
    std::shared_ptr<Connection> connection = c.lock();
    if (connection != nullptr && connection->silent() && connection->ClaimToMakeRoom()) {
      connection->Abort();
      return true;
    }
  }
  return false;
}

}  // namespace

GrpcH2Server::GrpcH2Server(GrpcH2ServerOptions options,
                           absl::flat_hash_map<std::string, UnaryMethod> methods)
    : shared_(std::make_shared<Shared>()) {
  shared_->options = std::move(options);
  shared_->methods = std::move(methods);
}

GrpcH2Server::~GrpcH2Server() {
  // Stop() throws only when a thread cannot be joined (std::system_error), which leaves no state
  // to carry on from: say why, then end the process as the escaping exception would have.
  try {
    Stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grpc: stopping the nghttp2 engine failed: %s\n", e.what());
    std::terminate();
  }
}

absl::Status GrpcH2Server::Start() {
  if (runtime_ != nullptr) return absl::FailedPreconditionError("grpc: already started");
  runtime_ = std::make_unique<GrpcH2ServerRuntime>();
  GrpcH2ServerRuntime& rt = *runtime_;
  const GrpcH2ServerOptions& o = shared_->options;
  for (int i = 0; i < std::max(1, o.threads); ++i) {
    // Concurrency hint 1: one thread runs each context.
    rt.contexts.push_back(std::make_shared<net::io_context>(1));
  }
  rt.listener = std::make_unique<::sluice::net::internal::TcpListener>(
      rt.acceptor_context,
      ::sluice::net::internal::TcpListenerOptions{
          .name = "grpc",
          .address = o.address,
          .port = o.port,
          .max_connections = o.max_connections,
          .max_connections_per_address = o.max_connections_per_address,
          .log = o.log,
          .make_room = [this] { return MakeRoom(*shared_); }},
      [&rt]() -> net::io_context& { return *rt.contexts[rt.next_context++ % rt.contexts.size()]; },
      [this, &rt](::sluice::net::internal::TcpListener::Socket socket) {
        boost::system::error_code ignored;
        socket.set_option(net::ip::tcp::no_delay(true), ignored);
        net::execution_context* owner = &socket.get_executor().context();
        auto context = std::find_if(rt.contexts.begin(), rt.contexts.end(),
                                    [owner](const auto& c) { return c.get() == owner; });
        auto connection = std::make_shared<Connection>(std::move(socket), *context, shared_);
        {
          internal::MutexLock lock(&shared_->mu);
          ++shared_->open;
          std::vector<std::weak_ptr<Connection>>& all = shared_->connections;
          if (all.size() >= 2 * shared_->open + 16) {
            std::erase_if(all, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
          }
          all.push_back(connection);
        }
        connection->Start();
      },
      [this] {
        internal::MutexLock lock(&shared_->mu);
        return shared_->open;
      });
  if (absl::Status s = rt.listener->Listen(); !s.ok()) {
    runtime_.reset();
    return s;
  }
  shared_->serving.store(true);
  rt.threads.emplace_back([&rt] { rt.acceptor_context.run(); });
  for (const std::shared_ptr<net::io_context>& context : rt.contexts) {
    rt.threads.emplace_back([context = context.get()] {
      auto work = net::make_work_guard(*context);
      context->run();
    });
  }
  return absl::OkStatus();
}

void GrpcH2Server::Stop() {
  if (runtime_ == nullptr) return;
  GrpcH2ServerRuntime& rt = *runtime_;
  net::post(rt.acceptor_context, [&rt] { rt.listener->Close(); });
  rt.acceptor_context.stop();
  rt.threads.front().join();
  rt.listener->Close();  // In case the posted close did not run before the stop.
  for (const std::shared_ptr<Connection>& c : Live(*shared_)) c->Drain();
  {
    Shared& s = *shared_;
    std::unique_lock lock(s.mu);
    s.closed.wait_for(lock, s.options.stop_grace,
                      [&s]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return s.open == 0; });
  }
  for (const std::shared_ptr<Connection>& c : Live(*shared_)) c->Abort();
  for (const std::shared_ptr<net::io_context>& context : rt.contexts) context->stop();
  for (size_t i = 1; i < rt.threads.size(); ++i) rt.threads[i].join();
  // Runs what the closes left (aborted reads and timers), so that no handler still holds a
  // connection, which holds its context.
  for (const std::shared_ptr<net::io_context>& context : rt.contexts) {
    context->restart();
    context->run();
  }
  shared_->serving.store(false);
  runtime_.reset();
}

void GrpcH2Server::SetServing(bool serving) {
  if (runtime_ != nullptr) shared_->serving.store(serving);
}

uint16_t GrpcH2Server::port() const { return runtime_ != nullptr ? runtime_->listener->port() : 0; }

absl::Status GrpcH2Server::ListenerHealth() const {
  if (runtime_ == nullptr) return absl::UnavailableError("grpc server is not running");
  return runtime_->listener->Health();
}

GrpcH2ServerStats GrpcH2Server::Stats() const {
  GrpcH2ServerStats stats;
  {
    internal::MutexLock lock(&shared_->mu);
    stats.open_connections = shared_->open;
  }
  stats.buffered_request_bytes = shared_->buffered.load();
  stats.silent_closed = shared_->silent_closed.load();
  if (runtime_ != nullptr) stats.listener = runtime_->listener->Stats();
  return stats;
}

}  // namespace sluice::server::h2
