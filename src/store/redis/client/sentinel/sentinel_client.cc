// SentinelClient: routing to the primary, READONLY, commands waiting for a primary, and replacing
// the primary's client. Discovery is in sentinel_discovery.cc.
#include "src/store/redis/client/sentinel/sentinel_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "sluice/clock.h"

#include "src/store/redis/client/redis_error.h"
#include "src/store/redis/client/sentinel/sentinel_client_internal.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

TimePoint Now() { return Clock::Real().Now(); }

// True when `reply` shows that a read-only replica answered: READONLY, for a pipeline in any of
// its replies. Such a server can have applied no write of the command, so it did not run.
bool ProvesReplica(const RedisReply& reply, bool pipeline) {
  if (!pipeline || !reply.is_array()) return IsReadOnly(reply);
  return std::any_of(reply.elements().begin(), reply.elements().end(),
                     [](const RedisReply& r) { return IsReadOnly(r); });
}

void AddAll(RedisClientStats& to, const RedisClientStats& from) {
  internal::AddClientCounters(to, from);
  to.connections += from.connections;
  to.connections_ready += from.connections_ready;
  to.in_flight += from.in_flight;
  to.queued += from.queued;
}

absl::Status ValidateSentinelOptions(const SentinelClientOptions& o) {
  auto invalid = [](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis-sentinel client options: ", internal::AbslView(what)));
  };
  if (o.node.endpoint.topology != RedisEndpoint::Topology::kSentinel) {
    return invalid("url is not a redis-sentinel:// URL");
  }
  if (o.node.endpoint.nodes.empty()) return invalid("url names no Sentinel");
  if (o.node.endpoint.primary_name.empty()) return invalid("url names no primary");
  if (o.poll_interval.count() <= 0 || o.min_rediscovery_gap.count() <= 0 ||
      o.retire_timeout.count() <= 0) {
    return invalid("poll_interval, min_rediscovery_gap and retire_timeout must be positive");
  }
  if (!o.node.subscribe.empty() || o.node.on_message) {
    return invalid("node options must not subscribe");
  }
  return absl::OkStatus();
}

}  // namespace

void internal::AddClientCounters(RedisClientStats& to, const RedisClientStats& from) {
  to.commands_sent += from.commands_sent;
  to.writes += from.writes;
  to.replies += from.replies;
  to.timeouts += from.timeouts;
  to.late_replies += from.late_replies;
  to.rejected += from.rejected;
  to.lost += from.lost;
  to.connects += from.connects;
  to.connect_failures += from.connect_failures;
  to.disconnects += from.disconnects;
}

// ---------------------------------------------------------------------------------------------
// SentinelClient

absl::StatusOr<std::shared_ptr<SentinelClient>> SentinelClient::Create(
    const SentinelClientOptions& options) {
  if (absl::Status valid = ValidateSentinelOptions(options); !valid.ok()) return valid;
  // spdlog's registry is a function-local static in a library not built for TSan: made here,
  // before any of our threads starts, its first use cannot look like a race between them.
  spdlog::default_logger_raw();
  std::shared_ptr<internal::IoThread> io_thread = internal::IoThread::Start("sluice-redis");
  auto impl = std::make_shared<Impl>(options);
  if (absl::Status started = impl->Start(io_thread); !started.ok()) {
    impl->Shutdown();
    return started;
  }
  return std::shared_ptr<SentinelClient>(new SentinelClient(std::move(io_thread), std::move(impl)));
}

SentinelClient::SentinelClient(std::shared_ptr<internal::IoThread> io_thread,
                               std::shared_ptr<Impl> impl)
    : io_thread_(std::move(io_thread)), impl_(std::move(impl)) {}

SentinelClient::~SentinelClient() { impl_->Shutdown(); }

void SentinelClient::Route(RedisCommand command, std::string_view /*key*/,
                           std::chrono::milliseconds timeout, ReplyCallback done) {
  impl_->Route(std::move(command), timeout, std::move(done));
}

std::vector<std::shared_ptr<RedisClient>> SentinelClient::Primaries() const {
  return impl_->Primaries();
}

void SentinelClient::SetPrimaryListener(PrimaryListener listener) {
  impl_->SetPrimaryListener(std::move(listener));
}

absl::Status SentinelClient::WaitForConnection(std::chrono::milliseconds timeout) {
  return impl_->WaitForConnection(timeout);
}

RedisClientStats SentinelClient::RouterStats() const { return impl_->RouterStats(); }

std::string SentinelClient::Describe() const { return impl_->describe(); }

