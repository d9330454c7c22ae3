// ClusterClient: creation, shutdown, routing, redirects and retries. The slot map's refresh is in
// cluster_refresh.cc.
#include "src/store/redis/client/cluster/cluster_client.h"

#include <algorithm>
#include <exception>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include <boost/asio/post.hpp>

#include "sluice/clock.h"

#include "src/store/redis/client/cluster/cluster_client_internal.h"
#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/store/redis/client/redis_error.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

using internal::AbslView;
using std::chrono::milliseconds;

ClusterTimePoint Now() { return Clock::Real().Now(); }

// Less time than this left is not worth an attempt: it could only time out.
constexpr milliseconds kMinAttempt{1};

// The pipeline prefix of a command redirected by ASK.
const RedisCommand& AskingCommand() {
  static const RedisCommand* const asking = new RedisCommand(RedisCommand::Format({"ASKING"}));
  return *asking;
}

// The reply of the command itself within the reply of ASKING + command.
absl::StatusOr<RedisReply> UnwrapAsking(absl::StatusOr<RedisReply> reply, bool pipeline) {
  if (!reply.ok()) return reply;
  std::vector<RedisReply>& e = reply->mutable_elements();
  if (!reply->is_array() || e.size() < 2) {
    return absl::InternalError(
        absl::StrCat("redis ASKING: expected a pipeline reply, got ", reply->DebugString()));
  }
  if (!pipeline) return std::move(e[1]);
  e.erase(e.begin());
  return std::move(*reply);
}

// The reply that decides what to do with a command's answer: the first of a pipeline's.
const RedisReply& Decisive(const RedisReply& reply, bool pipeline) {
  if (pipeline && reply.is_array() && !reply.elements().empty()) return reply.elements()[0];
  return reply;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ClusterRouting

const std::shared_ptr<RedisClient>* ClusterRouting::ClientFor(int slot,
                                                              const RedisNode** address) const {
  int index = -1;
  if (slot >= 0) {
    index = slot_owner[static_cast<size_t>(slot)];
  } else {
    for (size_t i = 0; i < primaries.size() && index < 0; ++i) {
      if (primaries[i] != nullptr) index = static_cast<int>(i);
    }
  }
  if (index < 0 || primaries[static_cast<size_t>(index)] == nullptr) return nullptr;
  *address = &addresses[static_cast<size_t>(index)];
  return &primaries[static_cast<size_t>(index)];
}

// ---------------------------------------------------------------------------------------------
// ClusterClient::Impl: life cycle

ClusterClient::Impl::Impl(ClusterClientOptions options, RedisEndpoint endpoint,
                          const std::shared_ptr<internal::IoThread>& io_thread)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      io_thread_(io_thread),
      io_holder_(io_thread->context()),
      io_(*io_holder_) {}

ClusterClient::Impl::~Impl() = default;

void ClusterClient::Impl::Start() {
  boost::asio::post(io_, [this, self = shared_from_this()] {
    ArmPeriodicRefresh();
    MaybeRefresh();
  });
}

bool ClusterClient::Impl::OnClusterThread() const { return internal::IoThread::RunsOn(io_); }

void ClusterClient::Impl::Shutdown() {
  // Taken out under mu_ at once: no routing call finds a node client after this, and RetryLater()
  // arms no timer.
  std::shared_ptr<const ClusterRouting> routing;
  std::map<std::string, std::shared_ptr<RedisClient>> clients;
  {
    internal::MutexLock lock(&mu_);
    if (closing_) return;
    closing_ = true;
    closing_fast_.store(true, std::memory_order_relaxed);
    routing = std::move(routing_);
    clients.swap(clients_);
  }
  changed_.notify_all();
  // On the cluster thread: refresh timers and backoff timers are cancelled (a cancelled backoff
  // completes its command with Unavailable), and the clients only this thread touches are handed
  // over, to be destroyed with the others.
  std::promise<std::vector<std::shared_ptr<RedisClient>>> handed_over;
  std::future<std::vector<std::shared_ptr<RedisClient>>> own = handed_over.get_future();
  boost::asio::post(io_,
                    [this, self = shared_from_this(), promise = std::move(handed_over)]() mutable {
                      periodic_timer_.cancel();
                      gap_timer_.cancel();
                      {
                        internal::MutexLock lock(&mu_);
                        for (const auto& timer : retry_timers_) timer->cancel();
                      }
                      std::vector<std::shared_ptr<RedisClient>> clients = std::move(retired_);
                      retired_.clear();
                      if (asked_client_ != nullptr) clients.push_back(std::move(asked_client_));
                      promise.set_value(std::move(clients));
                    });
  if (OnClusterThread()) {
    // Destroyed from a callback: this thread cannot wait for itself. The node clients close (and
    // fail their commands) once the running handler returns; the handler above holds the Impl.
    return;
  }
  std::vector<std::shared_ptr<RedisClient>> thread_owned = own.get();
  // Off the thread, each node client's destructor returns once its pending commands have failed
  // (Unavailable); their callbacks see `closing_` and complete without resending.
  routing.reset();
  clients.clear();
  thread_owned.clear();
  // The cancelled backoffs: each completes its command, then leaves the list.
  internal::MutexLock lock(&mu_);
  changed_.wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return retry_timers_.empty(); });
}

