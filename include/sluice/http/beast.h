// Boost.Beast adapter of the HTTP middleware.
//
// CheckBeastRequest() decides a Beast request asynchronously (the I/O thread never waits for
// Redis) and delivers the verdict on the connection's executor: directly when the store answered
// inline, else dispatched to it. The session then either runs its handler and adds the verdict's
// headers to the response with ApplyVerdictHeaders(), or sends MakeRejection().
//
// Example (inside a session, after reading `req_` from `stream_`):
//   sluice::http::CheckBeastRequest(
//       middleware_, stream_.get_executor(), req_, peer_,
//       [self = shared_from_this()](sluice::http::Verdict verdict) {
//         if (!verdict.passed()) {
//           return self->Write(sluice::http::MakeRejection(verdict, self->req_.version(),
//                                                          self->req_.keep_alive()));
//         }
//         auto res = self->Route(self->req_);
//         sluice::http::ApplyVerdictHeaders(verdict, res);
//         self->Write(std::move(res));
//       });
//
// Thread safety: as Middleware::DecideAsync().
#ifndef SLUICE_HTTP_BEAST_H_
#define SLUICE_HTTP_BEAST_H_

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "sluice/http/client_ip.h"
#include "sluice/http/middleware.h"
#include "sluice/http/request.h"

namespace sluice::http {

// What CheckBeastRequest() adds to the request's description.
struct BeastCheckOptions {
  // Decide by this policy (MiddlewareSpec::policies) alone, as a handler it is attached to: call
  // CheckBeastRequest() with it where the application has routed the request to that handler
  // (and, for the global rule and the route rules, once without it before routing). "" (the
  // default): the route rules and the global rule. See RequestView::policy.
  std::string_view policy{};
  // The identity the application has already verified, used instead of calling
  // MiddlewareOptions::authenticate. Not owned; need only live until CheckBeastRequest()
  // returns (the middleware copies what it keeps). Default: nullptr. See RequestView::principal.
  const Principal* principal = nullptr;
};

// BeastRequestView: a RequestView over a Beast request; the request must outlive it.
class BeastRequestView {
 public:
  template <class Body, class Fields>
  BeastRequestView(const boost::beast::http::request<Body, Fields>& request,
                   const boost::asio::ip::tcp::endpoint& peer,
                   const BeastCheckOptions& options = {})
      : peer_(FormatPeer(peer.address())) {
    for (const auto& field : request) {
      headers_.push_back(
          {.name = std::string_view(field.name_string().data(), field.name_string().size()),
           .value = std::string_view(field.value().data(), field.value().size())});
    }
    const std::string_view target(request.target().data(), request.target().size());
    const std::string_view method(request.method_string().data(), request.method_string().size());
    // Beast has no router: the application routes on the target as sent, so a target that a
    // router could read as another path than the rules do is refused. (An absolute-form target
    // keeps its scheme and authority here; the rules match its path.)
    view_ = RequestView{.method = method,
                        .path = target.substr(0, target.find_first_of("?#")),
                        .route_template = {},
                        .headers = std::span<const HeaderField>(headers_.data(), headers_.size()),
                        .peer_address = peer_,
                        .refuse_ambiguous_path = true,
                        .policy = options.policy,
                        .principal = options.principal};
  }
  BeastRequestView(const BeastRequestView&) = delete;
  BeastRequestView& operator=(const BeastRequestView&) = delete;
  ~BeastRequestView() = default;

  const RequestView& view() const { return view_; }

  // Returns the address as text. IPv4 goes through IpAddress::ToString(), the one IPv4 printer,
  // which avoids inet_ntop's snprintf (it shows in request-path profiles).
  static std::string FormatPeer(const boost::asio::ip::address& address) {
    if (!address.is_v4()) return address.to_string();
    const boost::asio::ip::address_v4::bytes_type bytes = address.to_v4().to_bytes();
    IpAddress ip;
    std::copy(bytes.begin(), bytes.end(), ip.bytes.begin());
    return ip.ToString();
  }

