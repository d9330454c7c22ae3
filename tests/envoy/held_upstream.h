// HeldUpstream: an HTTP/1.1 upstream on a free loopback port that holds every request to /hold...
// until the test lets it answer, so that requests stay in flight through Envoy as long as a test
// needs them to. Any other path is answered at once. Every answer is 200.
//
// Example:
//   auto upstream = HeldUpstream::Start();
//   ... three requests to /hold through Envoy, on threads of their own ...
//   ASSERT_TRUE((*upstream)->WaitForHeld(3));
//   (*upstream)->Release(1);  // one of them answers
//
// Thread safety: thread-safe.
#ifndef SLUICE_TESTS_ENVOY_HELD_UPSTREAM_H_
#define SLUICE_TESTS_ENVOY_HELD_UPSTREAM_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include <boost/asio/ip/tcp.hpp>

#include "tests/envoy/test_upstream.h"

namespace sluice::testing {

class HeldUpstream final : public TestUpstream {
 public:
  static absl::StatusOr<std::unique_ptr<HeldUpstream>> Start();
  // Answers whatever it holds, closes every connection and joins its threads.
  ~HeldUpstream() override { Stop(); }

  // Requests held now; one whose connection was closed (its client went away) no longer counts.
  int held() const;
  // Waits until exactly `n` requests are held; false after `timeout_ms`.
  bool WaitForHeld(int n, int timeout_ms = 10'000) const;
  // Lets `n` of the held requests (or of the next ones) answer.
  void Release(int n);

 private:
  HeldUpstream() = default;
  void Serve(boost::asio::ip::tcp::socket& socket) override;
  // Holds the request read from `fd` until released (true) or until its peer closes (false).
  bool Hold(int fd);

  int held_ ABSL_GUARDED_BY(mu_) = 0;
  int releases_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_ENVOY_HELD_UPSTREAM_H_