absl::Status ClusterClient::Impl::AddSeedClient() {
  const RedisNode& seed = endpoint_.nodes.front();
  // A seed's id is not known before the first map: the first Install() replaces this client by
  // one that checks the id, if the seed is a primary.
  absl::StatusOr<std::unique_ptr<RedisClient>> made = MakeNodeClient(seed, /*node_id=*/"");
  if (!made.ok()) return made.status();
  internal::MutexLock lock(&mu_);
  clients_.emplace(RedisNodeName(seed), std::shared_ptr<RedisClient>(*std::move(made)));
  return absl::OkStatus();
}

RedisClientOptions ClusterClient::Impl::NodeOptions(const RedisNode& node,
                                                    const std::string& node_id) const {
  RedisClientOptions o = options_.node;
  o.endpoint = endpoint_.ForNode(node.host, node.port);
  // Every (re)connect checks with CLUSTER MYID that the server at the address is still the node
  // the map named, so that a server that took a dead node's address (a plain redis-server, or
  // another node, on a reused port) is never sent a slot's commands. Without an id (a seed before
  // the first map, or CLUSTER SLOTS of a server before Redis 4, which reports none) there is
  // nothing to check against, and the address is trusted as before.
  o.cluster_node_id = node_id;
  return o;
}

absl::StatusOr<std::unique_ptr<RedisClient>> ClusterClient::Impl::MakeNodeClient(
    const RedisNode& node, const std::string& node_id) const {
  std::shared_ptr<internal::IoThread> thread = io_thread_.lock();
  if (thread == nullptr) return absl::UnavailableError("redis cluster: client shut down");
  return RedisClient::Create(NodeOptions(node, node_id), std::move(thread));
}

std::string ClusterClient::Impl::KnownNodeId(const RedisNode& node) const {
  std::shared_ptr<const ClusterRouting> routing = Snapshot();
  if (routing == nullptr) return {};
  auto it = routing->node_ids.find(RedisNodeName(node));
  return it == routing->node_ids.end() ? std::string() : it->second;
}

std::shared_ptr<const ClusterRouting> ClusterClient::Impl::Snapshot() const {
  internal::MutexLock lock(&mu_);
  return routing_;
}

// ---------------------------------------------------------------------------------------------
// Routing

