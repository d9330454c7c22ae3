// RequestView and Verdict: what the HTTP middleware reads from a request and what it answers.
//
// The middleware core knows no HTTP framework. An adapter (beast.h, httplib.h) describes each
// request as a RequestView, a set of non-owning views into the framework's own request object, and
// applies the Verdict: either the request passes (and `headers` go on the application's response),
// or it is rejected with a ready response (status, headers, body).
//
// Example:
//   std::vector<HeaderField> fields = {{"Authorization", "Bearer alice:premium"}};
//   RequestView view{.method = "GET", .path = "/api/orders/42", .headers = fields,
//                    .peer_address = "192.0.2.7"};
//   Verdict verdict = middleware.Decide(view);
//   if (!verdict.passed()) { /* send verdict.status, verdict.headers, verdict.body */ }
//
// Thread safety: value types.
#ifndef SLUICE_HTTP_REQUEST_H_
#define SLUICE_HTTP_REQUEST_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::http {

// One request header line. Names compare case-insensitively; a header sent on several lines is
// several fields, in the order received.
struct HeaderField {
  std::string_view name{};
  std::string_view value{};
};

// Who the application's authentication says a request is from.
struct Principal {
  // A stable user or client id; empty means "not authenticated" (the chain goes on).
  std::string id{};
  // The principal's tier; empty means IdentitySpec::authenticated_tier.
  std::string tier{};
};

// A request as the middleware sees it. Every view must stay valid until Decide() returns, or, for
// DecideAsync(), until it returns (the middleware copies what it keeps before then).
struct RequestView {
  // "GET", "POST", ... as sent. Rules compare it ignoring ASCII case (a router that does not
  // refuses it, but no spelling walks around a rule), and a GET rule matches HEAD too
  // (MiddlewareSpec::head_matches_get).
  std::string_view method{};
  // The path as the application's router matches it: "/api/orders/42". A query ("?...") or
  // fragment ("#...") is ignored, and so is the scheme and authority of an absolute-form target
  // ("http://host/api/orders"). Pass the form the router sees: cpp-httplib routes on the
  // percent-decoded path (httplib::Request::path), so its adapter passes that.
  std::string_view path{};
  // The route template the framework matched, e.g. "/api/orders/{id}", or "" when the framework has
  // none (then rules match `path` against their templates).
  std::string_view route_template{};
  std::span<const HeaderField> headers{};
  // The TCP peer's IP address as text ("192.0.2.7", "2001:db8::1", "::ffff:192.0.2.7"); "" when
  // unknown (e.g. a Unix socket).
  std::string_view peer_address{};
  // Refuse (400) a path that a router could read as another route than the rules do: dot
  // segments, encoded '/' or '\', backslashes, percent-encoded unreserved characters. For
  // frameworks whose application routes on the raw target (Beast, which has no router): set by
  // that adapter. A path a router cannot misread passes whatever this says.
  bool refuse_ambiguous_path = false;
  // The name of a policy (MiddlewareSpec::policies) to decide this request by, for a handler the
  // policy is attached to in code (httplib.h's Limited(), beast.h's CheckBeastRequest() options):
  // only that policy's limits apply, whatever the path and method, and the route rules and the
  // global rule are not consulted (the global rule applies where the adapter runs before routing,
  // as ASP.NET Core's GlobalLimiter does). "" (the default): match the rules by path. A name the
  // running config does not define limits nothing (Limited() refuses it when wiring).
  std::string_view policy{};
  // The identity the application has already verified (for instance in its own cpp-httplib
  // pre-routing handler), so that the middleware does not verify it again: when set, it replaces
  // MiddlewareOptions::authenticate, which is then not called. A non-empty `id` is the request's
  // identity ("user:<id>", tier `tier` or IdentitySpec::authenticated_tier); an empty one means
  // the application found no user, and the chain goes on to the API key and the client IP. Not
  // owned; valid as long as the other views. Default: nullptr (call `authenticate`).
  const Principal* principal = nullptr;

  // RequestView::Header()
  //
  // Returns the value of the first field named `name` (ASCII case-insensitive), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
};

// A header of a response the middleware builds.
struct ResponseHeader {
  std::string name{};
  std::string value{};

  friend bool operator==(const ResponseHeader&, const ResponseHeader&) = default;
};

// What to do with a request.
struct Verdict {
  enum class Outcome : uint8_t {
    // Run the application's handler and add `headers` to its response.
    kPass = 0,
    // Answer with `status`, `headers`, `content_type` and `body` instead of the handler.
    kReject = 1,
  };

  Outcome outcome = Outcome::kPass;
  // The rejection status (429, 503, ...); 0 when passed.
  int status = 0;
  // On a pass: the RateLimit headers to add to the application's response. On a rejection: every
  // header of the rejection except Content-Type.
  std::vector<ResponseHeader> headers{};
  // The rejection body's media type ("application/problem+json"); "" when passed.
  std::string content_type{};
  std::string body{};

  bool passed() const { return outcome == Outcome::kPass; }

  // Verdict::FindHeader()
  //
  // Returns the value of the header named `name` (ASCII case-insensitive), or nullptr.
  const std::string* FindHeader(std::string_view name) const;
};

// EqualsIgnoreAsciiCase()
//
// Returns whether `a` and `b` are equal ignoring the case of ASCII letters (header names).
bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b);

}  // namespace sluice::http

#endif  // SLUICE_HTTP_REQUEST_H_
