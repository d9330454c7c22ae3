// TestUpstream: the part every test upstream shares: an HTTP/1.1 server on a free loopback port,
// one thread per connection (Envoy keeps a few open), stopped by shutting its sockets down. A
// subclass answers a connection's requests in Serve().
//
// Thread safety: thread-safe. A subclass calls Stop() first in its destructor, so that no
// connection thread is still in Serve() while its members go.
#ifndef SLUICE_TESTS_ENVOY_TEST_UPSTREAM_H_
#define SLUICE_TESTS_ENVOY_TEST_UPSTREAM_H_

#include <set>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace sluice::testing {

class TestUpstream {
 public:
  TestUpstream(const TestUpstream&) = delete;
  TestUpstream& operator=(const TestUpstream&) = delete;
  virtual ~TestUpstream() { Stop(); }

  int port() const { return port_; }

 protected:
  TestUpstream() = default;

  // Listens on a free loopback port and starts accepting; Unavailable when it cannot listen.
  absl::Status Listen();
  // Wakes the threads blocked in accept() and read(), and joins them. Idempotent.
  void Stop();
  // Serves the requests of one connection until it closes (its thread ends with it). The socket
  // stays open until its descriptor is forgotten, so that Stop() never shuts down a reused one.
  virtual void Serve(boost::asio::ip::tcp::socket& socket) = 0;

  // Guards the subclass's state too. `stopping_` is set under it when Stop() begins, so that a
  // connection thread waiting on the subclass's state wakes to it.
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

 private:
  void AcceptLoop();
  // Serve(), then the connection's socket is forgotten.
  void ServeAndForget(boost::asio::ip::tcp::socket socket);  // Serve(), then forget its fd

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_{io_};
  int port_ = 0;
  std::thread accept_thread_;
  bool joined_ = false;
  std::set<int> open_fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_ENVOY_TEST_UPSTREAM_H_
