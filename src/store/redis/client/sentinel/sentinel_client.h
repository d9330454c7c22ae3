// SentinelClient: the router of a primary that Redis Sentinels name, followed across failovers
// (redis-sentinel://, rediss-sentinel://).
//
// Discovery: the Sentinels of the endpoint are asked in turn `SENTINEL get-master-addr-by-name
// <primary_name>`, with their own credentials and TLS setting (sentinel_username,
// sentinel_password[_file], sentinel_tls); the first one to answer is asked first next time. The
// primary named gets a RedisClient (its auto-pipelined connection, from endpoint.ForNode()) with
// require_primary: every connect checks ROLE after AUTH, so no command reaches a server that is
// not (or no longer) a primary, even if a Sentinel's answer was stale.
//
// Following a failover: the client rediscovers when a Sentinel publishes +switch-master for the
// name (each Sentinel is subscribed to), when a command comes back READONLY, when a command fails
// because the primary cannot be reached, and every poll_interval as a backstop. When the
// Sentinels name another server, its client replaces the old one in one step under a lock:
// commands already handed to the old client complete there (or fail as that client decides), new
// ones go to the new client.
//
// What is resent: a command answered READONLY (for a pipeline, any of its replies) was refused by
// a read-only replica, which cannot have applied any write of it; it is resent once, to the next
// primary, within its own deadline (it waits for one if needed). Nothing else is resent: a
// command whose outcome is unknown (it timed out after being written, or its connection dropped)
// fails with DeadlineExceeded or Unavailable. Commands that arrive while no primary is known
// (before the first answer, or after READONLY) wait for one within their deadline.
//
// Threads: one monitor thread (discovery, waiting commands' deadlines), plus one I/O thread that
// every RedisClient of the router shares: the primary's, and two per Sentinel (queries, and the
// subscription, which takes a connection of its own as a subscribed RESP2 connection accepts no
// other command).
//
// Example:
//   RedisEndpoint sentinels = RedisEndpointFromUrl(*ParseStoreUrl(
//       "redis-sentinel://10.0.0.5:26379,10.0.0.6:26379/limits")).value();  // At the store level.
//   auto sentinel = SentinelClient::Create({.node = {.endpoint = sentinels, .command_timeout =
//   20ms}}); if (!sentinel.ok()) return sentinel.status();
//   (*sentinel)->Route(RedisCommand::Format({"INCR", "hits"}), "hits", 20ms,
//                      [](absl::StatusOr<RedisReply> reply) { ... });
//
// Thread safety: thread-safe. Callbacks run on the router's I/O thread, on the monitor
// thread (a command that waited for a primary), or inline before Route() returns when the command
// is refused up front (empty command, bad timeout, too many commands waiting, shut down, or the
// primary's client refusing it).
#ifndef SLUICE_STORE_REDIS_CLIENT_SENTINEL_SENTINEL_CLIENT_H_
#define SLUICE_STORE_REDIS_CLIENT_SENTINEL_SENTINEL_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_router.h"

namespace sluice {

struct SentinelClientOptions {
  // Options of every client: the primary's and the Sentinels'. `node.endpoint` is the deployment's
  // (topology kSentinel): its hosts are the Sentinels, its credentials and TLS settings the data
  // servers', its sentinel_* fields the Sentinels'. Its timeouts apply to the Sentinels too.
  RedisClientOptions node = {};
  // The Sentinels are asked this often even when nothing suggests a failover: the backstop for a
  // +switch-master missed while no subscription was up. Default: 2 s.
  std::chrono::milliseconds poll_interval{2000};
  // The least time between two discoveries prompted by failing commands, so that an outage does
  // not become a storm of Sentinel queries. +switch-master and READONLY are followed at once.
  // Default: 100 ms.
  std::chrono::milliseconds min_rediscovery_gap{100};
  // A replaced primary's client is closed once its commands are done, or after this long (any
  // still pending then fail with Unavailable). Default: 30 s.
  std::chrono::milliseconds retire_timeout{30000};
};

// Counters of the Sentinel layer (values may be slightly outdated relative to each other).
struct SentinelClientStats {
  uint64_t discoveries = 0;         // Rounds of asking the Sentinels.
  uint64_t discovery_failures = 0;  // Rounds in which no Sentinel named the primary.
  uint64_t primary_changes = 0;     // Times a new client replaced the primary's (not the first).
  uint64_t subscriptions = 0;       // +switch-master subscriptions made (one per Sentinel, and
                                    // one more per reconnect).
  uint64_t switch_messages = 0;     // +switch-master messages for our primary name.
  uint64_t readonly_replies = 0;    // Commands answered READONLY.
  uint64_t resends = 0;             // Of those, resent to a new primary.
  uint64_t wait_timeouts = 0;       // Commands whose deadline passed while waiting for a primary.
};

class SentinelClient final : public RedisRouter {
 public:
  // SentinelClient::Create()
  //
  // Validates `options`, starts the Sentinels' clients and the first discovery, and returns
  // without waiting (see WaitForConnection()). Returns InvalidArgument for options RedisClient
  // would refuse, an endpoint that is not a Sentinel deployment's, or a bad interval.
  static absl::StatusOr<std::shared_ptr<SentinelClient>> Create(
      const SentinelClientOptions& options);

  SentinelClient(const SentinelClient&) = delete;
  SentinelClient& operator=(const SentinelClient&) = delete;
  // Fails waiting and pending commands with Unavailable and stops every client and the monitor
  // thread. May run inside a callback.
  ~SentinelClient() override;

  // RedisRouter. Route() ignores the key: one primary serves every key.
  void Route(RedisCommand command, std::string_view key, std::chrono::milliseconds timeout,
             ReplyCallback done) override;
  // The primary's client, once the Sentinels named one (else an empty list).
  std::vector<std::shared_ptr<RedisClient>> Primaries() const override;
  // Calls `listener` with the current primary (if one is known) and with every primary installed
  // after a failover, on the thread that installs it.
  void SetPrimaryListener(PrimaryListener listener) override;
  // Waits until the primary the Sentinels name is connected and has confirmed with ROLE that it
  // is the primary; returns OK. Returns at once PermissionDenied when the Sentinels or the
  // primary refuse the credentials, NotFound when every Sentinel that answered does not know
  // primary_name; DeadlineExceeded with the last error after `timeout`.
  absl::Status WaitForConnection(std::chrono::milliseconds timeout) override;
  // The primary's clients (the current one and replaced ones still finishing), summed.
  RedisClientStats RouterStats() const override;
  // The redacted endpoint (a redis-sentinel:// URL).
  std::string Describe() const override;
  std::chrono::milliseconds DefaultTimeout() const override;

  // SentinelClient::PrimaryAddress()
  //
  // Returns "host:port" of the primary commands go to now, or "" while none is known.
  std::string PrimaryAddress() const;

  // SentinelClient::Stats()
  SentinelClientStats Stats() const;

 private:
  class Impl;
  SentinelClient(std::shared_ptr<internal::IoThread> io_thread, std::shared_ptr<Impl> impl);

  // The one I/O thread of every client of the router. Declared first, let go of last: unless a
  // client is still held elsewhere (Primaries()), it is joined here.
  std::shared_ptr<internal::IoThread> io_thread_;
  // Shared with callbacks of commands in flight, which may outlive the client.
  std::shared_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_SENTINEL_SENTINEL_CLIENT_H_
