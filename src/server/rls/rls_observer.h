// RlsObserver: what RateLimitService reports about the requests it decides, to whoever counts or
// shows them. The service knows this interface only, not its implementations, so the rate limit
// core links no stats code. It is the decision part of sluiced's one observer interface,
// ProcessObserver (src/server/observe/process_observer.h), which extends it with the process's
// other events; the service is handed that interface's fan-out, ObserverList.
//
// Each request gives exactly one report: OnInvalidRequest() (nothing was decided), or
// OnStoreError() or OnDecision(), the latter two after OnUnknownDomain() when the domain has no
// config. Reports are made on the thread that completes the decision (the caller's, or the store's
// completion thread) before the caller's callback runs, so an observer must be quick and must not
// block: count, do not do I/O. Every method does nothing by default: an observer overrides the
// reports it cares about.
//
// Example:
//   Metrics metrics;  // a ProcessObserver, so an RlsObserver
//   RateLimitService service(store, metrics, RateLimitServiceOptions{});
//
// Thread safety: implementations must be thread-safe; reports arrive from many threads at once.
#ifndef SLUICE_SERVER_RLS_RLS_OBSERVER_H_
#define SLUICE_SERVER_RLS_RLS_OBSERVER_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>

#include "src/server/rls/rls_types.h"
#include "src/server/rls/rule_stats.h"

namespace sluice::server {

// One decided request. Everything views the service's state for the call's duration only: an
// observer copies what it keeps.
struct RlsDecisionReport {
  // The request's domain.
  std::string_view domain{};
  // One per decided limit: its stats key (the domain, then the descriptor's keys and values) and
  // what the request adds to its counters.
  std::span<const RuleStatsDelta> limits{};
  // What was decided: the overall code and one status per request descriptor.
  const RlsResponse* response = nullptr;
  // Global shadow mode turned an OVER_LIMIT answer OK.
  bool global_shadow_applied = false;
  // Limits the over-limit cache answered.
  uint64_t local_cache_hits = 0;
  // Decisions a store failure policy made instead of the store.
  uint64_t fallback_decisions = 0;
  // From the call to the answer.
  std::chrono::microseconds latency{0};
};

class RlsObserver {
 public:
  RlsObserver() = default;
  RlsObserver(const RlsObserver&) = delete;
  RlsObserver& operator=(const RlsObserver&) = delete;
  virtual ~RlsObserver() = default;

  // A request was malformed and refused before any decision (InvalidArgument).
  virtual void OnInvalidRequest() {}
  // A request named `domain`, which has no config; it has `descriptors` descriptors.
  virtual void OnUnknownDomain(std::string_view /*domain*/, uint64_t /*descriptors*/) {}
  // The store failed the request of `domain` after `latency` (Unavailable).
  virtual void OnStoreError(std::string_view /*domain*/, std::chrono::microseconds /*latency*/) {}
  // A request was decided.
  virtual void OnDecision(const RlsDecisionReport& /*report*/) {}
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RLS_OBSERVER_H_
