// RedisConnection: connecting, handshake, loss and reconnection. Command I/O is in
// redis_connection_io.cc.
#include "src/store/redis/client/redis_connection.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <openssl/ssl.h>

#include "sluice/clock.h"

#include "src/store/redis/client/redis_error.h"
#include "src/util/strings.h"

namespace sluice::internal {
namespace {

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

absl::StatusOr<std::string> ReadPasswordFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  if (in) content << in.rdbuf();
  if (!in || in.bad()) {
    return absl::UnavailableError(absl::StrCat("cannot read password_file ", path));
  }
  std::string password = std::move(content).str();
  if (absl::EndsWith(password, "\n")) password.pop_back();
  if (absl::EndsWith(password, "\r")) password.pop_back();
  if (password.empty()) {
    return absl::UnavailableError(absl::StrCat("password_file ", path, " is empty"));
  }
  return password;
}

RedisConnection::RedisConnection(std::shared_ptr<boost::asio::io_context> io,
                                 ConnectionConfig config, ConnectionObserver& observer)
    : io_holder_(std::move(io)),
      io_(*io_holder_),
      config_(std::move(config)),
      observer_(observer),
      resolver_(io_),
      connect_timer_(io_),
      backoff_timer_(io_),
      deadline_timer_(io_) {}

RedisConnection::~RedisConnection() = default;

void RedisConnection::Start() {
  boost::asio::post(io_, [this, self = shared_from_this()] { StartConnect(); });
}

void RedisConnection::Shutdown(absl::AnyInvocable<void() &&> then) {
  boost::asio::post(io_, [this, self = shared_from_this(), then = std::move(then)]() mutable {
    DoShutdown();
    if (then) std::move(then)();
  });
}

RedisConnection::State RedisConnection::SetState(State state) {
  MutexLock lock(&mu_);
  const State old = state_;
  state_ = state;
  ready_.store(state == State::kReady, std::memory_order_relaxed);
  return old;
}

void RedisConnection::StartConnect() {
  if (closing_) return;
  const uint64_t epoch = ++epoch_;
  established_ = false;
  SetState(State::kConnecting);
  connect_timer_.expires_after(config_.connect_timeout);
  connect_timer_.async_wait(
      [this, self = shared_from_this(), epoch](const boost::system::error_code& ec) {
        if (ec || epoch != epoch_) return;
        FailConnection(absl::UnavailableError(absl::StrCat("redis ", config_.host_port,
                                                           ": connect timed out after ",
                                                           config_.connect_timeout.count(), "ms")));
      });
  boost::system::error_code ec;
  const boost::asio::ip::address address = boost::asio::ip::make_address(config_.endpoint.host, ec);
  if (!ec) {
    ConnectTo(epoch, {Tcp::endpoint(address, static_cast<uint16_t>(config_.endpoint.port))});
    return;
  }
  // Resolved on every attempt, so a failover that moves a DNS name is followed.
  resolver_.async_resolve(
      config_.endpoint.host, std::to_string(config_.endpoint.port),
      [this, self = shared_from_this(), epoch](const boost::system::error_code& ec,
                                               const Tcp::resolver::results_type& found) {
        if (epoch != epoch_) return;
        if (ec) {
          FailConnection(TransportError(config_.host_port, "resolve", ec));
          return;
        }
        std::vector<Tcp::endpoint> endpoints;
        for (const auto& entry : found) endpoints.push_back(entry.endpoint());
        ConnectTo(epoch, endpoints);
      });
}

void RedisConnection::ConnectTo(uint64_t epoch, const std::vector<Tcp::endpoint>& endpoints) {
  transport_ = std::make_shared<Transport>(io_);
  boost::asio::async_connect(
      transport_->socket, endpoints,
      [this, self = shared_from_this(), epoch, t = transport_](
          const boost::system::error_code& ec, const Tcp::endpoint&) { OnConnected(epoch, ec); });
}

void RedisConnection::OnConnected(uint64_t epoch, const boost::system::error_code& ec) {
  if (epoch != epoch_) return;
  if (ec) {
    FailConnection(TransportError(config_.host_port, "connect", ec));
    return;
  }
  boost::system::error_code ignored;
  // Pipelined commands must leave at once, not wait for Nagle's algorithm.
  transport_->socket.set_option(Tcp::no_delay(true), ignored);
  transport_->socket.set_option(boost::asio::socket_base::keep_alive(true), ignored);
  reader_ = std::make_unique<RedisReplyReader>();
  if (config_.tls_context == nullptr) {
    StartHandshake(epoch);
    return;
  }
  const std::string& name = config_.endpoint.tls_server_name.empty()
                                ? config_.endpoint.host
                                : config_.endpoint.tls_server_name;
  try {
    transport_->tls = std::make_unique<TlsStream>(transport_->socket, *config_.tls_context);
  } catch (const boost::system::system_error& e) {
    FailConnection(TransportError(config_.host_port, "TLS setup", e.code()));
    return;
  }
  // SNI carries names only; an IP address is verified against the certificate's IP SANs.
  if (!IsIpAddress(name)) SSL_set_tlsext_host_name(transport_->tls->native_handle(), name.c_str());
  if (config_.endpoint.tls_verify) {
    boost::system::error_code verify_ec;
    transport_->tls->set_verify_callback(boost::asio::ssl::host_name_verification(name), verify_ec);
    if (verify_ec) {
      FailConnection(TransportError(config_.host_port, "TLS setup", verify_ec));
      return;
    }
  }
  transport_->tls->async_handshake(
      boost::asio::ssl::stream_base::client, [this, self = shared_from_this(), epoch,
                                              t = transport_](const boost::system::error_code& ec) {
        if (epoch != epoch_) return;
        if (ec) {
          FailConnection(TransportError(config_.host_port, "TLS handshake", ec));
          return;
        }
        StartHandshake(epoch);
      });
}

// Pipelines AUTH, SELECT, CLIENT SETNAME, ROLE (require_primary), CLUSTER MYID (cluster_node_id)
// and SUBSCRIBE (subscriber mode) in one write, or a PING when there is nothing to set up, to prove
// the server answers; the connection is ready when the last reply arrives.
void RedisConnection::StartHandshake(uint64_t epoch) {
  std::string password = config_.endpoint.password;
  if (!config_.endpoint.password_file.empty()) {
    absl::StatusOr<std::string> from_file = ReadPasswordFile(config_.endpoint.password_file);
    if (!from_file.ok()) {
      FailConnection(from_file.status());
      return;
    }
    password = *std::move(from_file);
  }
  std::vector<std::pair<std::string_view, RedisCommand>> steps;
  if (!password.empty()) {
    steps.emplace_back("AUTH",
                       config_.endpoint.username.empty()
                           ? RedisCommand::Format({"AUTH", password})
                           : RedisCommand::Format({"AUTH", config_.endpoint.username, password}));
  }
  if (config_.endpoint.db != 0) {
    steps.emplace_back("SELECT",
                       RedisCommand::Format({"SELECT", std::to_string(config_.endpoint.db)}));
  }
  if (!config_.client_name.empty()) {
    steps.emplace_back("CLIENT SETNAME",
                       RedisCommand::Format({"CLIENT", "SETNAME", config_.client_name}));
  }
  if (config_.require_primary) steps.emplace_back("ROLE", RedisCommand::Format({"ROLE"}));
  if (!config_.cluster_node_id.empty()) {
    steps.emplace_back("CLUSTER MYID", RedisCommand::Format({"CLUSTER", "MYID"}));
  }
  // Last: once subscribed, the server accepts nothing but (un)subscriptions and PING.
  for (const std::string& channel : config_.subscribe) {
    steps.emplace_back("SUBSCRIBE", RedisCommand::Format({"SUBSCRIBE", channel}));
  }
  if (steps.empty()) steps.emplace_back("PING", RedisCommand::Format({"PING"}));
  for (size_t i = 0; i < steps.size(); ++i) {
    auto& [step, command] = steps[i];
    transport_->write_buf.append(command.resp());
    const bool last = i + 1 == steps.size();
    inflight_.push_back(Request{
        .command = std::move(command),
        .done =
            [this, epoch, step = step, last](absl::StatusOr<RedisReply> reply) {
              OnHandshakeReply(epoch, step, last, std::move(reply));
            },
    });
  }
  WriteBuffer(steps.size());
  StartRead();
}

void RedisConnection::OnHandshakeReply(uint64_t epoch, std::string_view step, bool last,
                                       absl::StatusOr<RedisReply> reply) {
  // A failed status means the attempt already failed, and whoever failed it handles that.
  if (epoch != epoch_ || !reply.ok()) return;
  if (reply->is_error()) {
    const std::string& text = reply->str();
    const std::string prefix = absl::StrCat("redis ", config_.host_port, ": ");
    if (IsTransientReplyError(ClassifyReply(*reply))) {
      // LOADING, BUSY, ...: the server is not ready for commands yet; try again after a backoff.
      FailConnection(
          absl::UnavailableError(absl::StrCat(prefix, AbslView(step), " failed: ", text)));
      return;
    }
    if (step == "AUTH") {
      FailConnection(absl::PermissionDeniedError(absl::StrCat(prefix, "AUTH failed: ", text)));
      return;
    }
    if (absl::StartsWith(text, "NOAUTH")) {
      FailConnection(absl::PermissionDeniedError(
          absl::StrCat(prefix, "the server requires a password (", text,
                       "); give one in the URL or with ?password_file=")));
      return;
    }
    if (step == "SELECT") {
      FailConnection(absl::InvalidArgumentError(
          absl::StrCat(prefix, "SELECT ", config_.endpoint.db, " failed: ", text)));
      return;
    }
    if (step == "ROLE" || step == "CLUSTER MYID" || step == "SUBSCRIBE") {
      // Without ROLE a replica cannot be told from the primary; without CLUSTER MYID a server
      // that took a Cluster node's address cannot be told from the node (a server without
      // cluster mode answers "ERR This instance has cluster support disabled": not the node);
      // without SUBSCRIBE nothing is heard. An ACL that refuses them needs fixing, so NOPERM is
      // final like a bad password.
      const std::string why = absl::StrCat(prefix, AbslView(step), " failed: ", text);
      FailConnection(IsAuthError(*reply) ? absl::PermissionDeniedError(why)
                                         : absl::UnavailableError(why));
      return;
    }
    // CLIENT SETNAME or PING refused by an ACL (NOPERM) still proves the server answers.
  } else if (step == "ROLE") {
    // ROLE's first element is "master", "slave" or "sentinel". Anything but a primary would
    // answer writes with READONLY (or not know them): this server is not the one to use, and
    // the attempt fails as a transient error, retried with backoff, as a failover may be under
    // way.
    const std::string role =
        reply->is_array() && !reply->elements().empty() ? reply->elements()[0].str() : "";
    if (role != "master") {
      FailConnection(absl::UnavailableError(absl::StrCat(
          "redis ", config_.host_port, ": ROLE says ", role.empty() ? reply->DebugString() : role,
          ", not master: not the primary")));
      return;
    }
  } else if (step == "CLUSTER MYID") {
    // Another node (or another cluster's) took this address since the slot map named it: its
    // data is not the slot's, so nothing may run there. Failed as a transient error, retried with
    // backoff; the commands refused meanwhile make the Cluster client refresh its map.
    const bool text = reply->is_string() || reply->is_status();
    if (!text || reply->str() != config_.cluster_node_id) {
      FailConnection(absl::UnavailableError(
          absl::StrCat("redis ", config_.host_port, ": CLUSTER MYID says ",
                       text ? reply->str() : reply->DebugString(), ", not ",
                       config_.cluster_node_id, ": not the cluster node the slot map names")));
      return;
    }
  } else if (step == "SUBSCRIBE" && config_.on_message) {
    config_.on_message(*reply);  // The confirmation: a (re)subscription, messages may be missed.
  }
  if (last) BecomeReady();
}

void RedisConnection::BecomeReady() {
  connect_timer_.cancel();
  established_ = true;
  if (down_since_.has_value()) {
    if (LogPermit p = config_.connection_log->Acquire(); p.log) {
      spdlog::info(
          "redis {}: connected again after {} failed attempts, {} ms without a connection{}",
          config_.endpoint.Redacted(), failed_attempts_,
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::Real().Now() - *down_since_)
              .count(),
          SuppressedNote(p.suppressed));
    }
    down_since_.reset();
  }
  failed_attempts_ = 0;
  SetState(State::kReady);
  connects_.fetch_add(1, std::memory_order_relaxed);
  observer_.OnConnectionReady();
  TryWrite();  // Whatever queued while connecting.
}

