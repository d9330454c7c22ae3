// Failure policy: what a limiter answers when its store cannot.
//
// A store outage must never hang or crash a caller, and what happens instead must be a choice, not
// an accident. WithFailurePolicy() wraps a store (normally the Redis store) so that a failed check
// (Unavailable, DeadlineExceeded, Internal, ResourceExhausted... anything but InvalidArgument,
// which is the caller's bug) is answered by the policy:
//   - kPropagate: return the error (sluiced turns it into gRPC UNAVAILABLE so that Envoy's own
//     failure_mode_deny decides);
//   - kAllow: fail open, allowed = true;
//   - kDeny: fail closed, allowed = false (HTTP middleware answers 503, not 429);
//   - kLocal: decide with an in-process memory store, the limit divided by `expected_instances`
//     (rate-limiter-flexible's "insurance limiter"): each instance then admits about its share;
//     with `divide_by_leaseholders`, by the instances a leased Redis store last counted, when more.
// Every policy decision has `from_fallback = true` and is counted. The answer (the mode, and the
// instances of kLocal) may be changed while the wrapper runs (SetAnswer()), as the HTTP middleware
// does when its config is reloaded. After `breaker_failure_threshold` consecutive failures the
// store is skipped for `breaker_open_for` (answers come from the policy at once), then one probe
// at a time is let through until a check succeeds: a dead store costs callers no deadline per
// request, and recovery is automatic.
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Store> redis, RedisStore::Create(options));
//   std::unique_ptr<Store> store = WithFailurePolicy(
//       std::move(redis), {.mode = FailureMode::kLocal, .expected_instances = 4});
//
// Thread safety: the wrapper is thread-safe.
#ifndef SLUICE_FAILURE_POLICY_H_
#define SLUICE_FAILURE_POLICY_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"

#include "sluice/clock.h"
#include "sluice/store.h"
#include "sluice/store_wrapper.h"

namespace sluice {

enum class FailureMode : uint8_t { kPropagate = 0, kAllow = 1, kDeny = 2, kLocal = 3 };

// ParseFailureMode()
//
// "error" (kPropagate), "allow", "deny" or "local"; else InvalidArgument.
absl::StatusOr<FailureMode> ParseFailureMode(std::string_view name);
std::string_view FailureModeName(FailureMode mode);

struct FailurePolicy {
  FailureMode mode = FailureMode::kPropagate;
  // kLocal: limits (and bursts) are divided by this, rounded down, at least 1. Default: 1.
  int64_t expected_instances = 1;
  // kLocal: divide by the instances the store last saw sharing its limits when that is more
  // than `expected_instances` (Store::SharingInstances(): a Redis store with `lease=true` counts
  // the instances announced as leaseholders, docs/redis.md "Leases"). Through an outage each
  // instance then admits about limit / N, so all of them together about the limit, rather than
  // each the whole limit. It only ever makes a share smaller, and does nothing without leases.
  // Default: true.
  bool divide_by_leaseholders = true;
  // kDeny: the retry_after of a denial. Default: 1 s.
  std::chrono::microseconds deny_retry_after = std::chrono::seconds(1);
  // Consecutive store failures that open the breaker; 0 disables the breaker. Default: 5.
  int breaker_failure_threshold = 5;
  // How long an open breaker skips the store before it lets a probe through. Default: 1 s.
  std::chrono::microseconds breaker_open_for = std::chrono::seconds(1);
  // Time for the breaker and the local memory store. Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
  // kLocal: the bound of the in-process limiter's memory (MemoryStoreOptions::max_bytes).
  // Default: 1 GiB, the memory store's own default.
  size_t local_max_bytes = size_t{1} << 30;
  // Log the store's failures and the breaker's transitions (see FailureStats). Off for a policy
  // whose failures are logged elsewhere already, such as one stacked on another policy.
  // Default: true.
  bool log_failures = true;
  // How the log lines of store failures show the identity part of a key, the hash tag between
  // `{` and `}` (a user id, an address: personal data). kPlain as the store said it; kHashed a
  // stable short hash ("{h:1f3a9c0b2e4d}", the same identity always the same hash, so lines can
  // still be correlated); kRedacted "{***}". The HTTP middleware's own guard uses kHashed.
  // Default: kPlain.
  enum class KeyIdentities : uint8_t { kPlain = 0, kHashed = 1, kRedacted = 2 };
  KeyIdentities log_key_identities = KeyIdentities::kPlain;
};

// Counters of a failure-policy wrapper (values may be slightly outdated).
//
// Logs: a failed check logs a warning with the store's error, at most one line a second (the next
// line says how many were suppressed); the breaker logs each opening (warning) and closing (info),
// at most four lines a second. Store messages name the server by host:port, never credentials.
struct FailureStats {
  uint64_t store_errors = 0;        // checks the store failed (InvalidArgument excluded)
  uint64_t fallback_decisions = 0;  // decisions the policy made (incl. while the breaker is open)
  uint64_t local_decisions = 0;     // kLocal: checks (CheckAll() calls) the local limiter decided
  bool breaker_open = false;
  uint64_t breaker_opens = 0;         // closed -> open transitions
  uint64_t breaker_closes = 0;        // open -> closed transitions (a probe succeeded)
  uint64_t log_lines_suppressed = 0;  // store-error and breaker lines dropped by the throttle
};

class FailurePolicyStore : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  virtual FailureStats Stats() const = 0;

  // FailurePolicyStore::SetAnswer()
  //
  // From the next check on, answers a failed check with `mode`, each limit divided by
  // `expected_instances` under kLocal (at least 1), as FailurePolicy's fields of the same names
  // say. A check in flight keeps the answer it started with. The breaker, `deny_retry_after` and
  // the logging stay as the policy set them. Switching to kLocal creates the local limiter the
  // first time.
  virtual void SetAnswer(FailureMode mode, int64_t expected_instances) = 0;
};

// WithFailurePolicy()
//
// Returns `primary` wrapped with `policy`. The wrapper owns `primary`.
std::unique_ptr<FailurePolicyStore> WithFailurePolicy(std::unique_ptr<Store> primary,
                                                      const FailurePolicy& policy);
// As above, wrapping `primary` without owning it: it must outlive the wrapper and every call in
// flight.
std::unique_ptr<FailurePolicyStore> WithFailurePolicy(Store& primary, const FailurePolicy& policy);

}  // namespace sluice

#endif  // SLUICE_FAILURE_POLICY_H_