void ClusterClient::Impl::Dispatch(std::unique_ptr<ClusterCall> call,
                                   std::shared_ptr<RedisClient> target, bool asking) {
  if (closing_fast_.load(std::memory_order_relaxed)) {
    std::move(call->done)(absl::UnavailableError(
        absl::StrCat("redis ", AbslView(call->command.name()), ": cluster client shut down")));
    return;
  }
  if (target == nullptr) {
    // The slot's primary in the current map.
    std::shared_ptr<const ClusterRouting> routing = Snapshot();
    const RedisNode* address = nullptr;
    const std::shared_ptr<RedisClient>* client =
        routing != nullptr ? routing->ClientFor(call->slot, &address) : nullptr;
    if (client == nullptr) {
      // No map yet, or the slot has no primary (a failover is under way): wait for a refresh.
      RequestRefresh();
      absl::Status why = absl::UnavailableError(
          absl::StrCat("redis ", AbslView(call->command.name()), ": ",
                       routing == nullptr ? "the cluster's slot map is not known yet"
                                          : absl::StrCat("no primary serves slot ", call->slot),
                       " (", endpoint_.Redacted(), ")"));
      RetryLater(std::move(call), std::move(why));
      return;
    }
    target = *client;
    call->sent_host = address->host;
  }
  const milliseconds left = std::chrono::duration_cast<milliseconds>(call->deadline - Now());
  if (left < kMinAttempt) {
    // Earlier attempts, if any, were proven not to have run: the command never ran.
    std::move(call->done)(CommandTimeoutError(call->command.name(), call->timeout, /*sent=*/false));
    return;
  }
  RedisCommand attempt;
  if (asking) {
    attempt = RedisCommand::Prefixed(AskingCommand(), call->command);
  } else {
    attempt = call->command.Clone();
  }
  RedisClient& client = *target;
  client.Send(std::move(attempt), left,
              [weak = weak_from_this(), call = std::move(call),
               asking](absl::StatusOr<RedisReply> reply) mutable {
                const bool pipeline = call->command.is_pipeline();
                if (asking) reply = UnwrapAsking(std::move(reply), pipeline);
                std::shared_ptr<Impl> self = weak.lock();
                if (self == nullptr) {
                  std::move(call->done)(std::move(reply));
                  return;
                }
                self->OnReply(std::move(call), std::move(reply));
              });
}

void ClusterClient::Impl::OnReply(std::unique_ptr<ClusterCall> call,
                                  absl::StatusOr<RedisReply> reply) {
  if (!reply.ok()) {
    // Timed out or lost after being written (outcome unknown), or refused unsent: never resent
    // here. A node that cannot be reached may have been failed over: look at the map again.
    if (absl::IsUnavailable(reply.status())) RequestRefresh();
    std::move(call->done)(std::move(reply));
    return;
  }
  const RedisReply& decisive = Decisive(*reply, call->command.is_pipeline());
  const RedisErrorKind kind = ClassifyReply(decisive);
  switch (kind) {
    case RedisErrorKind::kMoved:
    case RedisErrorKind::kAsk: {
      // The node does not serve the slot (MOVED: for good; ASK: this key is already on the
      // slot's importing node). The command did not run: resend to the node named.
      std::optional<RedisRedirect> redirect = ParseRedirect(decisive.str());
      if (!redirect.has_value() || closing_fast_.load(std::memory_order_relaxed)) break;
      if (kind == RedisErrorKind::kMoved) {
        moved_.fetch_add(1, std::memory_order_relaxed);
        RequestRefresh();
      } else {
        asked_.fetch_add(1, std::memory_order_relaxed);
      }
      if (++call->redirects > options_.max_redirects) break;  // A loop: the reply stands.
      RedisNode node{.host = redirect->host.empty() ? call->sent_host : redirect->host,
                     .port = redirect->port};
      std::shared_ptr<RedisClient> target = ClientForNode(node);
      if (target == nullptr) break;
      call->sent_host = node.host;
      Dispatch(std::move(call), std::move(target), kind == RedisErrorKind::kAsk);
      return;
    }
    case RedisErrorKind::kClusterDown:
    case RedisErrorKind::kReadOnly:
    case RedisErrorKind::kLoading:
      // The slot's primary is failing over (CLUSTERDOWN), was demoted (READONLY) or restarted
      // (LOADING): the map may be stale.
      RequestRefresh();
      [[fallthrough]];
    case RedisErrorKind::kTryAgain:
      // Did not run; may succeed in a moment (TRYAGAIN: a multi-key command whose keys are split
      // by a slot migration).
      RetryLater(std::move(call), std::move(reply));
      return;
    default:
      break;
  }
  std::move(call->done)(std::move(reply));
}