void RedisConnection::CloseTransport() {
  boost::system::error_code ignored;
  resolver_.cancel();
  connect_timer_.cancel();
  if (transport_ != nullptr) transport_->socket.close(ignored);
  transport_.reset();  // Pending handlers keep it alive until they run.
  reader_.reset();
  writing_ = false;
}

void RedisConnection::FailConnection(const absl::Status& error) {
  if (closing_) return;
  ++epoch_;
  CloseTransport();
  std::vector<Request> lost = inflight_.TakeAll();
  in_flight_.store(0, std::memory_order_relaxed);
  const bool was_ready = established_;
  established_ = false;
  std::vector<Request> unsent;
  if (was_ready) {
    // Retry at once: commands keep queueing (bounded by their deadlines) meanwhile.
    disconnects_.fetch_add(1, std::memory_order_relaxed);
    StartConnect();
  } else {
    connect_failures_.fetch_add(1, std::memory_order_relaxed);
    ++failed_attempts_;
    {
      MutexLock lock(&mu_);
      state_ = State::kBackoff;
      ready_.store(false, std::memory_order_relaxed);
      last_error_ = error;
      unsent.swap(submitted_);
      submitted_earliest_ = TimePoint::max();
      flush_pending_ = false;
    }
    ScheduleReconnect();
  }
  LogConnectionDown(error, was_ready);
  observer_.OnConnectionDown(error, was_ready);
  // Written commands may have run: they fail, never to be resent. Handshake steps (no timeout)
  // are not user commands and are not counted.
  for (Request& r : lost) {
    if (r.done && r.timeout.count() > 0) lost_.fetch_add(1, std::memory_order_relaxed);
  }
  FailAll(lost, [&](const Request& r) { return CommandLostError(r.command.name(), error); });
  rejected_.fetch_add(unsent.size(), std::memory_order_relaxed);
  FailAll(unsent, [&](const Request& r) {
    return NotConnectedError(r.command.name(), config_.host_port, error);
  });
}

