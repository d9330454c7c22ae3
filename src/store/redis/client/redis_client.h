// RedisClient: an asynchronous, auto-pipelining Redis client (RESP2) on Boost.Asio and hiredis.
//
// One connection (or a small fixed pool) carries every concurrent command. Commands submitted
// while a write is in flight are gathered into the next write, one buffer per write
// (auto-pipelining), and replies are matched to commands in FIFO order. Nothing blocks a thread
// per request: callers hand over a callback, and one I/O thread does all socket work.
//
// Every command has a deadline (`command_timeout`, or a per-call timeout). When it passes, the
// callback gets DeadlineExceeded and the command is never resent; if it was already written, its
// late reply is read and discarded in order. A connection lost with commands in flight fails them
// with Unavailable ("outcome unknown"); they are not resent either. The client then reconnects on
// its own, with exponential backoff and full jitter; each connect runs AUTH (password, or ACL user
// and password, from the endpoint or a file) and SELECT before any command. While a connection
// attempt is running, commands wait in a bounded queue (each still bounded by its deadline); while
// the client waits out a backoff delay, commands fail fast with Unavailable.
//
// Example:
//   RedisEndpoint endpoint{.host = "127.0.0.1", .nodes = {{.host = "127.0.0.1"}}};
//   auto client = RedisClient::Create({.endpoint = endpoint, .command_timeout = 20ms});
//   if (!client.ok()) return client.status();
//   (*client)->Send({"INCR", "hits"}, [](absl::StatusOr<RedisReply> reply) {
//     // Runs on the client's I/O thread.
//   });
//   absl::StatusOr<RedisReply> pong = (*client)->SendSync({"PING"});
//
// Thread safety: thread-safe. Callbacks run on the client's I/O thread (never inline inside
// Send(), except when the command is rejected up front; see Send()). They must not block, must not
// throw, and may call Send() again. The client may be destroyed from inside a callback.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_CLIENT_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_client_stats.h"
#include "src/store/redis/client/redis_command.h"
#include "src/store/redis/client/redis_endpoint.h"
#include "src/store/redis/client/redis_reply.h"
#include "src/store/redis/client/redis_router.h"

namespace sluice {
namespace internal {
class IoThread;
}  // namespace internal

struct RedisClientOptions {
  // Where to connect and how to authenticate (host, port, TLS, user, password or password_file,
  // db). REQUIRES: endpoint.topology == kServer. Its command_timeout, connect_timeout and
  // connections, when present, override the fields below: they are the operator's word.
  RedisEndpoint endpoint = {};
  // Deadline of each command, from Send() to its reply. Default: 50 ms, a few hundred times a
  // loopback round trip, long enough to ride out scheduler hiccups (CPU quota throttling) without
  // false timeouts, short enough that a hung Redis costs one bounded wait before the failure
  // policy answers. Deployments behind Envoy's 20 ms rate-limit timeout should set about 15 ms.
  std::chrono::milliseconds command_timeout{50};
  // Deadline of one connection attempt: resolve, TCP connect, TLS handshake, AUTH and SELECT.
  // Default: 1 s, ample for TLS on a busy host, short enough that a frozen server (whose kernel
  // still completes TCP handshakes) is abandoned quickly.
  std::chrono::milliseconds connect_timeout{1000};
  // Reconnect backoff: attempt n (from 1) waits uniformly in [0, min(backoff_max, backoff_min *
  // 2^(n-1))] ("full jitter"), so instances restarting together spread out. The first attempt
  // after an established connection drops is immediate. Defaults: 50 ms and 1 s, so a restarted
  // Redis is used again within about a second.
  std::chrono::milliseconds backoff_min{50};
  std::chrono::milliseconds backoff_max{1000};
  // A connection with commands awaiting replies that has read nothing for this long is presumed
  // dead (a frozen server, a black-holed network) and is closed and reconnected. Default: 2 s,
  // far above any command deadline so a brief server stall does not churn connections. Keep it
  // above the longest per-call timeout: a command still running when its connection is abandoned
  // fails with Unavailable.
  std::chrono::milliseconds stall_timeout{2000};
  // Connections multiplexing all commands; each has its own pipeline. Default: 1, which already
  // reaches Redis's single-threaded ceiling. REQUIRES: 1 <= connections <= 64.
  int connections = 1;
  // Threads running the connections (each connection stays on one thread); capped at
  // `connections`. Default: 1. REQUIRES: io_threads >= 1.
  int io_threads = 1;
  // Commands per connection waiting to be written (while connecting, or while a write is stuck)
  // before Send() fails fast with Unavailable. Default: 65536.
  size_t max_queued_commands = 65536;
  // CLIENT SETNAME on connect, for CLIENT LIST; empty sends nothing (an ACL user restricted to the
  // limiter's commands may not be allowed CLIENT). Default: empty.
  std::string client_name = {};
  // Check on every connect that the server is the primary: ROLE runs after AUTH and SELECT, and a
  // server whose role is not "master" fails the attempt with Unavailable, retried with backoff as
  // for a server that is down, so no command reaches a replica through this client. For routers
  // that learn the primary from someone else (Sentinel). Under ACLs the user needs +role.
  // Default: false.
  bool require_primary = false;
  // Check on every connect that the server is the Redis Cluster node with this id: CLUSTER MYID
  // runs after AUTH and SELECT (one more round trip per connect, none per command), and a server
  // answering another id, or an error (a server without cluster mode answers "ERR This instance
  // has cluster support disabled"), fails the attempt with Unavailable, retried with backoff as
  // for a server that is down. So a server that took the address of a node that died (a port
  // reused on its host) is never sent a command. For the Cluster client, which learns the ids
  // from the slot map. Under ACLs the user needs +cluster|myid. Default: empty, no check.
  std::string cluster_node_id = {};
  // Subscriber mode: channels SUBSCRIBEd to as the last step of every connect, so a reconnect
  // subscribes again. A subscribed connection takes no commands: send nothing on such a client.
  // Default: empty, a normal client.
  std::vector<std::string> subscribe = {};
  // Subscriber mode: called on the I/O thread with each subscription confirmation (["subscribe",
  // channel, count], once per channel per connect; what was published while disconnected was
  // missed) and each message (["message", channel, payload]). Must not block.
  // REQUIRES: set if and only if `subscribe` is not empty.
  std::function<void(const RedisReply&)> on_message = {};
};

// A RedisClient is the router of a single server (redis_router.h): Route() ignores the key.
class RedisClient final : public RedisRouter, public std::enable_shared_from_this<RedisClient> {
 public:
  using ReplyCallback = RedisRouter::ReplyCallback;

