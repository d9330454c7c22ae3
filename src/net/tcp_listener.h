// TcpListener: the accept loop under BeastServer (sluice/net/beast_server.h) and sluiced's gRPC
// listener over plain TCP, with a connection cap, a backoff when descriptors run out, and a health
// answer. Internal to sluice: not an installed header.
//
// - Cap: when `max_connections` connections are open (as the owner counts them), the owner may
//   close an idle one to make room (`make_room`); otherwise a new one is accepted and closed at
//   once, and counted; the client sees its connection closed instead of
//   waiting in the backlog, and the descriptors left stay for the other listener and the store.
// - Per address (`max_connections_per_address`, 0: none): a new connection from an address that
//   already has that many open is closed at once, and counted, before the overall cap is looked
//   at. The listener counts them itself, whoever owns them and however they close: it remembers
//   each connection's descriptor and socket inode, and one is open while its descriptor still
//   names that socket (a reused descriptor names another).
// - Out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM): the loop waits as
//   sluice/net/accept_backoff.h says instead of spinning, and accepts again by itself.
// - A listening socket that fails for good (EBADF, EINVAL, ENOTSOCK, EFAULT: closed or shut down
//   under us) stops the loop; Health() says so from then on.
// Log lines (at most one a second per listener, to `log`) name the listener ("http", "grpc").
//
// Example:
//   TcpListener listener(context, {.name = "http", .port = 8080, .max_connections = 1000},
//                        [&]() -> boost::asio::io_context& { return next(); },
//                        [&](TcpListener::Socket s) { StartSession(std::move(s)); },
//                        [&] { return open_sessions.load(); });
//   SLUICE_RETURN_IF_ERROR(listener.Listen());  // then run `context`
//
// Thread safety: Listen() before the context runs; Close() on the context's thread (post it);
// the callbacks run on the context's thread; Health(), Stats() and port() from any thread.
#ifndef SLUICE_NET_TCP_LISTENER_H_
#define SLUICE_NET_TCP_LISTENER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "sluice/clock.h"
#include "sluice/net/accept_backoff.h"

#include "src/util/log_throttle.h"

namespace sluice::net::internal {

struct TcpListenerOptions {
  // Names the listener in log lines and errors. Default: "tcp".
  std::string name = "tcp";
  // Listen address, an IP literal. Default: loopback only.
  std::string address = "127.0.0.1";
  // Listen port; 0 picks a free one (see port()). Default: 0.
  uint16_t port = 0;
  // Open connections beyond which new ones are closed at once. Default: 10,000 (sluiced derives
  // its defaults from the descriptor limit, fd_limit.h).
  size_t max_connections = 10'000;
  // Open connections from one IP address beyond which its new ones are closed at once; 0: no
  // such cap. Default: 0.
  size_t max_connections_per_address = 0;
  // Accepts failing for lack of descriptors this long, without one success, make Health()
  // unhealthy. Default: 5 s.
  std::chrono::milliseconds unhealthy_after = std::chrono::seconds(5);
  // Time source for `unhealthy_after`. Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
  // Receives warnings and errors. Default (empty): standard error.
  std::function<void(std::string_view line)> log{};
  // At the cap, asked to make room for the new connection by closing an idle one; true when it
  // did, and the new connection is then accepted. Default (empty): never; the new one is closed.
  std::function<bool()> make_room{};
};

class TcpListener {
 public:
  using Executor = boost::asio::io_context::executor_type;
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
  // The context a new connection is accepted onto (its socket's executor).
  using NextContext = std::function<boost::asio::io_context&()>;
  // Receives each connection accepted under the cap.
  using OnAccept = std::function<void(Socket)>;
  // Counts the connections the owner holds open.
  using OpenConnections = std::function<size_t()>;

  TcpListener(boost::asio::io_context& context, TcpListenerOptions options, NextContext next,
              OnAccept on_accept, OpenConnections open_connections);
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;
  ~TcpListener() = default;

  // TcpListener::Listen()
  //
  // Binds, listens and queues the first accept on the context. Returns InvalidArgument for an
  // address that is not an IP literal, Unavailable (with the address) when it cannot bind.
  absl::Status Listen();

  // TcpListener::Close()
  //
  // Stops accepting. On the context's thread.
  void Close();

  // TcpListener::Health()
  //
  // OK while the listener accepts; Unavailable when its socket failed for good, when it is closed,
  // or when accepts have failed for lack of descriptors for `unhealthy_after` without a success.
  absl::Status Health() const;

  ListenerStats Stats() const;
  uint16_t port() const { return port_.load(); }

 private:
  void Accept();
  // Whether `socket`'s address has `max_connections_per_address` open; if not, remembers it.
  bool OverAddressCap(Socket& socket);
  void OnAccepted(const boost::system::error_code& ec, Socket socket);
  // Arranges the next accept after `wait`; returns false when `ec` needs no wait.
  bool PauseAfter(const boost::system::error_code& ec);
  int64_t NowMicros() const;
  // Writes `line` to options_.log if a line is due (log_throttle_), with the count suppressed.
  void Log(std::string_view line);
  // Writes `line` to options_.log, unthrottled.
  void Emit(std::string_view line) const;

  TcpListenerOptions options_;
  Clock& clock_;
  NextContext next_;
  OnAccept on_accept_;
  OpenConnections open_connections_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer timer_;
  AcceptBackoff backoff_;
  sluice::internal::LogThrottle log_throttle_;  // One line a second.
  std::atomic<uint16_t> port_{0};
  // Health, read from other threads.
  std::atomic<bool> listening_{false};
  std::atomic<int64_t> failing_since_us_{0};  // 0: the last accept did not fail for resources.
  std::atomic<int> fatal_errno_{0};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> rejected_over_cap_{0};
  std::atomic<uint64_t> closed_idle_at_cap_{0};
  std::atomic<uint64_t> rejected_per_address_{0};
  // Per address (its bytes), the connections accepted from it: descriptor and socket inode. On
  // the context's thread.
  struct Accepted {
    int fd;
    uint64_t inode;
  };
  absl::flat_hash_map<std::string, std::vector<Accepted>> by_address_;
  size_t tracked_ = 0;      // Entries over by_address_.
  size_t sweep_at_ = 1024;  // A sweep of every address when tracked_ reaches this.
  std::atomic<uint64_t> accept_failures_{0};
};

}  // namespace sluice::net::internal

#endif  // SLUICE_NET_TCP_LISTENER_H_