std::chrono::milliseconds SentinelClient::DefaultTimeout() const {
  return impl_->command_timeout();
}

std::string SentinelClient::PrimaryAddress() const { return impl_->PrimaryAddress(); }

SentinelClientStats SentinelClient::Stats() const { return impl_->Stats(); }

// ---------------------------------------------------------------------------------------------
// SentinelClient::Impl: routing

SentinelClient::Impl::Impl(const SentinelClientOptions& options)
    : options_(options),
      command_timeout_(
          options.node.endpoint.command_timeout.value_or(options.node.command_timeout)),
      connect_timeout_(
          options.node.endpoint.connect_timeout.value_or(options.node.connect_timeout)),
      describe_(options.node.endpoint.Redacted()),
      discovery_log_({.max_lines = 1, .interval = std::chrono::seconds(1)}) {
  for (size_t i = 0; i < options.node.endpoint.nodes.size(); ++i) order_.push_back(i);
}

SentinelClient::Impl::~Impl() {
  // Shut down on the monitor thread, which could not join itself: the clients go now.
  queries_.clear();
  subscribers_.clear();
}

void SentinelClient::Impl::Route(RedisCommand command, milliseconds timeout, ReplyCallback done) {
  if (absl::Status valid = ValidateCommand(command, timeout); !valid.ok()) {
    std::move(done)(std::move(valid));
    return;
  }
  Attempt attempt{.done = std::move(done),
                  .deadline = Now() + timeout,
                  .timeout = timeout,
                  .pipeline = command.is_pipeline()};
  std::shared_ptr<RedisClient> client;
  {
    internal::MutexLock lock(&mu_);
    client = primary_;
  }
  if (client == nullptr) {
    Wait(std::move(command), std::move(attempt));
    return;
  }
  SendTo(client, std::move(command), std::move(attempt), timeout);
}

void SentinelClient::Impl::SendTo(const std::shared_ptr<RedisClient>& client, RedisCommand command,
                                  Attempt attempt, milliseconds timeout) {
  // A copy in case the server answers READONLY: the one command that may be sent again. (A copy
  // that fails to allocate is empty, and then the READONLY reply is returned as is.)
  RedisCommand spare = attempt.may_resend ? command.Clone() : RedisCommand();
  client->Send(std::move(command), timeout,
               [self = shared_from_this(), raw = client.get(), spare = std::move(spare),
                attempt = std::move(attempt)](absl::StatusOr<RedisReply> reply) mutable {
                 self->OnReply(raw, std::move(spare), std::move(attempt), std::move(reply));
               });
}

void SentinelClient::Impl::OnReply(const RedisClient* client, RedisCommand spare, Attempt attempt,
                                   absl::StatusOr<RedisReply> reply) {
  if (!reply.ok()) {
    // The primary could not be reached (or its connection dropped): perhaps it failed over. The
    // command itself may have run and is not resent.
    if (absl::IsUnavailable(reply.status())) RequestDiscovery(/*urgent=*/false);
    std::move(attempt.done)(std::move(reply));
    return;
  }
  if (!ProvesReplica(*reply, attempt.pipeline)) {
    std::move(attempt.done)(std::move(reply));
    return;
  }
  // A replica answered: the server we took for the primary was demoted. Until the Sentinels name
  // a primary again, commands wait rather than bounce off it.
  bool resend = false;
  {
    internal::MutexLock lock(&mu_);
    ++stats_.readonly_replies;
    const TimePoint now = Now();
    if (primary_ != nullptr && primary_.get() == client) {
      RetireLocked(std::move(primary_), now);
      primary_ = nullptr;
    }
    RequestDiscoveryLocked(now, /*urgent=*/true);
    resend = attempt.may_resend && !spare.empty() && !stopping_;
  }
  if (!resend) {
    std::move(attempt.done)(std::move(reply));  // READONLY; the store maps it to Unavailable.
    return;
  }
  attempt.may_resend = false;
  Wait(std::move(spare), std::move(attempt));
}

