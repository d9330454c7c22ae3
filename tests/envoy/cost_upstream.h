// CostUpstream: an HTTP/1.1 upstream on a free loopback port standing in for a server that reports
// what each answer cost (an LLM's tokens) in a response header. It answers every request 200, with
// `x-tokens` set to the value of the request's `x-cost` header, so that the test picks each
// response's cost; a request without `x-cost` gets an answer without `x-tokens`.
//
// Example:
//   auto upstream = CostUpstream::Start();
//   ... GET / through Envoy with x-cost: 60: the answer carries x-tokens: 60 ...
//   EXPECT_EQ((*upstream)->answered(), 1);
//
// Thread safety: thread-safe.
#ifndef SLUICE_TESTS_ENVOY_COST_UPSTREAM_H_
#define SLUICE_TESTS_ENVOY_COST_UPSTREAM_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include <boost/asio/ip/tcp.hpp>

#include "tests/envoy/test_upstream.h"

namespace sluice::testing {

class CostUpstream final : public TestUpstream {
 public:
  // Listens on a free loopback port; Unavailable when it cannot.
  static absl::StatusOr<std::unique_ptr<CostUpstream>> Start();
  // Closes every connection and joins its threads.
  ~CostUpstream() override { Stop(); }

  // Requests answered so far: those Envoy let through.
  int answered() const;

 private:
  CostUpstream() = default;
  void Serve(boost::asio::ip::tcp::socket& socket) override;

  int answered_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_ENVOY_COST_UPSTREAM_H_
