// RequestCall: the state of one request inside the middleware, from matching to verdict.
//
// Prepare() reads the request (route, identity, tier) and builds the store checks, copying all it
// needs, so the request may be gone by the time the store answers; Finish() turns the store's
// answer into a Verdict. The config snapshot is held for the whole call.
//
// Thread safety: not thread-safe; one call is driven by one thread at a time (the store's callback
// runs after Prepare() has returned its checks).
#ifndef SLUICE_HTTP_REQUEST_CALL_H_
#define SLUICE_HTTP_REQUEST_CALL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"

#include "sluice/http/middleware.h"
#include "sluice/store.h"

#include "src/http/compiled_rules.h"
#include "src/http/identity.h"

namespace sluice::http::internal {

// What one finished request adds to the counters.
struct Tally {
  bool ok = false;
  bool over_limit = false;
  bool enforced = false;
  bool error = false;
};

class RequestCall {
 public:
  enum class State : uint8_t {
    // Constructed; Prepare() not called.
    kNew = 0,
    // No limit applies; the verdict is a plain pass and the store is not called.
    kUnlimited = 1,
    // checks() are ready for the store; Finish() is next.
    kWaitingForStore = 2,
    // Finish() ran.
    kDone = 3,
  };

  // `owner` is the middleware the call runs in (not owned), for the store's callback.
  RequestCall(std::shared_ptr<const MiddlewareConfig> config, Middleware* owner);

  // RequestCall::Prepare()
  //
  // Matches `request` and builds its checks. Returns the new state (kUnlimited or
  // kWaitingForStore). REQUIRES: state() == kNew.
  State Prepare(const RequestView& request, const MiddlewareOptions& options);

  // The checks for Store::CheckAll(), global policies first. Valid while the call lives.
  std::span<const LimitCheck> checks() const { return checks_; }

  // RequestCall::Finish()
  //
  // Returns the verdict for the store's answer, runs the rejection hook of `options` on a
  // rejection, and fills `tally`. `options.clock` gives the time of X-RateLimit-Reset in epoch
  // form. REQUIRES: state() == kWaitingForStore.
  Verdict Finish(absl::StatusOr<MultiDecision> result, const MiddlewareOptions& options,
                 Tally& tally);

  // The caller's completion, kept here during an asynchronous call so that the store's callback
  // captures one pointer (and fits in its callback's inline storage: no allocation).
  absl::AnyInvocable<void(Verdict) &&> done;
  Middleware* const owner;

  State state() const { return state_; }
  // The config snapshot the call runs under.
  const MiddlewareConfig& config() const { return *config_; }

 private:
  // `status` is the store's error, or OK with one decision per check in `decisions`.
  Verdict FinishDecisions(absl::Status status, std::span<const Decision> decisions, bool allowed,
                          const MiddlewareOptions& options, Tally& tally);
  Verdict Reject(RejectReason reason, int status, int64_t retry_after_seconds,
                 std::vector<ResponseHeader> headers, std::vector<std::string_view> violated,
                 absl::Status store_status, const MiddlewareOptions& options);

  std::shared_ptr<const MiddlewareConfig> config_;
  State state_ = State::kNew;
  const CompiledRoute* route_ = nullptr;
  const CompiledTier* tier_ = nullptr;
  ResolvedIdentity identity_;
  absl::InlinedVector<LimitCheck, 4> checks_;
};

}  // namespace sluice::http::internal

#endif  // SLUICE_HTTP_REQUEST_CALL_H_
