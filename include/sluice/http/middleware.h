// Middleware: per-route, per-identity, per-tier rate limits for HTTP services.
//
// For each request the middleware picks the first route rule that matches (method and path
// template or prefix), resolves who is asking through a chain (the application's authentication
// callback, then an API key header, then the client IP, see client_ip.h), takes that identity's
// tier's limits of the global rule and of the route, and checks them all in one atomic Store
// CheckAll() call: the request passes only if every limit admits it, and only then is it counted.
// Counter keys are `{area}:{route template}:{tier}:{identity}:{policy}` (docs/middleware.md), so
// "/api/orders/42" and "/api/orders/43" share the counter of "/api/orders/{id}".
//
// A passed request gets RateLimit-Policy and RateLimit headers for its response (and optionally
// X-RateLimit-*); a rejected one gets a complete response: 429 (configurable) with Retry-After and
// an application/problem+json body (RFC 9457) listing `violated-policies`. When the store cannot
// decide, a failure policy (failure_policy.h) answers: the store's own, if it has one, then the
// middleware's, which answers as the config's `store_error` says (by default it limits locally,
// StoreErrorAction::kLocal). Those denials are 503, never 429: the client did nothing wrong. In
// dry-run mode nothing is ever rejected, but everything is decided, counted and reported in
// headers.
//
// Framework adapters: beast.h (Boost.Beast, async) and httplib.h (cpp-httplib, sync).
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(auto config, LoadMiddlewareConfig("rules.yaml"));
//   SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Middleware> middleware,
//                           Middleware::Create({.store = store.get(), .config = config}));
//   middleware->DecideAsync(view, [](Verdict verdict) { Respond(std::move(verdict)); });
//
// Thread safety: thread-safe. The config is an immutable snapshot, swapped atomically by
// SetConfig(); a request in flight finishes under the snapshot it started with.
#ifndef SLUICE_HTTP_MIDDLEWARE_H_
#define SLUICE_HTTP_MIDDLEWARE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "sluice/clock.h"
#include "sluice/failure_policy.h"
#include "sluice/http/middleware_config.h"
#include "sluice/http/request.h"
#include "sluice/store.h"

namespace sluice::http {

namespace internal {
class RequestCall;
}  // namespace internal

// Principal (who the application's authentication says a request is from) is in request.h.

// Why a request was rejected.
enum class RejectReason : uint8_t {
  // A limit was exceeded (over_limit_status, 429).
  kOverLimit = 0,
  // The store's failure policy denied it because the store was unavailable (unavailable_status).
  kStoreUnavailable = 1,
  // The store returned an error to the middleware (unavailable_status).
  kStoreError = 2,
};

// What the rejection hook is told. Views are valid during the hook only.
struct RejectInfo {
  RejectReason reason = RejectReason::kOverLimit;
  // The matched route rule's name, or "" when only the global rule applied.
  std::string_view rule{};
  std::string_view tier{};
  // "user:<id>", "key:<sha256 prefix>" or "ip:<address>".
  std::string_view identity{};
  // Names of the policies that refused the request (empty for kStoreError).
  std::vector<std::string_view> violated_policies{};
  // The Retry-After sent, in seconds.
  int64_t retry_after_seconds = 0;
  // The store's error, for kStoreError.
  absl::Status store_status{};
};

// Counters, per STYLE item 20 and after Envoy's local rate limit filter (values may be slightly
// outdated).
struct MiddlewareStats {
  // Requests at least one limit applied to.
  uint64_t enabled = 0;
  // Requests the middleware rejected (429 or 503). Never counted in dry-run mode.
  uint64_t enforced = 0;
  // Requests over a limit, rejected or (dry run) not.
  uint64_t over_limit = 0;
  // Requests within all their limits.
  uint64_t ok = 0;
  // Requests whose decision the store could not make: a store error, or an answer of the failure
  // policy (Decision::from_fallback).
  uint64_t error = 0;
  // Of those, requests decided by the local limiter of the middleware's failure policy
  // (StoreErrorAction::kLocal; FailureStats::local_decisions of its guard).
  uint64_t local_fallback = 0;
  // Requests refused with 400 for an ambiguous path (RequestView::refuse_ambiguous_path), before
  // any rule was matched.
  uint64_t ambiguous_path = 0;
};

struct MiddlewareOptions {
  // Where counters live. Not owned; must outlive the middleware and every call in flight.
  // Required. The middleware wraps it in a failure policy of its own (WithFailurePolicy()), its
  // guard, which answers a failed check as ResponseSpec::store_error says: kLocal on its local
  // limiter, reject and allow by handing the error to the middleware (kPropagate), which answers
  // 503 or lets the request through. It follows the config through SetConfig() and Reload().
  // Over a store that can wait on I/O (Redis) and is not a FailurePolicyStore, the guard also has
  // a circuit breaker, so that a hung store costs requests no deadline each once it has failed a
  // few times, and logs the failures (throttled). Over a store that answers inline (the memory
  // store), or a FailurePolicyStore (as OpenStore() returns: its policy, breaker and logs are
  // yours to choose), the guard has neither and only answers what reaches it.
  Store* store = nullptr;
  // The rules. Required.
  std::shared_ptr<const MiddlewareConfig> config{};
  // First resolver of the identity chain: the application's authentication. Returns nullopt (or an
  // empty id) for an unauthenticated request. Called on the calling thread, before the store, and
  // only when the request carries no RequestView::principal (an identity the application verified
  // already). Default: none.
  std::function<std::optional<Principal>(const RequestView&)> authenticate{};
  // Second resolver, for API keys (IdentitySpec::api_key_header): returns the tier of a valid key,
  // "" for a valid key of IdentitySpec::api_key_tier, or nullopt for an unknown key (the chain
  // then goes on to the client IP). Without it the API key header is ignored (a client could
  // otherwise pick a fresh bucket by sending a fresh key), unless IdentitySpec::api_key_unverified
  // says to trust it. Default: none.
  std::function<std::optional<std::string>(std::string_view api_key)> verify_api_key{};
  // Called on every rejection before it is returned, to adjust status, headers or body.
  // Default: none.
  std::function<void(const RejectInfo&, Verdict&)> on_reject{};
  // For X-RateLimit-Reset in epoch seconds, and the guard's breaker and local limiter
  // (StoreErrorAction::kLocal). Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
  // How the store-failure log lines of the middleware's own guard (see `store`) show identities
  // (user ids, client addresses: personal data) in counter keys. Default: kHashed, a stable short
  // hash per identity. A FailurePolicyStore passed as `store` logs as its own policy says.
  FailurePolicy::KeyIdentities log_key_identities = FailurePolicy::KeyIdentities::kHashed;
};

class Middleware {
 public:
  using VerdictCallback = absl::AnyInvocable<void(Verdict) &&>;

