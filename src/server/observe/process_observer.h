// ProcessObserver: what happens in sluiced, told to whoever counts, shows or logs it: the
// Prometheus and statsd metrics (src/server/stats/metrics.h) and the dashboard
// (src/server/dashboard/dashboard.h). Each room reports its own events, to the one ObserverList
// (observer_list.h) that RunServer builds:
//   - decisions, by the rate limit service: the RlsObserver reports (src/server/rls/rls_observer.h)
//     this interface extends, so that the rate limit core knows nothing above its room;
//   - quota usage, by the rate limit quota service (RLQS): the requests an Envoy reports it
//     allowed and denied under a rule;
//   - config loads, served or refused, by the config provider (the files or xDS).
// Every method does nothing by default: an observer overrides the events it cares about, and a
// new event is a method here, a call where it happens and an override where it is wanted.
//
// What a room holds at a given moment (the store's breaker and counters, the listeners', the
// xDS stream's) is not an event: it is read when asked, through GaugeSource (gauge_source.h).
// The store tells no one when its state changes, and a copy pushed on a timer would be stale
// where the reading is live.
//
// Reports are made on the thread where the thing happened (a decision's completion thread, an
// RLQS stream's, the config reloader's or the xDS client's), so an observer must be quick and
// must not block: count, do not do I/O. Reports view the reporter's state for the call's duration
// only: an observer copies what it keeps.
//
// Example:
//   class ReloadCounter final : public ProcessObserver {
//    public:
//     void OnConfigLoad(const ConfigLoadReport& load) override { loads_ += load.ok ? 1 : 0; }
//     ...
//   };
//
// Thread safety: implementations must be thread-safe; reports arrive from many threads at once.
#ifndef SLUICE_SERVER_OBSERVE_PROCESS_OBSERVER_H_
#define SLUICE_SERVER_OBSERVE_PROCESS_OBSERVER_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "src/server/rls/rls_observer.h"

namespace sluice::server {

// One reported RLQS bucket that matched a rule, and what its client did since its previous report.
struct QuotaUsageReport {
  std::string_view domain{};
  // The rule's stats key ("domain.key_value...").
  std::string_view stats_key{};
  // The bucket's entries as reported, sorted by key.
  std::span<const std::pair<std::string, std::string>> entries{};
  // The rule's limit: `limit` requests per `unit`.
  uint64_t limit = 0;
  std::chrono::seconds unit{1};
  // Requests the client allowed and denied since its previous report.
  uint64_t allowed = 0;
  uint64_t denied = 0;
};

// A config load: served (`ok`, from `origin`) or refused (with `error`; the previous config
// stays).
struct ConfigLoadReport {
  bool ok = false;
  // Where the config came from: a file path, or "xds <server url> version <v>"; empty if refused.
  std::string_view origin{};
  // Why it was refused; empty if served.
  std::string_view error{};
};

class ProcessObserver : public RlsObserver {
 public:
  // A client of the rate limit quota service reported a bucket's usage.
  virtual void OnQuotaUsage(const QuotaUsageReport& /*usage*/) {}
  // A config was served or refused.
  virtual void OnConfigLoad(const ConfigLoadReport& /*load*/) {}
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_OBSERVE_PROCESS_OBSERVER_H_