void ClusterClient::Impl::RetryLater(std::unique_ptr<ClusterCall> call,
                                     absl::StatusOr<RedisReply> last) {
  const int doublings = std::min(call->retries, 20);
  const milliseconds delay =
      std::min(options_.retry_backoff_max, options_.retry_backoff_min * (int64_t{1} << doublings));
  const ClusterTimePoint at = Now() + delay;
  if (at + kMinAttempt > call->deadline) {
    // No room for another attempt: the last answer stands (the store maps an error reply to
    // Unavailable; its failure policy answers).
    std::move(call->done)(std::move(last));
    return;
  }
  ++call->retries;
  retries_.fetch_add(1, std::memory_order_relaxed);
  {
    internal::MutexLock lock(&mu_);
    if (!closing_) {
      // Armed and listed under mu_ before `closing_` can be set, so Shutdown() cancels it and
      // waits for it.
      auto timer = std::make_shared<boost::asio::steady_timer>(io_, at);
      retry_timers_.push_back(timer);
      timer->async_wait([this, self = shared_from_this(), timer,
                         call = std::move(call)](const boost::system::error_code&) mutable {
        // Fired or cancelled, on the cluster thread. Dispatch() completes the call with
        // Unavailable if the client is closing by now.
        Dispatch(std::move(call), nullptr, false);
        {
          internal::MutexLock lock(&mu_);
          std::erase(retry_timers_, timer);
        }
        changed_.notify_all();
      });
      return;
    }
  }
  std::move(call->done)(std::move(last));
}

std::shared_ptr<RedisClient> ClusterClient::Impl::ClientForNode(const RedisNode& node) {
  const std::string key = RedisNodeName(node);
  {
    internal::MutexLock lock(&mu_);
    if (closing_) return nullptr;
    auto it = clients_.find(key);
    if (it != clients_.end()) return it->second;
  }
  // A node the map does not know yet (a MOVED ahead of the refresh). Its client is made outside
  // mu_ (it starts a thread) and connects in the background; the command waits in its queue
  // within its deadline.
  // A MOVED names the node that serves the slot now, usually a replica just promoted: the map
  // knows its id, which the new client checks.
  absl::StatusOr<std::unique_ptr<RedisClient>> made = MakeNodeClient(node, KnownNodeId(node));
  if (!made.ok()) {
    internal::MutexLock lock(&mu_);
    last_error_ = made.status();
    return nullptr;
  }
  std::shared_ptr<RedisClient> mine = *std::move(made);
  std::shared_ptr<RedisClient> winner;
  {
    internal::MutexLock lock(&mu_);
    if (!closing_) winner = clients_.emplace(key, mine).first->second;
  }
  // If another thread made one first (or the client is closing), ours never had a command and
  // goes here, outside mu_: destroying it only closes its connection.
  return winner;
}

std::vector<std::shared_ptr<RedisClient>> ClusterClient::Impl::Primaries() const {
  std::shared_ptr<const ClusterRouting> routing = Snapshot();
  std::vector<std::shared_ptr<RedisClient>> out;
  if (routing == nullptr) return out;
  for (const auto& client : routing->primaries) {
    if (client != nullptr) out.push_back(client);
  }
  return out;
}