void SentinelClient::Impl::Wait(RedisCommand command, Attempt attempt) {
  absl::Status refused;
  std::shared_ptr<RedisClient> client;
  {
    internal::MutexLock lock(&mu_);
    if (stopping_) {
      refused = absl::UnavailableError(
          absl::StrCat("redis ", internal::AbslView(command.name()), ": client shut down"));
    } else if (primary_ != nullptr) {
      client = primary_;  // Installed since the caller looked.
    } else if (waiters_.size() >= options_.node.max_queued_commands) {
      refused = absl::UnavailableError(absl::StrCat(
          "redis ", internal::AbslView(command.name()), ": ", waiters_.size(),
          " commands already waiting for the Sentinels to name a primary for ", describe_));
    } else {
      AddWaiterLocked(Waiter{.command = std::move(command), .attempt = std::move(attempt)});
      return;
    }
  }
  if (!refused.ok()) {
    std::move(attempt.done)(std::move(refused));
    return;
  }
  const auto left = std::chrono::duration_cast<milliseconds>(attempt.deadline - Now());
  if (left.count() <= 0) {
    std::vector<Waiter> late;
    late.push_back(Waiter{.command = std::move(command), .attempt = std::move(attempt)});
    Expire(late);
    return;
  }
  if (!attempt.may_resend) {
    internal::MutexLock lock(&mu_);
    ++stats_.resends;
  }
  SendTo(client, std::move(command), std::move(attempt), left);
}

void SentinelClient::Impl::AddWaiterLocked(Waiter waiter) {
  const bool earliest = waiter.attempt.deadline < waiters_earliest_;
  waiters_earliest_ = std::min(waiters_earliest_, waiter.attempt.deadline);
  waiters_.push_back(std::move(waiter));
  if (earliest) changed_.notify_all();  // The monitor thread wakes for the new deadline.
}

std::vector<SentinelClient::Impl::Waiter> SentinelClient::Impl::TakeWaitersLocked() {
  std::vector<Waiter> taken;
  taken.swap(waiters_);
  waiters_earliest_ = TimePoint::max();
  return taken;
}

void SentinelClient::Impl::Expire(std::vector<Waiter>& waiters) {
  for (Waiter& w : waiters) {
    // Nothing was run: either no primary was known in time, or the command was refused with
    // READONLY and no new primary was known before its deadline.
    std::move(w.attempt.done)(absl::DeadlineExceededError(absl::StrCat(
        "redis ", internal::AbslView(w.command.name()), ": timed out after ",
        w.attempt.timeout.count(), "ms waiting for the Sentinels to name a primary; ",
        w.attempt.may_resend ? "never sent" : "refused by a replica (READONLY), did not run")));
  }
}

void SentinelClient::Impl::RetireLocked(std::shared_ptr<RedisClient> client, TimePoint now) {
  if (client == nullptr) return;
  retired_.push_back(Retired{.client = std::move(client), .since = now});
  next_retire_check_ = std::min(next_retire_check_, now + milliseconds(100));
}

void SentinelClient::Impl::Install(const RedisNode& node) {
  RedisClientOptions primary_options = options_.node;
  primary_options.endpoint = options_.node.endpoint.ForNode(node.host, node.port);
  primary_options.require_primary = true;
  std::shared_ptr<internal::IoThread> io_thread = io_thread_.lock();
  absl::StatusOr<std::unique_ptr<RedisClient>> made =
      io_thread == nullptr ? absl::UnavailableError("redis-sentinel: client shut down")
                           : RedisClient::Create(primary_options, std::move(io_thread));
  std::vector<Waiter> waiting;
  std::shared_ptr<RedisClient> client;
  std::string previous;
  {
    internal::MutexLock lock(&mu_);
    const TimePoint now = Now();
    if (!made.ok()) {
      // Options were checked at Create(): only a TLS or password-file problem that appeared
      // since. Try again later.
      last_error_ = made.status();
      discovery_due_ = std::min(discovery_due_, now + options_.min_rediscovery_gap);
      return;
    }
    if (stopping_) return;
    client = std::shared_ptr<RedisClient>(*std::move(made));
    if (primary_node_.has_value()) {  // A primary was installed before (it may be retired).
      ++stats_.primary_changes;
      previous = RedisNodeName(*primary_node_);
    }
    RetireLocked(std::move(primary_), now);
    primary_ = client;
    primary_node_ = node;
    last_error_ = absl::OkStatus();
    last_error_final_ = false;
    waiting = TakeWaitersLocked();
  }
  changed_.notify_all();
  spdlog::info("redis-sentinel {}: primary {} is {}{}", describe_,
               options_.node.endpoint.primary_name, RedisNodeName(node),
               previous.empty() ? "" : absl::StrCat(" (was ", previous, ")"));
  {
    internal::MutexLock lock(&listener_mu_);
    if (listener_) listener_(client);
  }
  for (Waiter& w : waiting) {
    const auto left = std::chrono::duration_cast<milliseconds>(w.attempt.deadline - Now());
    if (left.count() <= 0) {
      std::vector<Waiter> late;
      late.push_back(std::move(w));
      Expire(late);
      continue;
    }
    if (!w.attempt.may_resend) {
      internal::MutexLock lock(&mu_);
      ++stats_.resends;
    }
    SendTo(client, std::move(w.command), std::move(w.attempt), left);
  }
}

