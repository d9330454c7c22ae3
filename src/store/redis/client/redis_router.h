// RedisRouter: where a command goes. The store sends every command through a router, and the
// router picks the server:
//   - RedisClient: one server (redis://), every command to it;
//   - SentinelClient: the primary that a set of Sentinels names, followed across failovers
//     (redis-sentinel://);
//   - ClusterClient: the primary serving the slot of the command's key, following MOVED and ASK
//     (redis-cluster://).
//
// What every router guarantees: `done` is called exactly once; a command whose outcome is unknown
// (its deadline passed after it was written, or its connection dropped) is never resent; a router
// resends only what a server proved it did not run (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING,
// READONLY), within the command's deadline.
//
// Thread safety: thread-safe. Callbacks run on an I/O thread of the router, or inline before Send()
// returns when the command is refused up front (see RedisClient::Send()).
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_ROUTER_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_ROUTER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_command.h"
#include "src/store/redis/client/redis_reply.h"

namespace sluice {

class RedisClient;
struct RedisClientStats;

class RedisRouter {
 public:
  // Completion of one command (redis_command.h).
  using ReplyCallback = RedisReplyCallback;

  RedisRouter() = default;
  RedisRouter(const RedisRouter&) = delete;
  RedisRouter& operator=(const RedisRouter&) = delete;
  virtual ~RedisRouter() = default;

  // RedisRouter::Route()
  //
  // Sends `command` to the server that owns `key` (a Redis key of the command; every key of one
  // command must share a Cluster slot) and calls `done` with its reply, or DeadlineExceeded after
  // `timeout`, or Unavailable. Single-server routers ignore `key`; an empty `key` goes to any
  // primary.
  virtual void Route(RedisCommand command, std::string_view key, std::chrono::milliseconds timeout,
                     ReplyCallback done) = 0;

  // RedisRouter::Primaries()
  //
  // Returns a client for each primary known now (one for a single server), for commands that
  // every primary must see: SCRIPT LOAD, CONFIG GET. May be empty before the topology is known.
  virtual std::vector<std::shared_ptr<RedisClient>> Primaries() const = 0;

  // Told about a primary to use, on a thread of the router. Must not block, and must not call
  // SetPrimaryListener().
  using PrimaryListener = std::function<void(const std::shared_ptr<RedisClient>&)>;

  // RedisRouter::SetPrimaryListener()
  //
  // Replaces the listener, which is then called with each primary the router knows now and with
  // each primary it starts using later (a promoted replica, a node that took slots): for work
  // every primary needs once, such as SCRIPT LOAD. An empty listener removes it; once this
  // returns, the old listener is not running and will not be called again. This default, for a
  // router whose servers never change, calls it for Primaries() at once, on the caller's thread.
  // NOLINTNEXTLINE(performance-unnecessary-value-param): the overrides keep it.
  virtual void SetPrimaryListener(PrimaryListener listener) {
    if (!listener) return;
    for (const std::shared_ptr<RedisClient>& primary : Primaries()) listener(primary);
  }

  // RedisRouter::WaitForConnection()
  //
  // Blocks until the router can serve commands (for a cluster: every slot has a ready primary)
  // and returns OK, or the error after `timeout`. Returns FailedPrecondition on an I/O thread.
  virtual absl::Status WaitForConnection(std::chrono::milliseconds timeout) = 0;

  // RedisRouter::RouterStats()
  //
  // Counters summed over every server's connections.
  virtual RedisClientStats RouterStats() const = 0;

  // RedisRouter::Describe()
  //
  // Returns the redacted endpoint of the deployment, for logs ("redis-cluster://h1:7000,h2:7001").
  virtual std::string Describe() const = 0;

  // RedisRouter::DefaultTimeout()
  //
  // The per-command deadline used when a caller has none of its own.
  virtual std::chrono::milliseconds DefaultTimeout() const = 0;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_ROUTER_H_