void ClusterClient::Impl::SetPrimaryListener(PrimaryListener listener) {
  const bool set = static_cast<bool>(listener);
  {
    internal::MutexLock lock(&listener_mu_);
    listener_ = std::move(listener);
  }
  if (!set) return;
  // The current primaries, on the cluster thread like later ones. A primary installed meanwhile
  // may be told twice; the listener's work (SCRIPT LOAD) is idempotent.
  internal::MutexLock lock(&mu_);
  if (closing_) return;
  boost::asio::post(io_, [this, self = shared_from_this()] { NotifyPrimaries(Primaries()); });
}

absl::Status ClusterClient::Impl::WaitForConnection(milliseconds timeout) {
  if (OnClusterThread()) {
    return absl::FailedPreconditionError(
        "redis cluster: WaitForConnection() called on the cluster client's thread");
  }
  const ClusterTimePoint deadline = Now() + timeout;
  std::shared_ptr<const ClusterRouting> routing;
  absl::Status last_error;
  for (bool done = false; !done;) {
    {
      internal::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return closing_ || (routing_ != nullptr && routing_->complete);
      };
      if (!ready()) {
        changed_.wait_for(mu_,
                          std::min<std::chrono::nanoseconds>(milliseconds(100), deadline - Now()));
      }
      if (closing_) return absl::UnavailableError("redis cluster: client shut down");
      done = ready() || Now() >= deadline;
      routing = routing_;
      last_error = last_error_;
    }
    // A map without every slot (a failover under way) needs another refresh; asking is
    // throttled by min_refresh_gap.
    if (!done) RequestRefresh();
  }
  if (routing == nullptr || !routing->complete) {
    return absl::DeadlineExceededError(absl::StrCat(
        "redis cluster ", endpoint_.Redacted(), ": no complete slot map within ", timeout.count(),
        "ms (", routing == nullptr ? 0 : routing->covered_slots, " of ", kClusterSlots,
        " slots served)", last_error.ok() ? "" : "; last error: ", last_error.message()));
  }
  for (const std::shared_ptr<RedisClient>& client : routing->primaries) {
    const auto left =
        std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(deadline - Now()));
    if (absl::Status ready = client->WaitForConnection(left); !ready.ok()) return ready;
  }
  return absl::OkStatus();
}

RedisClientStats ClusterClient::Impl::RouterStats() const {
  std::vector<std::shared_ptr<RedisClient>> clients;
  {
    internal::MutexLock lock(&mu_);
    for (const auto& [key, client] : clients_) clients.push_back(client);
  }
  RedisClientStats total;
  for (const auto& client : clients) {
    const RedisClientStats s = client->Stats();
    total.commands_sent += s.commands_sent;
    total.writes += s.writes;
    total.replies += s.replies;
    total.timeouts += s.timeouts;
    total.late_replies += s.late_replies;
    total.rejected += s.rejected;
    total.lost += s.lost;
    total.connects += s.connects;
    total.connect_failures += s.connect_failures;
    total.disconnects += s.disconnects;
    total.connections += s.connections;
    total.connections_ready += s.connections_ready;
    total.in_flight += s.in_flight;
    total.queued += s.queued;
  }
  return total;
}

ClusterClientStats ClusterClient::Impl::Stats() const {
  std::shared_ptr<const ClusterRouting> routing = Snapshot();
  return ClusterClientStats{
      .moved = moved_.load(std::memory_order_relaxed),
      .asked = asked_.load(std::memory_order_relaxed),
      .retries = retries_.load(std::memory_order_relaxed),
      .refreshes = refreshes_.load(std::memory_order_relaxed),
      .refresh_failures = refresh_failures_.load(std::memory_order_relaxed),
      .primaries = routing == nullptr ? 0 : static_cast<int>(routing->primaries.size()),
      .covered_slots = routing == nullptr ? 0 : routing->covered_slots,
  };
}

// ---------------------------------------------------------------------------------------------
// ClusterClient