void SentinelClient::Impl::Shutdown() {
  std::vector<Waiter> waiting;
  std::vector<std::shared_ptr<RedisClient>> clients;
  {
    internal::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    waiting = TakeWaitersLocked();
    if (primary_ != nullptr) clients.push_back(std::move(primary_));
    primary_ = nullptr;
    for (Retired& r : retired_) clients.push_back(std::move(r.client));
    retired_.clear();
  }
  changed_.notify_all();
  const bool on_monitor = monitor_.joinable() && monitor_.get_id() == std::this_thread::get_id();
  if (on_monitor) {
    // Destroyed from a callback the monitor thread ran: it ends when that callback returns.
    monitor_.detach();
  } else if (monitor_.joinable()) {
    monitor_.join();
  }
  for (Waiter& w : waiting) {
    std::move(w.attempt.done)(absl::UnavailableError(
        absl::StrCat("redis ", internal::AbslView(w.command.name()), ": client shut down")));
  }
  // Their pending commands fail with Unavailable; OnReply() resends nothing once stopping_.
  clients.clear();
  if (!on_monitor) {
    queries_.clear();
    subscribers_.clear();
  }
}

std::vector<std::shared_ptr<RedisClient>> SentinelClient::Impl::Primaries() const {
  internal::MutexLock lock(&mu_);
  if (primary_ == nullptr) return {};
  return {primary_};
}

void SentinelClient::Impl::SetPrimaryListener(PrimaryListener listener) {
  internal::MutexLock lock(&listener_mu_);
  listener_ = std::move(listener);
  if (!listener_) return;
  // The primary known now; later ones are told as they are installed. One installed meanwhile
  // may be told twice: the listener's work (SCRIPT LOAD, CONFIG GET) is idempotent.
  for (const std::shared_ptr<RedisClient>& primary : Primaries()) listener_(primary);
}

std::string SentinelClient::Impl::PrimaryAddress() const {
  internal::MutexLock lock(&mu_);
  if (primary_ == nullptr || !primary_node_.has_value()) return "";
  return RedisNodeName(*primary_node_);
}

RedisClientStats SentinelClient::Impl::RouterStats() const {
  std::vector<std::shared_ptr<RedisClient>> clients;
  RedisClientStats stats;
  {
    internal::MutexLock lock(&mu_);
    stats = closed_totals_;
    if (primary_ != nullptr) clients.push_back(primary_);
    for (const Retired& r : retired_) clients.push_back(r.client);
  }
  for (const auto& client : clients) AddAll(stats, client->Stats());
  return stats;
}

SentinelClientStats SentinelClient::Impl::Stats() const {
  internal::MutexLock lock(&mu_);
  return stats_;
}

absl::Status SentinelClient::Impl::WaitForConnection(milliseconds timeout) {
  const TimePoint deadline = Now() + timeout;
  while (true) {
    std::shared_ptr<RedisClient> client;
    {
      internal::MutexLock lock(&mu_);
      changed_.wait_until(mu_, deadline, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return primary_ != nullptr || last_error_final_ || stopping_;
      });
      if (stopping_) return absl::UnavailableError(absl::StrCat(describe_, ": shut down"));
      if (primary_ == nullptr) {
        // A copy of its own, not a share (see RedisClient's WaitForConnection()).
        if (last_error_final_) return {last_error_.code(), last_error_.message()};
        return absl::DeadlineExceededError(absl::StrCat(
            "redis-sentinel ", describe_, ": no primary named within ", timeout.count(), "ms",
            last_error_.ok() ? "" : "; last error: ", last_error_.message()));
      }
      client = primary_;
    }
    // In slices, so that a primary replaced meanwhile is noticed.
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Now());
    absl::Status ready =
        client->WaitForConnection(std::clamp(left, milliseconds(1), milliseconds(100)));
    if (ready.ok()) {
      internal::MutexLock lock(&mu_);
      if (primary_ == client) return absl::OkStatus();
      continue;
    }
    if (!absl::IsDeadlineExceeded(ready)) return ready;  // Refused credentials, or I/O thread.
    if (Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("redis-sentinel ", describe_, ": the primary ", client->Endpoint(),
                       " is not ready within ", timeout.count(), "ms: ", ready.message()));
    }
  }
}

}  // namespace sluice
