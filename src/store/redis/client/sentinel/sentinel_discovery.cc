// SentinelClient: discovery. The monitor thread asks the Sentinels for the primary, installs its
// client, expires commands that waited too long for one and closes replaced clients; each
// Sentinel's subscription to +switch-master tells it when a failover has happened.
//
// Why each Sentinel gets a subscriber client of its own rather than a subscriber mode of the
// primary's connection or a hand-written socket: a subscribed RESP2 connection takes no other
// command, so it cannot be the query connection; and everything else a subscriber needs (TLS,
// AUTH with a rotating password file, reconnecting with backoff) is what RedisConnection already
// does. So the connection gained two opt-in handshake steps instead (SUBSCRIBE last; ROLE for the
// primary) and one branch on read that hands published messages to a callback; the command path
// is otherwise unchanged.
#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "spdlog/spdlog.h"
#include <pthread.h>

#include "sluice/clock.h"

#include "src/store/redis/client/redis_error.h"
#include "src/store/redis/client/sentinel/sentinel_client_internal.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

// The channel on which a Sentinel announces a new primary: "<name> <old-ip> <old-port> <new-ip>
// <new-port>".
constexpr std::string_view kSwitchMaster = "+switch-master";
// How often replaced clients are checked for commands still pending.
constexpr milliseconds kRetireCheckInterval{100};
// A Sentinel answers from memory; its query gets at least this long even under a tight command
// timeout, as discovery is not on any request's path.
constexpr milliseconds kMinQueryTimeout{100};

TimePoint Now() { return Clock::Real().Now(); }

bool IsFinal(const absl::Status& s) { return absl::IsPermissionDenied(s) || absl::IsNotFound(s); }

}  // namespace

RedisClientOptions SentinelClient::Impl::SentinelOptions(const RedisNode& sentinel) const {
  const RedisEndpoint& deployment = options_.node.endpoint;
  RedisClientOptions o = options_.node;
  o.endpoint = deployment.ForNode(sentinel.host, sentinel.port);
  // The Sentinels' own credentials and TLS setting; they have no databases, and their little
  // traffic needs one connection.
  o.endpoint.username = deployment.sentinel_username;
  o.endpoint.password = deployment.sentinel_password;
  o.endpoint.password_file = deployment.sentinel_password_file;
  o.endpoint.db = 0;
  o.endpoint.tls = deployment.tls && deployment.sentinel_tls;
  // The store's WAIT is no business of the Sentinels: their connections are named without it in
  // logs (Redacted()), as before the client had endpoints of its own.
  std::erase_if(o.endpoint.other_params,
                [](const auto& param) { return param.first == "min_replicas"; });
  o.endpoint.connections = std::nullopt;
  o.connections = 1;
  o.io_threads = 1;
  o.require_primary = false;
  return o;
}

absl::Status SentinelClient::Impl::Start(const std::shared_ptr<internal::IoThread>& io_thread) {
  std::weak_ptr<Impl> weak = weak_from_this();
  io_thread_ = io_thread;
  for (const RedisNode& node : options_.node.endpoint.nodes) {
    RedisClientOptions query = SentinelOptions(node);
    absl::StatusOr<std::unique_ptr<RedisClient>> made = RedisClient::Create(query, io_thread);
    if (!made.ok()) {
      return {made.status().code(),
              absl::StrCat("sentinel ", RedisNodeName(node), ": ", made.status().message())};
    }
    queries_.push_back(*std::move(made));
    RedisClientOptions subscriber = std::move(query);
    subscriber.subscribe = {std::string(kSwitchMaster)};
    subscriber.on_message =
        [weak, first = std::make_shared<std::atomic<bool>>(true)](const RedisReply& message) {
          if (std::shared_ptr<Impl> self = weak.lock()) self->OnSentinelMessage(message, *first);
        };
    made = RedisClient::Create(subscriber, io_thread);
    if (!made.ok()) return made.status();
    subscribers_.push_back(*std::move(made));
  }
  monitor_ = std::thread([self = shared_from_this()] {
    pthread_setname_np(pthread_self(), "sluice-sentinel");
    self->Run();
  });
  return absl::OkStatus();
}

void SentinelClient::Impl::Run() {
  while (true) {
    Actions actions;
    {
      internal::MutexLock lock(&mu_);
      while (!stopping_ && !WorkDueLocked(Now())) changed_.wait_until(mu_, NextWakeLocked());
      if (stopping_) return;
      PlanLocked(Now(), actions);
    }
    // Without the lock: callbacks may run inline, and may call back in (or destroy the client,
    // which then stops this loop through stopping_).
    Expire(actions.expired);
    if (actions.install.has_value()) Install(*actions.install);
    if (actions.ask.has_value()) Ask(*actions.ask, actions.round);
    actions.close.clear();  // Closes their connections: they had nothing left to do.
  }
}