absl::StatusOr<std::shared_ptr<ClusterClient>> ClusterClient::Create(
    const ClusterClientOptions& options) {
  const RedisEndpoint& endpoint = options.node.endpoint;
  if (endpoint.topology != RedisEndpoint::Topology::kCluster) {
    return absl::InvalidArgumentError("redis cluster: the URL is not redis-cluster://");
  }
  if (endpoint.nodes.empty())
    return absl::InvalidArgumentError("redis cluster: the URL has no hosts");
  if (options.max_redirects < 1 || options.refresh_interval.count() <= 0 ||
      options.min_refresh_gap.count() < 0 || options.retry_backoff_min.count() <= 0 ||
      options.retry_backoff_max < options.retry_backoff_min) {
    return absl::InvalidArgumentError(
        "redis cluster options: need max_redirects >= 1, refresh_interval > 0, "
        "min_refresh_gap >= 0 and 0 < retry_backoff_min <= retry_backoff_max");
  }
  ClusterClientOptions effective = options;
  // The endpoint's parameters are the operator's word, as for one server.
  if (endpoint.command_timeout) effective.node.command_timeout = *endpoint.command_timeout;
  if (endpoint.connect_timeout) effective.node.connect_timeout = *endpoint.connect_timeout;
  if (endpoint.connections) effective.node.connections = *endpoint.connections;
  std::shared_ptr<internal::IoThread> io_thread = internal::IoThread::Start("sluice-cluster");
  auto impl = std::make_shared<Impl>(std::move(effective), endpoint, io_thread);
  // The first seed's client is made now, so that options RedisClient refuses (timeouts, TLS
  // files, password_file) fail here; the first refresh asks it for the map.
  if (absl::Status seeded = impl->AddSeedClient(); !seeded.ok()) return seeded;
  impl->Start();
  return std::shared_ptr<ClusterClient>(new ClusterClient(std::move(io_thread), std::move(impl)));
}

ClusterClient::ClusterClient(std::shared_ptr<internal::IoThread> io_thread,
                             std::shared_ptr<Impl> impl)
    : io_thread_(std::move(io_thread)), impl_(std::move(impl)) {}

ClusterClient::~ClusterClient() {
  // Shutdown() throws only when the standard library's thread primitives fail (std::system_error,
  // std::future_error), which leaves no state to carry on from: say why, then end the process as
  // the escaping exception would have. The I/O thread is joined after it, as io_thread_ goes.
  try {
    impl_->Shutdown();
  } catch (const std::exception& e) {
    spdlog::critical("redis cluster: shutting down the client failed: {}", e.what());
    std::terminate();
  } catch (...) {
    spdlog::critical("redis cluster: shutting down the client failed");
    std::terminate();
  }
}

void ClusterClient::Route(RedisCommand command, std::string_view key, milliseconds timeout,
                          ReplyCallback done) {
  if (absl::Status valid = ValidateCommand(command, timeout); !valid.ok()) {
    std::move(done)(std::move(valid));
    return;
  }
  auto call = std::make_unique<ClusterCall>();
  call->slot = key.empty() ? -1 : ClusterHashSlot(key);
  call->deadline = Now() + timeout;
  call->timeout = timeout;
  call->command = std::move(command);
  call->done = std::move(done);
  impl_->Dispatch(std::move(call), nullptr, false);
}

std::vector<std::shared_ptr<RedisClient>> ClusterClient::Primaries() const {
  return impl_->Primaries();
}

absl::Status ClusterClient::WaitForConnection(milliseconds timeout) {
  return impl_->WaitForConnection(timeout);
}

void ClusterClient::SetPrimaryListener(PrimaryListener listener) {
  impl_->SetPrimaryListener(std::move(listener));
}

RedisClientStats ClusterClient::RouterStats() const { return impl_->RouterStats(); }

std::string ClusterClient::Describe() const { return impl_->Describe(); }

milliseconds ClusterClient::DefaultTimeout() const { return impl_->command_timeout(); }

ClusterClientStats ClusterClient::Stats() const { return impl_->Stats(); }

void ClusterClient::RefreshForTest() { impl_->RequestRefresh(); }

}  // namespace sluice
