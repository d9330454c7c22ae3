// SentinelClient::Impl (internal): the state that callers, the clients' callbacks and the monitor
// thread share. sentinel_client.cc holds routing (Route, READONLY, commands waiting for a
// primary, replacing the primary's client); sentinel_discovery.cc the monitor thread, the
// Sentinel queries and the +switch-master subscription.
//
// Locking: `mu_` guards everything mutable but the Sentinels' clients, which are set before the
// monitor thread starts and dropped after it stops. Nothing is sent and no callback is run while
// `mu_` is held, since a client may run a callback inline, and a callback may call back in.
//
// Thread safety: thread-safe, as SentinelClient.
#ifndef SLUICE_STORE_REDIS_CLIENT_SENTINEL_SENTINEL_CLIENT_INTERNAL_H_
#define SLUICE_STORE_REDIS_CLIENT_SENTINEL_SENTINEL_CLIENT_INTERNAL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/io_thread.h"
#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_endpoint.h"
#include "src/store/redis/client/sentinel/sentinel_client.h"
#include "src/util/log_throttle.h"
#include "src/util/mutex.h"

namespace sluice {
namespace internal {

// AddClientCounters()
//
// Adds the counters of `from` to `to`, not its gauges (connections, in flight, queued).
void AddClientCounters(RedisClientStats& to, const RedisClientStats& from);

}  // namespace internal

class SentinelClient::Impl final : public std::enable_shared_from_this<Impl> {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit Impl(const SentinelClientOptions& options);
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  // Creates the Sentinels' clients (queries and subscriptions) and starts the monitor thread,
  // which begins with a discovery; every client runs on `io_thread`. Returns what
  // RedisClient::Create() refuses.
  absl::Status Start(const std::shared_ptr<internal::IoThread>& io_thread);
  // See ~SentinelClient().
  void Shutdown();

  void Route(RedisCommand command, std::chrono::milliseconds timeout, ReplyCallback done);
  std::vector<std::shared_ptr<RedisClient>> Primaries() const;
  void SetPrimaryListener(PrimaryListener listener);
  absl::Status WaitForConnection(std::chrono::milliseconds timeout);
  RedisClientStats RouterStats() const;
  std::string PrimaryAddress() const;
  SentinelClientStats Stats() const;
  const std::string& describe() const { return describe_; }
  std::chrono::milliseconds command_timeout() const { return command_timeout_; }

 private:
  // One command on its way: the caller's callback and deadline.
  struct Attempt {
    ReplyCallback done;
    TimePoint deadline;
    std::chrono::milliseconds timeout{0};
    bool pipeline = false;
    // Cleared once the command has been resent after READONLY: the second answer is final.
    bool may_resend = true;
  };
  // A command waiting for a primary to be known.
  struct Waiter {
    RedisCommand command;
    Attempt attempt;
  };
  // A replaced primary's client, kept until its commands are done.
  struct Retired {
    std::shared_ptr<RedisClient> client;
    TimePoint since;
  };
  // A Sentinel's reply to the discovery round `round`.
  struct Answer {
    uint64_t round = 0;
    size_t sentinel = 0;
    absl::StatusOr<RedisReply> reply;
  };
  // What the monitor thread does outside the lock, decided under it.
  struct Actions {
    std::vector<Waiter> expired;
    std::optional<size_t> ask;  // The Sentinel to ask, for round `round`.
    uint64_t round = 0;
    std::optional<RedisNode> install;  // A primary to make a client for.
    std::vector<std::shared_ptr<RedisClient>> close;
  };