  // RedisClient::Create()
  //
  // Validates `options`, loads TLS material, starts the I/O thread and the first connection
  // attempts, and returns without waiting for them (see WaitForConnection()). Returns
  // InvalidArgument for bad options, an unreadable password_file or unusable TLS files.
  static absl::StatusOr<std::unique_ptr<RedisClient>> Create(const RedisClientOptions& options);
  // As above, with every connection on `io_thread` (shared with the other clients of a router;
  // options.io_threads is then ignored) instead of threads of the client's own; callbacks then
  // run on that thread. The client holds `io_thread` until it is destroyed. A null `io_thread`
  // is the one-argument form.
  static absl::StatusOr<std::unique_ptr<RedisClient>> Create(
      const RedisClientOptions& options, std::shared_ptr<internal::IoThread> io_thread);

  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;
  // Fails every pending command with Unavailable and closes the connections; their callbacks have
  // all run when it returns. Stops the I/O thread unless another client still uses it. May run on
  // the I/O thread (from a callback): the connections then close, and the pending commands fail,
  // once that callback has returned.
  ~RedisClient() override;

  // RedisClient::Send()
  //
  // Sends `command` and calls `done` with its reply, or with DeadlineExceeded after `timeout`
  // (default: command_timeout), or with Unavailable if its connection is lost. `done` runs on the
  // I/O thread, except when the command is rejected before being queued (not connected and
  // waiting out a backoff, queue full, client shutting down, empty command): then it runs inline,
  // before Send() returns, with Unavailable (InvalidArgument for an empty command or a timeout
  // that is not positive). A callback that resends on failure must not recurse without bound.
  // With one connection, commands from one thread reach Redis in the order they were sent.
  void Send(RedisCommand command, ReplyCallback done);
  void Send(RedisCommand command, std::chrono::milliseconds timeout, ReplyCallback done);
  void Send(std::initializer_list<std::string_view> argv, ReplyCallback done) {
    Send(RedisCommand::Format(argv), std::move(done));
  }
  void Send(const std::vector<std::string>& argv, ReplyCallback done) {
    Send(RedisCommand::Format(argv), std::move(done));
  }

  // RedisClient::SendSync()
  //
  // Send() and wait for the outcome. Returns FailedPrecondition when called on the I/O thread
  // (it would wait for itself).
  absl::StatusOr<RedisReply> SendSync(RedisCommand command,
                                      std::optional<std::chrono::milliseconds> timeout = {});
  absl::StatusOr<RedisReply> SendSync(std::initializer_list<std::string_view> argv) {
    return SendSync(RedisCommand::Format(argv));
  }

  // RedisClient::WaitForConnection()
  //
  // Blocks until a connection is ready and returns OK; returns the error at once when a
  // connection attempt is refused for good reason (PermissionDenied for credentials,
  // InvalidArgument for SELECT); after `timeout`, returns DeadlineExceeded with the last
  // connection error. Returns FailedPrecondition on the I/O thread.
  absl::Status WaitForConnection(std::chrono::milliseconds timeout) override;

  // RedisClient::Stats()
  RedisClientStats Stats() const;

  // RedisClient::Endpoint()
  //
  // Returns the redacted endpoint of the server (RedisEndpoint::Redacted()), for logs.
  const std::string& Endpoint() const;
  // The node id checked on every connect (RedisClientOptions::cluster_node_id); empty if none.
  const std::string& ClusterNodeId() const;

  // RedisRouter: one server serves every key.
  void Route(RedisCommand command, std::string_view /*key*/, std::chrono::milliseconds timeout,
             ReplyCallback done) override {
    Send(std::move(command), timeout, std::move(done));
  }
  // The client itself, when a shared_ptr owns it (else an empty list).
  std::vector<std::shared_ptr<RedisClient>> Primaries() const override;
  RedisClientStats RouterStats() const override { return Stats(); }
  std::string Describe() const override { return Endpoint(); }
  std::chrono::milliseconds DefaultTimeout() const override;

 private:
  class Impl;
  RedisClient(std::vector<std::shared_ptr<internal::IoThread>> io_threads,
              std::shared_ptr<Impl> impl);

  // The threads the connections run on (of the client's own, or one shared with a router's other
  // clients). Declared first, let go of last: a thread that nothing else uses is joined here,
  // after the Impl, once the connections' last handlers have run.
  std::vector<std::shared_ptr<internal::IoThread>> io_threads_;
  // Also held by the connections until they have shut down, so that a client destroyed on its
  // I/O thread stays alive until they no longer need it.
  std::shared_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_CLIENT_H_