bool SentinelClient::Impl::WorkDueLocked(TimePoint now) const {
  return answer_.has_value() || waiters_earliest_ <= now || next_retire_check_ <= now ||
         (!asking_ && (discovery_due_ <= now || next_poll_ <= now));
}

SentinelClient::Impl::TimePoint SentinelClient::Impl::NextWakeLocked() const {
  // Never later than a poll interval away, so no wait is unbounded.
  TimePoint at = std::min({Now() + options_.poll_interval, waiters_earliest_, next_retire_check_});
  if (!asking_) at = std::min({at, discovery_due_, next_poll_});
  return at;
}

void SentinelClient::Impl::PlanLocked(TimePoint now, Actions& actions) {
  if (waiters_earliest_ <= now) {
    std::vector<Waiter> kept;
    waiters_earliest_ = TimePoint::max();
    for (Waiter& w : waiters_) {
      if (w.attempt.deadline <= now) {
        actions.expired.push_back(std::move(w));
      } else {
        waiters_earliest_ = std::min(waiters_earliest_, w.attempt.deadline);
        kept.push_back(std::move(w));
      }
    }
    waiters_.swap(kept);
    stats_.wait_timeouts += actions.expired.size();
  }
  if (answer_.has_value()) {
    const Answer answer = std::move(*answer_);
    answer_.reset();
    if (asking_ && answer.round == round_) HandleAnswerLocked(now, answer, actions);
  }
  if (!asking_ && (discovery_due_ <= now || next_poll_ <= now)) {
    asking_ = true;
    ++round_;
    asked_ = 0;
    round_errors_.clear();
    discovery_due_ = TimePoint::max();
    next_poll_ = now + options_.poll_interval;
    last_discovery_ = now;
    ++stats_.discoveries;
    actions.ask = order_[0];
    actions.round = round_;
  }
  if (next_retire_check_ <= now) {
    next_retire_check_ = TimePoint::max();
    std::vector<Retired> kept;
    for (Retired& r : retired_) {
      const RedisClientStats s = r.client->Stats();
      // Nobody else holds it (a Route() that copied it before the swap may still be sending),
      // and it has nothing queued or in flight.
      const bool done = s.in_flight == 0 && s.queued == 0 && r.client.use_count() == 1;
      if (done || now - r.since >= options_.retire_timeout) {
        internal::AddClientCounters(closed_totals_, s);
        actions.close.push_back(std::move(r.client));
      } else {
        kept.push_back(std::move(r));
      }
    }
    retired_.swap(kept);
    if (!retired_.empty()) next_retire_check_ = now + kRetireCheckInterval;
  }
}

void SentinelClient::Impl::HandleAnswerLocked(TimePoint now, const Answer& answer,
                                              Actions& actions) {
  absl::StatusOr<RedisNode> node = ParseAnswer(answer);
  if (node.ok()) {
    asking_ = false;
    // The Sentinel that answered is asked first next time (as Redis's client guidelines say).
    order_.erase(std::find(order_.begin(), order_.end(), answer.sentinel));
    order_.insert(order_.begin(), answer.sentinel);
    if (primary_ != nullptr && primary_node_ == *node) return;  // Nothing changed.
    actions.install = *std::move(node);
    return;
  }
  round_errors_.push_back(node.status());
  if (++asked_ < order_.size()) {
    actions.ask = order_[asked_];
    actions.round = round_;
    return;
  }
  // No Sentinel named the primary. Credentials refused and an unknown name need the operator;
  // anything else may pass (a Sentinel restarting, a network blip).
  asking_ = false;
  ++stats_.discovery_failures;
  const bool final = std::all_of(round_errors_.begin(), round_errors_.end(), IsFinal);
  std::vector<std::string> reasons;
  for (const absl::Status& e : round_errors_) reasons.emplace_back(e.message());
  last_error_ = absl::Status(
      final ? round_errors_[0].code() : absl::StatusCode::kUnavailable,
      absl::StrCat("redis-sentinel ", describe_, ": no Sentinel named primary ",
                   options_.node.endpoint.primary_name, ": ", absl::StrJoin(reasons, "; ")));
  last_error_final_ = final;
  if (primary_ == nullptr) {
    discovery_due_ = std::min(discovery_due_, now + options_.min_rediscovery_gap);
  }
  changed_.notify_all();  // WaitForConnection() may return the error.
  if (internal::LogPermit p = discovery_log_.Acquire(); p.log) {
    spdlog::warn("{}{}", internal::StdView(last_error_.message()),
                 internal::SuppressedNote(p.suppressed));
  }
}