  // Routing (sentinel_client.cc).
  void SendTo(const std::shared_ptr<RedisClient>& client, RedisCommand command, Attempt attempt,
              std::chrono::milliseconds timeout);
  void OnReply(const RedisClient* client, RedisCommand spare, Attempt attempt,
               absl::StatusOr<RedisReply> reply);
  // Queues a command until a primary is known; refuses it (inline) when shut down or full.
  void Wait(RedisCommand command, Attempt attempt);
  // Makes the client of the primary at `node` and swaps it in (monitor thread).
  void Install(const RedisNode& node);
  static void Expire(std::vector<Waiter>& waiters);
  void AddWaiterLocked(Waiter waiter) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<Waiter> TakeWaitersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RetireLocked(std::shared_ptr<RedisClient> client, TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Discovery (sentinel_discovery.cc).
  void Run();
  bool WorkDueLocked(TimePoint now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  TimePoint NextWakeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PlanLocked(TimePoint now, Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleAnswerLocked(TimePoint now, const Answer& answer, Actions& actions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<RedisNode> ParseAnswer(const Answer& answer) const;
  void Ask(size_t sentinel, uint64_t round);
  // `first_subscription`: cleared by the first subscription confirmation of that Sentinel.
  void OnSentinelMessage(const RedisReply& message, std::atomic<bool>& first_subscription);
  // Asks for a discovery: at once when `urgent` (+switch-master, READONLY), else no sooner than
  // min_rediscovery_gap after the last one.
  void RequestDiscovery(bool urgent) ABSL_LOCKS_EXCLUDED(mu_);
  void RequestDiscoveryLocked(TimePoint now, bool urgent) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RedisClientOptions SentinelOptions(const RedisNode& sentinel) const;

  const SentinelClientOptions options_;
  const std::chrono::milliseconds command_timeout_;
  const std::chrono::milliseconds connect_timeout_;
  const std::string describe_;
  internal::LogThrottle discovery_log_;

  // The thread every client of this router runs its connections on, held by the SentinelClient:
  // callbacks may keep the Impl past it, and the last holder of the thread joins it.
  std::weak_ptr<internal::IoThread> io_thread_;
  // One per Sentinel, in the endpoint's order. Set by Start() before the monitor thread starts,
  // dropped by Shutdown() after it stopped (or by the destructor, when it was shut down on that
  // thread).
  std::vector<std::shared_ptr<RedisClient>> queries_;
  std::vector<std::shared_ptr<RedisClient>> subscribers_;
  std::thread monitor_;

  // Told about each primary installed (RedisRouter::SetPrimaryListener()); held while it runs,
  // so a replaced listener is not running once SetPrimaryListener() returns. Never taken with
  // mu_ held.
  internal::Mutex listener_mu_;
  PrimaryListener listener_ ABSL_GUARDED_BY(listener_mu_);

  mutable internal::Mutex mu_;
  // Signalled for the monitor thread (work to do) and WaitForConnection() (a primary installed,
  // a discovery failed).
  std::condition_variable_any changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // The primary's client (null while none is known), and the address of the last one installed
  // (kept when READONLY retires the client, unset before the first).
  std::shared_ptr<RedisClient> primary_ ABSL_GUARDED_BY(mu_);
  std::optional<RedisNode> primary_node_ ABSL_GUARDED_BY(mu_);
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  TimePoint waiters_earliest_ ABSL_GUARDED_BY(mu_) = TimePoint::max();
  std::vector<Retired> retired_ ABSL_GUARDED_BY(mu_);
  TimePoint next_retire_check_ ABSL_GUARDED_BY(mu_) = TimePoint::max();
  // Counters of closed primary clients, so that RouterStats() does not go backwards.
  RedisClientStats closed_totals_ ABSL_GUARDED_BY(mu_);

  // Discovery: one round at a time, asking the Sentinels in `order_` until one answers.
  TimePoint discovery_due_ ABSL_GUARDED_BY(mu_) = TimePoint::min();
  TimePoint next_poll_ ABSL_GUARDED_BY(mu_) = TimePoint::max();
  TimePoint last_discovery_ ABSL_GUARDED_BY(mu_) = TimePoint::min();
  bool asking_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t round_ ABSL_GUARDED_BY(mu_) = 0;
  size_t asked_ ABSL_GUARDED_BY(mu_) = 0;  // Position in order_ of the Sentinel asked now.
  std::vector<size_t> order_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> round_errors_ ABSL_GUARDED_BY(mu_);
  std::optional<Answer> answer_ ABSL_GUARDED_BY(mu_);
  // Why no primary is known, and whether retrying cannot help (credentials, unknown name).
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  bool last_error_final_ ABSL_GUARDED_BY(mu_) = false;
  SentinelClientStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_SENTINEL_SENTINEL_CLIENT_INTERNAL_H_
