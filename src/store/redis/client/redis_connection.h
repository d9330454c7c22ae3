// RedisConnection: one auto-pipelined connection of a RedisClient (internal).
//
// Life cycle, all on the connection's I/O thread:
//
//   kConnecting --ready--> kReady --lost--> kConnecting (immediate retry)
//        |                                        |
//        +-------------failed----------> kBackoff --timer--> kConnecting
//   any state --Shutdown()--> kClosed
//
// Submit() may be called from any thread. It appends to `submitted_` under a short critical
// section and wakes the I/O thread only when nothing is already going to look at the queue (no
// write in flight, no wake-up pending): commands arriving during a write are gathered into the
// next one (auto-pipelining). The I/O thread swaps the whole queue out at once, formats nothing
// (commands arrive formatted), copies their bytes into one write buffer, and moves them to
// `inflight_`, the FIFO that replies are matched against. No lock is held across I/O or callbacks.
//
// Deadlines: one timer per connection, armed for the earliest deadline it knows of. It does not
// move as replies arrive (that would cost a timer operation per reply); when it fires it expires
// what is due, leaving tombstones in `inflight_` so late replies still match in order, and re-arms
// for the next deadline. It also watches for a stalled connection (stall_timeout).
//
// Lifetime: owned through shared_ptr. Every handler it starts holds it, so a connection whose
// client is gone stays alive until the last handler on its (possibly shared) io_context has run;
// after Shutdown() has run, no handler calls the observer or a command's callback again.
//
// Thread safety: Submit(), Shutdown(), ready() and AddStats() are thread-safe; everything else runs
// on the I/O thread.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_CONNECTION_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_CONNECTION_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include "src/store/redis/client/redis_client_stats.h"
#include "src/store/redis/client/redis_command.h"
#include "src/store/redis/client/redis_connection_queue.h"
#include "src/store/redis/client/redis_endpoint.h"
#include "src/store/redis/client/redis_reply_reader.h"
#include "src/util/log_throttle.h"
#include "src/util/mutex.h"

namespace sluice::internal {

using TimePoint = std::chrono::steady_clock::time_point;

// What every connection of one client shares; each connection keeps a copy.
struct ConnectionConfig {
  RedisEndpoint endpoint;
  std::string host_port;  // endpoint.HostPort(), for messages.
  std::chrono::milliseconds command_timeout{0};
  std::chrono::milliseconds connect_timeout{0};
  std::chrono::milliseconds backoff_min{0};
  std::chrono::milliseconds backoff_max{0};
  std::chrono::milliseconds stall_timeout{0};
  size_t max_queued_commands = 0;
  std::string client_name;
  // Set for rediss://. Shared, so that a connection outliving its client still holds it.
  std::shared_ptr<boost::asio::ssl::context> tls_context;
  // RedisClientOptions::require_primary: ROLE is a handshake step and must say "master".
  bool require_primary = false;
  // RedisClientOptions::cluster_node_id: CLUSTER MYID is a handshake step and must answer it.
  std::string cluster_node_id = {};
  // RedisClientOptions::subscribe and on_message: SUBSCRIBE is the last handshake step, and
  // messages go to on_message instead of the FIFO of commands.
  std::vector<std::string> subscribe = {};
  std::function<void(const RedisReply&)> on_message = {};
  // Throttles the connections' log lines (lost, cannot connect, connected again), at most four a
  // second for the client. Shared, so a copy of the config shares it too.
  std::shared_ptr<LogThrottle> connection_log = std::make_shared<LogThrottle>(
      LogThrottleOptions{.max_lines = 4, .interval = std::chrono::seconds(1)});
};

// Told about connection state changes, on the connection's I/O thread.
class ConnectionObserver {
 public:
  virtual ~ConnectionObserver() = default;
  virtual void OnConnectionReady() = 0;
  // `was_ready`: an established connection was lost (else an attempt failed with `error`).
  virtual void OnConnectionDown(const absl::Status& error, bool was_ready) = 0;
};

// One command on its way: queued, then in flight. A request whose callback is empty is a
// tombstone: it timed out after being written, and its reply will be discarded. A pipeline
// (command.is_pipeline()) stays at the front of the FIFO until all its replies have arrived,
// tombstone or not, so that one pipeline consumes exactly its own replies, and completes once
// with an array of them.
struct Request {
  RedisCommand command;
  RedisReplyCallback done;
  TimePoint deadline = TimePoint::max();
  std::chrono::milliseconds timeout{0};
  // Replies of a pipeline received so far (kept only while `done` is set), and their count.
  std::vector<RedisReply> replies = {};
  size_t replies_received = 0;
};

// ReadPasswordFile()
//
// Returns the content of `path` without one trailing newline; Unavailable when it cannot be read
// or is empty. The message names the file, never its content.
absl::StatusOr<std::string> ReadPasswordFile(const std::string& path);

class RedisConnection : public std::enable_shared_from_this<RedisConnection> {
 public:
  // `io` is kept alive as long as the connection: its sockets and timers belong to it.
  RedisConnection(std::shared_ptr<boost::asio::io_context> io, ConnectionConfig config,
                  ConnectionObserver& observer);
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;
  ~RedisConnection();

