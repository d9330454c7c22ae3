#include "src/net/tcp_listener.h"

#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include <sys/stat.h>

namespace sluice::net::internal {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Errors after which the listening socket will never accept again: it was closed, shut down
// (Linux wakes a pending accept with EINVAL) or is not a socket. Every other error concerns one
// connection or a shortage that passes, and is retried.
bool IsFatal(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category()) return false;
  const int e = ec.value();
  return e == EBADF || e == EINVAL || e == ENOTSOCK || e == EFAULT;
}

// The inode of the socket `fd` names, or 0 when it names none.
uint64_t SocketInode(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  return st.st_ino;
}

}  // namespace

TcpListener::TcpListener(asio::io_context& context, TcpListenerOptions options, NextContext next,
                         OnAccept on_accept, OpenConnections open_connections)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : Clock::Real()),
      next_(std::move(next)),
      on_accept_(std::move(on_accept)),
      open_connections_(std::move(open_connections)),
      acceptor_(context),
      timer_(context) {}

void TcpListener::Emit(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
    return;
  }
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
}

void TcpListener::Log(std::string_view line) {
  if (sluice::internal::LogPermit p = log_throttle_.Acquire(); p.log) {
    Emit(absl::StrCat(absl::string_view(line.data(), line.size()),
                      sluice::internal::SuppressedNote(p.suppressed)));
  }
}

absl::Status TcpListener::Listen() {
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(options_.address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat(options_.name, ": invalid listen address '", options_.address, "'"));
  }
  const tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(options_.name, ": cannot listen on ",
                                               options_.address, ":", options_.port, ": ",
                                               ec.message()));
  }
  port_.store(acceptor_.local_endpoint().port());
  listening_.store(true);
  Accept();
  return absl::OkStatus();
}

void TcpListener::Close() {
  listening_.store(false);
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  timer_.cancel();
}

void TcpListener::Accept() {
  acceptor_.async_accept(next_().get_executor(),
                         [this](const boost::system::error_code& ec, Socket socket) {
                           OnAccepted(ec, std::move(socket));
                         });
}

void TcpListener::OnAccepted(const boost::system::error_code& ec, Socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
  if (IsFatal(ec)) {
    fatal_errno_.store(ec.value());
    listening_.store(false);
    Emit(absl::StrCat(options_.name, ": the listening socket failed (", ec.message(),
                      "); no longer accepting connections"));
    return;
  }
  if (PauseAfter(ec)) return;
  if (!ec) {
    failing_since_us_.store(0);
    if (OverAddressCap(socket)) {
      const uint64_t rejected = rejected_per_address_.fetch_add(1) + 1;
      boost::system::error_code ignored;
      socket.close(ignored);
      Log(absl::StrCat(options_.name, ": ", options_.max_connections_per_address,
                       " connections open from one address, the cap; closing its new ones (",
                       rejected, " so far)"));
      Accept();
      return;
    }
    const bool at_cap = open_connections_() >= options_.max_connections;
    if (at_cap && options_.make_room && options_.make_room()) {
      const uint64_t closed = closed_idle_at_cap_.fetch_add(1) + 1;
      Log(absl::StrCat(options_.name, ": ", options_.max_connections,
                       " connections open, the cap; closing the longest-idle ones to make room (",
                       closed, " so far)"));
      accepted_.fetch_add(1);
      on_accept_(std::move(socket));
    } else if (at_cap) {
      // Accepted only to be closed: the client learns at once, and the backlog does not fill
      // with connections that would wait there for a slot. Counted first, so that a client
      // that sees the close also sees the count.
      const uint64_t rejected = rejected_over_cap_.fetch_add(1) + 1;
      boost::system::error_code ignored;
      socket.close(ignored);
      Log(absl::StrCat(options_.name, ": ", options_.max_connections,
                       " connections open, the cap; closing new connections (", rejected,
                       " so far)"));
    } else {
      accepted_.fetch_add(1);
      on_accept_(std::move(socket));
    }
  }
  Accept();
}

bool TcpListener::OverAddressCap(Socket& socket) {
  if (options_.max_connections_per_address == 0) return false;
  boost::system::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return false;  // Already gone: the owner finds out.
  const auto open = [](const Accepted& a) { return SocketInode(a.fd) == a.inode; };
  if (tracked_ >= sweep_at_) {
    // Forgets closed connections of every address, at most once per doubling of what is tracked.
    tracked_ = 0;
    for (auto it = by_address_.begin(); it != by_address_.end();) {
      std::erase_if(it->second, [&](const Accepted& a) { return !open(a); });
      tracked_ += it->second.size();
      if (it->second.empty()) {
        by_address_.erase(it++);
      } else {
        ++it;
      }
    }
    sweep_at_ = std::max<size_t>(1024, 2 * tracked_);
  }
  const asio::ip::address address = peer.address();
  std::string key;
  if (address.is_v4()) {
    const auto bytes = address.to_v4().to_bytes();
    key.assign(bytes.begin(), bytes.end());
  } else {
    const auto bytes = address.to_v6().to_bytes();
    key.assign(bytes.begin(), bytes.end());
  }
  std::vector<Accepted>& mine = by_address_[key];
  const size_t before = mine.size();
  std::erase_if(mine, [&](const Accepted& a) { return !open(a); });
  tracked_ -= before - mine.size();
  if (mine.size() >= options_.max_connections_per_address) return true;
  // A socket that is open cannot lose its descriptor to another before this returns.
  const int fd = socket.native_handle();
  mine.push_back({fd, SocketInode(fd)});
  ++tracked_;
  return false;
}

bool TcpListener::PauseAfter(const boost::system::error_code& ec) {
  const std::chrono::milliseconds wait = backoff_.After(ec);
  if (wait.count() == 0) return false;
  accept_failures_.fetch_add(1);
  int64_t expected = 0;
  failing_since_us_.compare_exchange_strong(expected, NowMicros());
  Log(absl::StrCat(options_.name, ": accept failed (", ec.message(), "); accepting again in ",
                   wait.count(), " ms (", backoff_.exhausted(), " such failures)"));
  timer_.expires_after(wait);
  timer_.async_wait([this](const boost::system::error_code& timer_ec) {
    if (!timer_ec && acceptor_.is_open()) Accept();
  });
  return true;
}

int64_t TcpListener::NowMicros() const {
  // Never 0, which means "not failing".
  return std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::microseconds>(clock_.Now().time_since_epoch())
             .count());
}

absl::Status TcpListener::Health() const {
  if (const int e = fatal_errno_.load(); e != 0) {
    return absl::UnavailableError(
        absl::StrCat(options_.name, " listener stopped accepting: ",
                     boost::system::error_code(e, boost::system::system_category()).message()));
  }
  if (!listening_.load()) {
    return absl::UnavailableError(absl::StrCat(options_.name, " listener is not listening"));
  }
  const int64_t since = failing_since_us_.load();
  if (since != 0) {
    const std::chrono::microseconds failing(NowMicros() - since);
    if (failing >= options_.unhealthy_after) {
      return absl::UnavailableError(absl::StrCat(
          options_.name, " listener cannot accept (out of descriptors) for ",
          std::chrono::duration_cast<std::chrono::milliseconds>(failing).count(), " ms"));
    }
  }
  return absl::OkStatus();
}

ListenerStats TcpListener::Stats() const {
  return {.accepted = accepted_.load(),
          .rejected_over_cap = rejected_over_cap_.load(),
          .closed_idle_at_cap = closed_idle_at_cap_.load(),
          .rejected_per_address = rejected_per_address_.load(),
          .accept_failures = accept_failures_.load()};
}

}  // namespace sluice::net::internal
