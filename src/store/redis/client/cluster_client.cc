// ClusterClient: creation, shutdown, routing, redirects and retries. The slot map's refresh is in
// cluster_refresh.cc.
#include "src/store/redis/client/cluster_client.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include <boost/asio/post.hpp>
#include <pthread.h>

#include "sluice/clock.h"

#include "src/store/redis/client/cluster_client_internal.h"
#include "src/store/redis/client/cluster_slot.h"
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

// The Impl whose thread this is, if any.
thread_local const void* current_cluster = nullptr;

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

const std::shared_ptr<RedisClient>* ClusterRouting::ClientFor(
    int slot, const StoreUrl::Node** address) const {
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

ClusterClient::Impl::Impl(ClusterClientOptions options, StoreUrl url)
    : options_(std::move(options)), url_(std::move(url)) {}

ClusterClient::Impl::~Impl() {
  if (thread_.joinable()) thread_.detach();  // Only when destroyed on its own thread.
}

void ClusterClient::Impl::Start() {
  guard_.emplace(io_.get_executor());
  // The thread holds the Impl, so that an Impl whose last owner goes away on this thread (from a
  // callback) outlives the io_context it is running.
  thread_ = std::thread([self = shared_from_this()] {
    current_cluster = self.get();
    pthread_setname_np(pthread_self(), "sluice-cluster");
    self->io_.run();
    current_cluster = nullptr;
  });
  boost::asio::post(io_, [this] {
    ArmPeriodicRefresh();
    MaybeRefresh();
  });
}

bool ClusterClient::Impl::OnClusterThread() const { return current_cluster == this; }

void ClusterClient::Impl::Shutdown() {
  {
    internal::MutexLock lock(&mu_);
    if (closing_) return;
    closing_ = true;
    closing_fast_.store(true, std::memory_order_relaxed);
  }
  changed_.notify_all();
  // Refresh timers are cancelled; backoff timers armed before `closing_` still fire (within their
  // short delay) and complete their commands with Unavailable.
  boost::asio::post(io_, [this] {
    periodic_timer_.cancel();
    gap_timer_.cancel();
    asked_client_.reset();
  });
  guard_.reset();
  if (OnClusterThread()) {
    thread_.detach();
  } else if (thread_.joinable()) {
    thread_.join();
  }
  // The thread is gone: nothing else destroys node clients now. Destroying them fails their
  // pending commands, whose callbacks see `closing_` and complete without resending.
  std::shared_ptr<const ClusterRouting> routing;
  std::map<std::string, std::shared_ptr<RedisClient>> clients;
  {
    internal::MutexLock lock(&mu_);
    routing = std::move(routing_);
    clients.swap(clients_);
  }
  routing.reset();
  clients.clear();
  retired_.clear();
  asked_client_.reset();
}

absl::Status ClusterClient::Impl::AddSeedClient() {
  const StoreUrl::Node& seed = url_.nodes.front();
  absl::StatusOr<std::unique_ptr<RedisClient>> made = RedisClient::Create(NodeOptions(seed));
  if (!made.ok()) return made.status();
  internal::MutexLock lock(&mu_);
  clients_.emplace(ClusterNodeKey(seed), std::shared_ptr<RedisClient>(*std::move(made)));
  return absl::OkStatus();
}

RedisClientOptions ClusterClient::Impl::NodeOptions(const StoreUrl::Node& node) const {
  RedisClientOptions o = options_.node;
  o.url = url_.ForNode(node.host, node.port);
  return o;
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
    const StoreUrl::Node* address = nullptr;
    const std::shared_ptr<RedisClient>* client =
        routing != nullptr ? routing->ClientFor(call->slot, &address) : nullptr;
    if (client == nullptr) {
      // No map yet, or the slot has no primary (a failover is under way): wait for a refresh.
      RequestRefresh();
      absl::Status why = absl::UnavailableError(
          absl::StrCat("redis ", AbslView(call->command.name()), ": ",
                       routing == nullptr ? "the cluster's slot map is not known yet"
                                          : absl::StrCat("no primary serves slot ", call->slot),
                       " (", url_.Redacted(), ")"));
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
      StoreUrl::Node node{.host = redirect->host.empty() ? call->sent_host : redirect->host,
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
      // Armed under mu_ before `closing_` can be set, so the thread runs it before it exits.
      auto timer = std::make_shared<boost::asio::steady_timer>(io_, at);
      timer->async_wait(
          [this, timer, call = std::move(call)](const boost::system::error_code&) mutable {
            // On the cluster thread, which keeps the Impl alive. Dispatch() completes the call
            // with Unavailable if the client is closing by now.
            Dispatch(std::move(call), nullptr, false);
          });
      return;
    }
  }
  std::move(call->done)(std::move(last));
}

std::shared_ptr<RedisClient> ClusterClient::Impl::ClientForNode(const StoreUrl::Node& node) {
  const std::string key = ClusterNodeKey(node);
  {
    internal::MutexLock lock(&mu_);
    if (closing_) return nullptr;
    auto it = clients_.find(key);
    if (it != clients_.end()) return it->second;
  }
  // A node the map does not know yet (a MOVED ahead of the refresh). Its client is made outside
  // mu_ (it starts a thread) and connects in the background; the command waits in its queue
  // within its deadline.
  absl::StatusOr<std::unique_ptr<RedisClient>> made = RedisClient::Create(NodeOptions(node));
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
  // goes here, outside mu_: destroying it only joins its idle thread.
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
  boost::asio::post(io_, [this] { NotifyPrimaries(Primaries()); });
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
        "redis cluster ", url_.Redacted(), ": no complete slot map within ", timeout.count(),
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
  const StoreUrl& url = options.node.url;
  if (url.kind != StoreUrl::Kind::kRedisCluster) {
    return absl::InvalidArgumentError("redis cluster: the URL is not redis-cluster://");
  }
  if (url.nodes.empty()) return absl::InvalidArgumentError("redis cluster: the URL has no hosts");
  if (options.max_redirects < 1 || options.refresh_interval.count() <= 0 ||
      options.min_refresh_gap.count() < 0 || options.retry_backoff_min.count() <= 0 ||
      options.retry_backoff_max < options.retry_backoff_min) {
    return absl::InvalidArgumentError(
        "redis cluster options: need max_redirects >= 1, refresh_interval > 0, "
        "min_refresh_gap >= 0 and 0 < retry_backoff_min <= retry_backoff_max");
  }
  ClusterClientOptions effective = options;
  // The URL's parameters are the operator's word, as for one server.
  if (url.command_timeout) effective.node.command_timeout = *url.command_timeout;
  if (url.connect_timeout) effective.node.connect_timeout = *url.connect_timeout;
  if (url.connections) effective.node.connections = *url.connections;
  auto impl = std::make_shared<Impl>(std::move(effective), url);
  // The first seed's client is made now, so that options RedisClient refuses (timeouts, TLS
  // files, password_file) fail here; the first refresh asks it for the map.
  if (absl::Status seeded = impl->AddSeedClient(); !seeded.ok()) return seeded;
  impl->Start();
  return std::shared_ptr<ClusterClient>(new ClusterClient(std::move(impl)));
}

ClusterClient::ClusterClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

ClusterClient::~ClusterClient() {
  // Shutdown() throws only when a thread cannot be joined (std::system_error), which leaves no
  // state to carry on from: say why, then end the process as the escaping exception would have.
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
  if (command.empty()) {
    std::move(done)(absl::InvalidArgumentError("redis: empty command"));
    return;
  }
  if (timeout.count() <= 0) {
    std::move(done)(absl::InvalidArgumentError(
        absl::StrCat("redis ", AbslView(command.name()), ": timeout must be positive")));
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