  // Middleware::Create()
  //
  // Returns a middleware, or InvalidArgument when `store` or `config` is missing. The middleware's
  // guard (see MiddlewareOptions::store) holds a local limiter (a memory store of at most 64 MiB)
  // for StoreErrorAction::kLocal, made the first time a config asks for it.
  static absl::StatusOr<std::unique_ptr<Middleware>> Create(MiddlewareOptions options);

  Middleware(const Middleware&) = delete;
  Middleware& operator=(const Middleware&) = delete;
  ~Middleware();

  // Middleware::Decide()
  //
  // Returns the verdict on `request`, blocking on the store (for thread-per-request servers).
  Verdict Decide(const RequestView& request);

  // Middleware::DecideAsync()
  //
  // As Decide(), completing through `done`, which runs exactly once: inline, before DecideAsync()
  // returns, when no limit applies or the store answers inline (the memory store); otherwise on the
  // store's thread (the Redis store's I/O thread), so it must not block. `request` need only be
  // valid until DecideAsync() returns.
  void DecideAsync(const RequestView& request, VerdictCallback done);

  // Middleware::SetConfig()
  //
  // Swaps in `config` for requests that start from now on, and sets the guard's answer to a failed
  // store from its `store_error` and `local_fallback_instances`; InvalidArgument (old config kept)
  // when it is null. A request that starts while SetConfig() runs may see the old config with the
  // new answer, and so be answered for a failed store as either says.
  absl::Status SetConfig(std::shared_ptr<const MiddlewareConfig> config);

  // Middleware::Reload()
  //
  // Loads `path` and swaps it in. On any error the old config stays and the error is returned.
  absl::Status Reload(const std::filesystem::path& path);

  // Returns the current config snapshot.
  std::shared_ptr<const MiddlewareConfig> config() const;

  MiddlewareStats Stats() const;

  // Whether the store answers inline (Store::AnswersInline()): DecideAsync() then always completes
  // before it returns, and adapters may call Decide() directly.
  bool store_answers_inline() const { return store_answers_inline_; }

 private:
  struct Counters;
  class ConfigSlot;
  Middleware(MiddlewareOptions options, std::unique_ptr<FailurePolicyStore> guard);

  MiddlewareOptions options_;
  // The config snapshot in use; SetConfig() swaps it and the guard's answer together.
  std::unique_ptr<ConfigSlot> config_;
  std::unique_ptr<Counters> counters_;
  // The middleware's failure policy around options_.store, what decisions go through (see
  // MiddlewareOptions::store): it answers a failed check as the config's store_error says.
  std::unique_ptr<FailurePolicyStore> guard_;
  bool store_answers_inline_ = false;
};

}  // namespace sluice::http

#endif  // SLUICE_HTTP_MIDDLEWARE_H_