absl::StatusOr<RedisNode> SentinelClient::Impl::ParseAnswer(const Answer& answer) const {
  const std::string who =
      absl::StrCat("sentinel ", RedisNodeName(options_.node.endpoint.nodes[answer.sentinel]));
  if (!answer.reply.ok()) {
    // Refused credentials show in the client's connection state; the command only saw "not
    // connected".
    const absl::Status state = queries_[answer.sentinel]->WaitForConnection(milliseconds(0));
    if (absl::IsPermissionDenied(state) || absl::IsInvalidArgument(state)) {
      return absl::PermissionDeniedError(absl::StrCat(who, ": ", state.message()));
    }
    return absl::UnavailableError(absl::StrCat(who, ": ", answer.reply.status().message()));
  }
  const RedisReply& r = *answer.reply;
  if (r.is_error()) {
    const std::string why = absl::StrCat(who, ": ", r.str());
    return IsAuthError(r) ? absl::PermissionDeniedError(why) : absl::UnavailableError(why);
  }
  if (r.is_nil()) {
    return absl::NotFoundError(
        absl::StrCat(who, " monitors no primary named ", options_.node.endpoint.primary_name));
  }
  int port = 0;
  if (!r.is_array() || r.elements().size() != 2 || r.elements()[0].str().empty() ||
      !absl::SimpleAtoi(r.elements()[1].str(), &port) || port <= 0 || port > 65535) {
    return absl::UnavailableError(absl::StrCat(who, ": unexpected reply ", r.DebugString()));
  }
  return RedisNode{.host = r.elements()[0].str(), .port = port};
}

void SentinelClient::Impl::Ask(size_t sentinel, uint64_t round) {
  RedisClient& client = *queries_[sentinel];
  // A Sentinel not connected yet gets the time to connect; a connected one answers at once.
  const bool ready = client.Stats().connections_ready > 0;
  const milliseconds timeout =
      std::max(kMinQueryTimeout, ready ? command_timeout_ : connect_timeout_ + command_timeout_);
  client.Send(
      RedisCommand::Format(
          {"SENTINEL", "get-master-addr-by-name", options_.node.endpoint.primary_name}),
      timeout, [weak = weak_from_this(), round, sentinel](absl::StatusOr<RedisReply> reply) {
        std::shared_ptr<Impl> self = weak.lock();
        if (self == nullptr) return;
        {
          internal::MutexLock lock(&self->mu_);
          self->answer_ = Answer{.round = round, .sentinel = sentinel, .reply = std::move(reply)};
        }
        self->changed_.notify_all();
      });
}

void SentinelClient::Impl::OnSentinelMessage(const RedisReply& message,
                                             std::atomic<bool>& first_subscription) {
  const std::vector<RedisReply>& e = message.elements();
  if (e.size() == 3 && e[0].str() == "subscribe") {
    // Subscribed again after the connection was lost: a failover announced meanwhile went
    // unheard. (The first subscription needs no discovery: the client starts with one, and what
    // happens between the two is caught when the old primary fails a command or the ROLE check.)
    const bool again = !first_subscription.exchange(false);
    internal::MutexLock lock(&mu_);
    ++stats_.subscriptions;
    if (again) RequestDiscoveryLocked(Now(), /*urgent=*/false);
    return;
  }
  if (e.size() != 3 || e[0].str() != "message" || e[1].str() != kSwitchMaster) return;
  const std::vector<absl::string_view> words = absl::StrSplit(e[2].str(), ' ');
  if (words.empty() || words[0] != internal::AbslView(options_.node.endpoint.primary_name)) return;
  internal::MutexLock lock(&mu_);
  ++stats_.switch_messages;
  RequestDiscoveryLocked(Now(), /*urgent=*/true);
}

void SentinelClient::Impl::RequestDiscovery(bool urgent) {
  internal::MutexLock lock(&mu_);
  RequestDiscoveryLocked(Now(), urgent);
}

void SentinelClient::Impl::RequestDiscoveryLocked(TimePoint now, bool urgent) {
  const TimePoint at = urgent ? now : std::max(now, last_discovery_ + options_.min_rediscovery_gap);
  if (at < discovery_due_) {
    discovery_due_ = at;
    changed_.notify_all();
  }
}

}  // namespace sluice
