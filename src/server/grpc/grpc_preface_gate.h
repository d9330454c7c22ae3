// PrefaceGate: holds each new gRPC connection until it sends its first bytes, then hands it on.
//
// sluiced accepts gRPC connections itself (TcpListener) and hands each to gRPC C++, which owns it
// from then on: nothing outside gRPC can close one of its connections to make room. A connection
// that sends nothing would then hold its slot under the cap until gRPC's idle timeout (5 minutes),
// so a client holding `max_connections` silent connections kept every new client out (issue 13's
// attack table: 252 of 1,008 probe calls refused). The gate keeps a connection until the client
// speaks (a gRPC client sends its HTTP/2 preface at once), so that at the cap the connection that
// has waited longest without a byte can be closed for the new one, as BeastServer does on HTTP,
// and a connection silent for `timeout` is closed. The bytes are left unread for gRPC.
//
// A client that sends the preface and then nothing is gRPC's, and its idle timeout applies.
//
// Thread safety: everything but timed_out() on the thread that runs `context` (the listener's).
#ifndef SLUICE_SERVER_GRPC_GRPC_PREFACE_GATE_H_
#define SLUICE_SERVER_GRPC_GRPC_PREFACE_GATE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "src/net/tcp_listener.h"

namespace sluice::server {

class PrefaceGate {
 public:
  using Socket = ::sluice::net::internal::TcpListener::Socket;
  // Receives each connection that has sent its first bytes, unread.
  using Pass = std::function<void(Socket)>;

  PrefaceGate(boost::asio::io_context& context, std::chrono::milliseconds timeout, Pass pass);
  PrefaceGate(const PrefaceGate&) = delete;
  PrefaceGate& operator=(const PrefaceGate&) = delete;
  ~PrefaceGate();

  // Holds `socket` (on `context`) until it is readable (passed on) or `timeout` passes (closed).
  void Hold(Socket socket);

  // Closes the connection that has waited longest without sending anything; false when none.
  bool CloseOldest();

  // Closes every connection held.
  void CloseAll();

  // Connections held now.
  size_t size() const { return held_.size(); }
  // Connections closed for sending nothing within `timeout`. Thread-safe.
  uint64_t timed_out() const { return timed_out_.load(std::memory_order_relaxed); }

 private:
  struct Held;
  using Position = std::list<std::shared_ptr<Held>>::iterator;
  void Release(const std::shared_ptr<Held>& held);

  boost::asio::io_context& context_;
  std::chrono::milliseconds timeout_;
  Pass pass_;
  std::list<std::shared_ptr<Held>> held_;  // Oldest first.
  std::atomic<uint64_t> timed_out_{0};
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_GRPC_PREFACE_GATE_H_
