#include "src/store/redis/client/redis_client.h"

#include <atomic>
#include <condition_variable>
#include <future>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <openssl/ssl.h>

#include "src/store/redis/client/io_thread.h"
#include "src/store/redis/client/redis_connection.h"
#include "src/store/redis/client/redis_error.h"
#include "src/util/mutex.h"
#include "src/util/strings.h"

namespace sluice {

// ---------------------------------------------------------------------------------------------
// RedisClient::Impl: the connections, the I/O threads they run on (the client's own, or one shared
// with the other clients of a router), and the connection state that WaitForConnection() watches.

namespace {

absl::Status ValidateOptions(const RedisClientOptions& o) {
  auto invalid = [](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis client options: ", internal::AbslView(what)));
  };
  if (o.endpoint.topology != RedisEndpoint::Topology::kServer)
    return invalid("url is not a redis:// URL");
  if (o.endpoint.host.empty()) return invalid("url has no host");
  if (o.command_timeout.count() <= 0) return invalid("command_timeout must be positive");
  if (o.connect_timeout.count() <= 0) return invalid("connect_timeout must be positive");
  if (o.stall_timeout.count() <= 0) return invalid("stall_timeout must be positive");
  if (o.backoff_min.count() <= 0 || o.backoff_max < o.backoff_min) {
    return invalid("backoff needs 0 < backoff_min <= backoff_max");
  }
  if (o.connections < 1 || o.connections > RedisEndpoint::kMaxConnections) {
    return invalid(
        absl::StrCat("connections must be in [1, ", RedisEndpoint::kMaxConnections, "]"));
  }
  if (o.io_threads < 1 || o.io_threads > o.connections) {
    return invalid("io_threads must be in [1, connections]");
  }
  if (o.max_queued_commands < 1) return invalid("max_queued_commands must be positive");
  if (o.subscribe.empty() == static_cast<bool>(o.on_message)) {
    return invalid("subscribe and on_message must be given together");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeTlsContext(
    const RedisEndpoint& endpoint) {
  namespace ssl = boost::asio::ssl;
  auto fail = [](std::string_view what, const boost::system::error_code& ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis TLS: ", internal::AbslView(what), " (", ec.message(), ")"));
  };
  std::unique_ptr<ssl::context> ctx;
  try {
    ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  } catch (const boost::system::system_error& e) {
    return fail("cannot create a TLS context", e.code());
  }
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  if (endpoint.tls_verify) {
    ctx->set_verify_mode(ssl::verify_peer, ec);
    if (!endpoint.tls_ca_file.empty()) {
      if (ctx->load_verify_file(endpoint.tls_ca_file, ec); ec) {
        return fail(absl::StrCat("cannot load tls_ca_file ", endpoint.tls_ca_file), ec);
      }
    } else if (ctx->set_default_verify_paths(ec); ec) {
      return fail("cannot load the system CA certificates", ec);
    }
  } else {
    ctx->set_verify_mode(ssl::verify_none, ec);
  }
  if (!endpoint.tls_cert_file.empty()) {
    if (ctx->use_certificate_chain_file(endpoint.tls_cert_file, ec); ec) {
      return fail(absl::StrCat("cannot load tls_cert_file ", endpoint.tls_cert_file), ec);
    }
    if (ctx->use_private_key_file(endpoint.tls_key_file, ssl::context::pem, ec); ec) {
      return fail(absl::StrCat("cannot load tls_key_file ", endpoint.tls_key_file), ec);
    }
  }
  return ctx;
}

}  // namespace

class RedisClient::Impl final : public internal::ConnectionObserver,
                                public std::enable_shared_from_this<Impl> {
 public:
  explicit Impl(internal::ConnectionConfig config, std::string endpoint)
      : config_(std::move(config)), endpoint_(std::move(endpoint)) {}

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() override = default;

  // Runs the connections on `threads`, spread round-robin.
  void Start(const RedisClientOptions& options,
             const std::vector<std::shared_ptr<internal::IoThread>>& threads) {
    for (const auto& thread : threads) contexts_.push_back(thread->context());
    for (int i = 0; i < options.connections; ++i) {
      connections_.push_back(std::make_shared<internal::RedisConnection>(
          contexts_[static_cast<size_t>(i) % contexts_.size()], config_, *this));
    }
    for (auto& connection : connections_) connection->Start();
  }

  // Asks every connection to close and fail what it holds with Unavailable. Unless `wait` is
  // false, returns once every connection has done so. Until then each connection keeps the Impl
  // (its observer) alive; afterwards the connections only finish their cancelled handlers.
  void Shutdown(bool wait) {
    std::vector<std::future<void>> closed;
    for (auto& connection : connections_) {
      std::promise<void> promise;
      if (wait) closed.push_back(promise.get_future());
      connection->Shutdown([self = shared_from_this(), promise = std::move(promise)]() mutable {
        // Let go of the Impl first, so that the waiting destructor usually frees it itself.
        self.reset();
        promise.set_value();
      });
    }
    for (std::future<void>& f : closed) f.wait();
  }

  bool OnIoThread() const {
    for (const auto& io : contexts_) {
      if (internal::IoThread::RunsOn(*io)) return true;
    }
    return false;
  }

  internal::RedisConnection& PickConnection() {
    if (connections_.size() == 1) return *connections_[0];
    const size_t start = next_.fetch_add(1, std::memory_order_relaxed) % connections_.size();
    for (size_t i = 0; i < connections_.size(); ++i) {
      internal::RedisConnection& c = *connections_[(start + i) % connections_.size()];
      if (c.ready()) return c;
    }
    return *connections_[start];
  }

  void OnConnectionReady() override {
    {
      internal::MutexLock lock(&mu_);
      ++ready_;
      last_error_fatal_ = false;
    }
    changed_.notify_all();
  }

  void OnConnectionDown(const absl::Status& error, bool was_ready) override {
    {
      internal::MutexLock lock(&mu_);
      if (was_ready) --ready_;
      last_error_ = error;
      // Refusals that retrying will not fix until someone changes the configuration.
      last_error_fatal_ =
          !was_ready && (absl::IsPermissionDenied(error) || absl::IsInvalidArgument(error));
    }
    changed_.notify_all();
  }

  absl::Status WaitForConnection(std::chrono::milliseconds timeout) {
    internal::MutexLock lock(&mu_);
    changed_.wait_for(mu_, timeout, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ready_ > 0 || last_error_fatal_;
    });
    if (ready_ > 0) return absl::OkStatus();
    // A copy of its own, not a share of last_error_'s: Debian's Abseil is not built for TSan, so
    // the last release of a shared Status, inside libabsl_status, would look like a race with
    // the caller's reads of its message.
    if (last_error_fatal_) return {last_error_.code(), last_error_.message()};
    return absl::DeadlineExceededError(
        absl::StrCat("redis ", config_.host_port, ": no connection within ", timeout.count(), "ms",
                     last_error_.ok() ? "" : "; last error: ", last_error_.message()));
  }

  RedisClientStats Stats() const {
    RedisClientStats stats;
    for (const auto& connection : connections_) connection->AddStats(stats);
    return stats;
  }

  const std::string& endpoint() const { return endpoint_; }
  const std::string& cluster_node_id() const { return config_.cluster_node_id; }
  std::chrono::milliseconds command_timeout() const { return config_.command_timeout; }

 private:
  internal::ConnectionConfig config_;
  const std::string endpoint_;
  // Kept alive (not running: the RedisClient holds the threads) for the connections' sockets and
  // timers; declared first, destroyed last.
  std::vector<std::shared_ptr<boost::asio::io_context>> contexts_;
  std::vector<std::shared_ptr<internal::RedisConnection>> connections_;
  std::atomic<size_t> next_{0};

  internal::Mutex mu_;
  std::condition_variable_any changed_;
  int ready_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  bool last_error_fatal_ ABSL_GUARDED_BY(mu_) = false;
};

// ---------------------------------------------------------------------------------------------
// RedisClient

absl::StatusOr<std::unique_ptr<RedisClient>> RedisClient::Create(
    const RedisClientOptions& options) {
  return Create(options, nullptr);
}

absl::StatusOr<std::unique_ptr<RedisClient>> RedisClient::Create(
    const RedisClientOptions& options, std::shared_ptr<internal::IoThread> io_thread) {
  RedisClientOptions o = options;
  if (io_thread != nullptr) o.io_threads = 1;
  if (o.endpoint.command_timeout) o.command_timeout = *o.endpoint.command_timeout;
  if (o.endpoint.connect_timeout) o.connect_timeout = *o.endpoint.connect_timeout;
  if (o.endpoint.connections) o.connections = *o.endpoint.connections;
  o.io_threads = std::min(o.io_threads, o.connections);
  if (absl::Status valid = ValidateOptions(o); !valid.ok()) return valid;
  if (!o.endpoint.password_file.empty()) {
    // Checked now so that a typo fails at start-up; re-read on every connect for rotation.
    if (absl::StatusOr<std::string> pw = internal::ReadPasswordFile(o.endpoint.password_file);
        !pw.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("redis client options: ", pw.status().message()));
    }
  }
  std::shared_ptr<boost::asio::ssl::context> tls_context;
  if (o.endpoint.tls) {
    absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> made = MakeTlsContext(o.endpoint);
    if (!made.ok()) return made.status();
    tls_context = *std::move(made);
  }
  internal::ConnectionConfig config{
      .endpoint = o.endpoint,
      .host_port = o.endpoint.HostPort(),
      .command_timeout = o.command_timeout,
      .connect_timeout = o.connect_timeout,
      .backoff_min = o.backoff_min,
      .backoff_max = o.backoff_max,
      .stall_timeout = o.stall_timeout,
      .max_queued_commands = o.max_queued_commands,
      .client_name = o.client_name,
      .tls_context = std::move(tls_context),
      .require_primary = o.require_primary,
      .cluster_node_id = o.cluster_node_id,
      .subscribe = o.subscribe,
      .on_message = o.on_message,
  };
  std::vector<std::shared_ptr<internal::IoThread>> threads;
  if (io_thread != nullptr) {
    threads.push_back(std::move(io_thread));
  } else {
    for (int i = 0; i < o.io_threads; ++i) {
      threads.push_back(internal::IoThread::Start("sluice-redis"));
    }
  }
  auto impl = std::make_shared<Impl>(std::move(config), o.endpoint.Redacted());
  impl->Start(o, threads);
  return std::unique_ptr<RedisClient>(new RedisClient(std::move(threads), std::move(impl)));
}

RedisClient::RedisClient(std::vector<std::shared_ptr<internal::IoThread>> io_threads,
                         std::shared_ptr<Impl> impl)
    : io_threads_(std::move(io_threads)), impl_(std::move(impl)) {}

RedisClient::~RedisClient() {
  // On an I/O thread (destroyed from a callback) the connections cannot be waited for: they close
  // after this callback returns, and keep the Impl until then. Elsewhere, every pending command
  // has been failed once this returns, as the callers' state may go with the client.
  impl_->Shutdown(/*wait=*/!impl_->OnIoThread());
}

void RedisClient::Send(RedisCommand command, ReplyCallback done) {
  Send(std::move(command), impl_->command_timeout(), std::move(done));
}

void RedisClient::Send(RedisCommand command, std::chrono::milliseconds timeout,
                       ReplyCallback done) {
  if (absl::Status valid = ValidateCommand(command, timeout); !valid.ok()) {
    std::move(done)(std::move(valid));
    return;
  }
  impl_->PickConnection().Submit(std::move(command), timeout, std::move(done));
}

absl::StatusOr<RedisReply> RedisClient::SendSync(RedisCommand command,
                                                 std::optional<std::chrono::milliseconds> timeout) {
  if (impl_->OnIoThread()) {
    return absl::FailedPreconditionError("redis: SendSync() called on the client's I/O thread");
  }
  std::promise<absl::StatusOr<RedisReply>> promise;
  std::future<absl::StatusOr<RedisReply>> future = promise.get_future();
  Send(std::move(command), timeout.value_or(impl_->command_timeout()),
       [promise = std::move(promise)](absl::StatusOr<RedisReply> reply) mutable {
         promise.set_value(std::move(reply));
       });
  return future.get();
}

absl::Status RedisClient::WaitForConnection(std::chrono::milliseconds timeout) {
  if (impl_->OnIoThread()) {
    return absl::FailedPreconditionError(
        "redis: WaitForConnection() called on the client's I/O thread");
  }
  return impl_->WaitForConnection(timeout);
}

RedisClientStats RedisClient::Stats() const { return impl_->Stats(); }

std::vector<std::shared_ptr<RedisClient>> RedisClient::Primaries() const {
  std::shared_ptr<const RedisClient> self = weak_from_this().lock();
  if (self == nullptr) return {};
  return {std::const_pointer_cast<RedisClient>(std::move(self))};
}

std::chrono::milliseconds RedisClient::DefaultTimeout() const { return impl_->command_timeout(); }

const std::string& RedisClient::Endpoint() const { return impl_->endpoint(); }

const std::string& RedisClient::ClusterNodeId() const { return impl_->cluster_node_id(); }

}  // namespace sluice
