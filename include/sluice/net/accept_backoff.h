// AcceptBackoff: how long an accept loop waits after a failed accept, so that running out of file
// descriptors does not turn it into a busy loop.
//
// When accept() fails with EMFILE or ENFILE (no descriptor for the new connection), ENOBUFS or
// ENOMEM, the connection stays queued in the kernel's backlog, so accepting again at once fails
// again at once: the loop spins at 100 % CPU, starving the threads that would close connections
// and free descriptors. After such an error the loop waits, 5 ms at first and doubling up to
// 500 ms while the errors continue; a successful accept resets the wait. Other errors
// (ECONNABORTED: the client gave up while queued) concern one connection only and are retried at
// once.
//
// Example (Boost.Asio; the accept loop under BeastServer and sluiced's gRPC listener):
//   acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
//     if (ec == boost::asio::error::operation_aborted) return;
//     if (const std::chrono::milliseconds wait = backoff_.After(ec); wait.count() > 0) {
//       timer_.expires_after(wait);
//       timer_.async_wait([this](boost::system::error_code) { Accept(); });
//       return;
//     }
//     if (!ec) StartSession(std::move(socket));
//     Accept();
//   });
//
// Thread safety: not thread-safe; an accept loop runs one accept at a time.
#ifndef SLUICE_NET_ACCEPT_BACKOFF_H_
#define SLUICE_NET_ACCEPT_BACKOFF_H_

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include <boost/system/error_code.hpp>

namespace sluice::net {

// The counters of an accept loop (BeastServer, and sluiced's gRPC listener).
struct ListenerStats {
  // Connections handed to the server.
  uint64_t accepted = 0;
  // Connections closed at once because the cap of open connections was reached.
  uint64_t rejected_over_cap = 0;
  // Idle connections closed at the cap to make room for a new one.
  uint64_t closed_idle_at_cap = 0;
  // Connections closed at once because their address had `max_connections_per_address` open.
  uint64_t rejected_per_address = 0;
  // Accepts that failed for lack of descriptors or memory (each followed by a wait).
  uint64_t accept_failures = 0;
};

class AcceptBackoff {
 public:
  static constexpr std::chrono::milliseconds kFirstWait{5};
  static constexpr std::chrono::milliseconds kMaxWait{500};

  // AcceptBackoff::IsResourceExhaustion()
  //
  // Whether `ec` says the process or system ran out of something an accept needs.
  static bool IsResourceExhaustion(const boost::system::error_code& ec) {
    if (ec.category() != boost::system::system_category()) return false;
    const int e = ec.value();
    return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
  }

  // AcceptBackoff::After()
  //
  // Returns how long to wait before the next accept after one that ended with `ec`: zero after a
  // success (which resets the backoff) or an error about one connection, else the backoff.
  std::chrono::milliseconds After(const boost::system::error_code& ec) {
    if (!ec) {
      wait_ = std::chrono::milliseconds::zero();
      return wait_;
    }
    if (!IsResourceExhaustion(ec)) return std::chrono::milliseconds::zero();
    ++exhausted_;
    wait_ = wait_.count() == 0 ? kFirstWait : std::min(wait_ * 2, kMaxWait);
    return wait_;
  }

  // Accepts that failed for lack of a resource since the loop started.
  uint64_t exhausted() const { return exhausted_; }

 private:
  std::chrono::milliseconds wait_{0};
  uint64_t exhausted_ = 0;
};

}  // namespace sluice::net

#endif  // SLUICE_NET_ACCEPT_BACKOFF_H_