  // Starts the first connection attempt (asynchronously). REQUIRES: owned by a shared_ptr.
  void Start();
  // See RedisClient::Send(). REQUIRES: !command.empty().
  void Submit(RedisCommand command, std::chrono::milliseconds timeout, RedisReplyCallback done);
  // Closes the connection and fails everything pending with Unavailable (asynchronously, on the
  // I/O thread), then calls `then` there, if set: from then on the observer is never called
  // again, so `then` may release it. Idempotent (`then` runs each time).
  void Shutdown(absl::AnyInvocable<void() &&> then = nullptr);
  bool ready() const { return ready_.load(std::memory_order_relaxed); }
  void AddStats(RedisClientStats& stats) const;

 private:
  enum class State : uint8_t { kConnecting, kReady, kBackoff, kClosed };
  using Tcp = boost::asio::ip::tcp;
  using TlsStream = boost::asio::ssl::stream<Tcp::socket&>;
  static constexpr size_t kReadBufferSize = size_t{64} * 1024;

  // One connection attempt's socket, TLS layer and buffers.
  struct Transport {
    explicit Transport(boost::asio::io_context& io) : socket(io) {}
    Tcp::socket socket;
    std::unique_ptr<TlsStream> tls;  // Wraps `socket` for rediss://.
    std::string write_buf;
    std::array<char, kReadBufferSize> read_buf;
  };

  // Connection life cycle (redis_connection.cc).
  void StartConnect();
  void ConnectTo(uint64_t epoch, const std::vector<Tcp::endpoint>& endpoints);
  void OnConnected(uint64_t epoch, const boost::system::error_code& ec);
  void StartHandshake(uint64_t epoch);
  void OnHandshakeReply(uint64_t epoch, std::string_view step, bool last,
                        absl::StatusOr<RedisReply> reply);
  void BecomeReady();
  // Closes the socket and fails what was in flight; retries at once if the connection was
  // established, else after a backoff delay.
  void FailConnection(const absl::Status& error);
  void ScheduleReconnect();
  void DoShutdown();
  // Logs a lost connection or the first failed attempt of a series (connection_log).
  void LogConnectionDown(const absl::Status& error, bool was_ready);
  State SetState(State state) ABSL_LOCKS_EXCLUDED(mu_);

  // Command I/O (redis_connection_io.cc).
  void OnWake();
  void TryWrite();
  void WriteBuffer(size_t commands);
  void OnWrite(uint64_t epoch, const boost::system::error_code& ec);
  void StartRead();
  void OnRead(uint64_t epoch, const boost::system::error_code& ec, size_t bytes);
  void CloseTransport();
  void ArmDeadlineTimer(TimePoint at);
  void OnDeadlineTimer();
  // Completes each request of `requests` that has a callback with `make_error(request)`.
  template <typename MakeError>
  static void FailAll(std::vector<Request>& requests, MakeError make_error) {
    for (Request& r : requests) {
      if (r.done) std::move(r.done)(make_error(r));
    }
  }

  template <typename Op>
  static void WithStream(Transport& transport, Op&& op) {
    if (transport.tls != nullptr) {
      op(*transport.tls);
    } else {
      op(transport.socket);
    }
  }

  const std::shared_ptr<boost::asio::io_context> io_holder_;
  boost::asio::io_context& io_;
  const ConnectionConfig config_;
  ConnectionObserver& observer_;

  // I/O thread only.
  Tcp::resolver resolver_;
  // The socket of the current attempt. Handlers hold a reference to their transport, so a
  // transport outlives every operation started on it even after the connection moved on.
  std::shared_ptr<Transport> transport_;
  boost::asio::steady_timer connect_timer_;
  boost::asio::steady_timer backoff_timer_;
  boost::asio::steady_timer deadline_timer_;
  TimePoint deadline_timer_at_ = TimePoint::max();
  uint64_t epoch_ = 0;  // Bumped per attempt; handlers of an older attempt do nothing.
  bool closing_ = false;
  bool established_ = false;  // The current attempt reached kReady.
  int failed_attempts_ = 0;
  // Since when no connection is established, once one was lost or an attempt failed (for the
  // "connected again" log line); unset while connected and before the first failure.
  std::optional<TimePoint> down_since_;
  bool writing_ = false;
  std::vector<Request> batch_;  // Swapped with submitted_; keeps its capacity.
  RequestRing<Request> inflight_;
  TimePoint last_progress_;  // Last read, or when inflight_ became non-empty.
  TimePoint last_reply_;     // Last complete reply, or when inflight_ became non-empty.
  std::unique_ptr<RedisReplyReader> reader_;
  absl::BitGen rng_;

  // Shared with submitting threads.
  mutable Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kConnecting;
  std::vector<Request> submitted_ ABSL_GUARDED_BY(mu_);
  // The I/O thread will look at submitted_ without being woken: a wake-up is posted, a write is
  // in flight (its completion looks), or the connection is not ready (becoming ready looks).
  bool flush_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_posted_ ABSL_GUARDED_BY(mu_) = false;
  // Earliest deadline in submitted_, and when the deadline timer fires (max when idle): a command
  // due before the timer wakes the I/O thread so it can re-arm.
  TimePoint submitted_earliest_ ABSL_GUARDED_BY(mu_) = TimePoint::max();
  TimePoint timer_at_ ABSL_GUARDED_BY(mu_) = TimePoint::max();
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);

  std::atomic<bool> ready_{false};
  std::atomic<uint64_t> commands_sent_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> replies_{0};
  std::atomic<uint64_t> timeouts_{0};
  std::atomic<uint64_t> late_replies_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> lost_{0};
  std::atomic<uint64_t> connects_{0};
  std::atomic<uint64_t> connect_failures_{0};
  std::atomic<uint64_t> disconnects_{0};
  std::atomic<size_t> in_flight_{0};
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_CONNECTION_H_