// A lost connection is logged, and so is the first failed attempt of a series; the attempts after
// it are not (they retry with backoff, connect_failures counts them), until "connected again".
// The messages name the server by its redacted endpoint (a URL), never a password.
void RedisConnection::LogConnectionDown(const absl::Status& error, bool was_ready) {
  if (!down_since_.has_value()) down_since_ = Clock::Real().Now();
  if (!was_ready && failed_attempts_ != 1) return;
  if (LogPermit p = config_.connection_log->Acquire(); p.log) {
    spdlog::warn("redis {}: {}: {}; {}{}", config_.endpoint.Redacted(),
                 was_ready ? "connection lost" : "cannot connect", StdView(error.message()),
                 was_ready ? "reconnecting" : "retrying with backoff",
                 SuppressedNote(p.suppressed));
  }
}

void RedisConnection::ScheduleReconnect() {
  const int doublings = std::min(failed_attempts_ - 1, 20);
  const int64_t cap_ms = std::min<int64_t>(config_.backoff_max.count(),
                                           config_.backoff_min.count() * (int64_t{1} << doublings));
  const int64_t delay_ms = absl::Uniform<int64_t>(absl::IntervalClosed, rng_, 0, cap_ms);
  backoff_timer_.expires_after(std::chrono::milliseconds(delay_ms));
  backoff_timer_.async_wait(
      [this, self = shared_from_this(), epoch = epoch_](const boost::system::error_code& ec) {
        if (ec || epoch != epoch_ || closing_) return;
        StartConnect();
      });
}

void RedisConnection::DoShutdown() {
  if (closing_) return;
  closing_ = true;
  ++epoch_;
  CloseTransport();
  backoff_timer_.cancel();
  deadline_timer_.cancel();
  std::vector<Request> lost = inflight_.TakeAll();
  in_flight_.store(0, std::memory_order_relaxed);
  std::vector<Request> unsent;
  {
    MutexLock lock(&mu_);
    state_ = State::kClosed;
    ready_.store(false, std::memory_order_relaxed);
    unsent.swap(submitted_);
  }
  const absl::Status cause =
      absl::UnavailableError(absl::StrCat("redis ", config_.host_port, ": client shut down"));
  FailAll(lost, [&](const Request& r) { return CommandLostError(r.command.name(), cause); });
  FailAll(unsent, [&](const Request& r) {
    return absl::UnavailableError(
        absl::StrCat("redis ", AbslView(r.command.name()), ": client shut down"));
  });
}

}  // namespace sluice::internal