 private:
  // Inline for typical requests: no allocation on the request path.
  absl::InlinedVector<HeaderField, 16> headers_;
  std::string peer_;
  RequestView view_;
};

namespace internal {

// Hands a verdict to whichever side is second: the caller of CheckBeastRequest() once
// DecideAsync() has returned, or the store's callback. Exactly one of them delivers it. The
// executor (type-erased, costly to copy) is stored only when the verdict is late.
template <class Executor, class Done>
struct BeastHandoff {
  enum State : int { kPending = 0, kVerdictReady = 1, kCallerReturned = 2 };

  explicit BeastHandoff(Done&& d) : done(std::move(d)) {}

  Done done;
  std::optional<Verdict> verdict;
  std::optional<Executor> executor;
  std::atomic<int> state{kPending};
};

}  // namespace internal

// CheckBeastRequest()
//
// Decides `request` from `peer` and calls `done(Verdict)` exactly once, on `executor`: directly,
// before this returns, when the verdict is ready by then (the memory store, or no limit applies),
// which requires calling this from `executor`, as a session's read handler is; otherwise (the Redis
// store completes on its I/O thread) through boost::asio::dispatch(executor, ...). `request` need
// only live until this returns. `options` names a policy attached to the handler, or an identity
// the application verified already (BeastCheckOptions).
template <class Executor, class Body, class Fields, class Done>
void CheckBeastRequest(Middleware& middleware, const Executor& executor,
                       const boost::beast::http::request<Body, Fields>& request,
                       const boost::asio::ip::tcp::endpoint& peer, Done&& done,
                       const BeastCheckOptions& options = {}) {
  if (middleware.store_answers_inline()) {
    // The verdict is ready at once: no hand-off state, no executor.
    const BeastRequestView view(request, peer, options);
    std::forward<Done>(done)(middleware.Decide(view.view()));
    return;
  }
  using Handoff = internal::BeastHandoff<Executor, std::decay_t<Done>>;
  auto handoff = std::make_shared<Handoff>(std::forward<Done>(done));
  {
    BeastRequestView view(request, peer, options);
    middleware.DecideAsync(view.view(), [handoff](Verdict&& verdict) {
      handoff->verdict = std::move(verdict);
      int expected = Handoff::kPending;
      if (handoff->state.compare_exchange_strong(expected, Handoff::kVerdictReady,
                                                 std::memory_order_acq_rel)) {
        return;  // The caller is still in CheckBeastRequest() and delivers it.
      }
      // The caller has returned: the verdict is late and belongs on the executor.
      boost::asio::dispatch(*handoff->executor,
                            [handoff] { std::move(handoff->done)(*std::move(handoff->verdict)); });
    });
  }
  // Ready already: deliver it here, with no executor hop (a type-erased dispatch costs more than
  // the whole decision).
  if (handoff->state.load(std::memory_order_acquire) != Handoff::kVerdictReady) {
    handoff->executor.emplace(executor);
    int expected = Handoff::kPending;
    if (handoff->state.compare_exchange_strong(expected, Handoff::kCallerReturned,
                                               std::memory_order_acq_rel)) {
      return;  // The store's callback delivers it.
    }
  }
  std::move(handoff->done)(*std::move(handoff->verdict));
}

// ApplyVerdictHeaders()
//
// Adds the headers of a passed verdict (RateLimit-Policy, RateLimit, ...) to `response`. They are
// appended (Beast's insert(), not set(), which first searches for and erases a field of the same
// name): a response should not carry RateLimit headers of its own. They go in as
// `field::unknown` with their own text: none of them is a field Beast knows by enum, and this
// skips Beast's name lookup on every response (Beast finds fields by their text either way).
template <class Body, class Fields>
void ApplyVerdictHeaders(const Verdict& verdict,
                         boost::beast::http::response<Body, Fields>& response) {
  for (const ResponseHeader& header : verdict.headers) {
    response.insert(boost::beast::http::field::unknown, header.name, header.value);
  }
}

// MakeRejection()
//
// Returns the complete response of a rejected verdict (status, headers, content type, body),
// prepared for HTTP `version` and `keep_alive`.
boost::beast::http::response<boost::beast::http::string_body> MakeRejection(const Verdict& verdict,
                                                                            unsigned version,
                                                                            bool keep_alive);

}  // namespace sluice::http

#endif  // SLUICE_HTTP_BEAST_H_
