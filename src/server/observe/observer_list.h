// ObserverList: the process's observers as one ProcessObserver (process_observer.h): each report
// goes to each of a fixed list, in order. RunServer builds it once and hands it to every room
// that reports; an observer added to the list hears every room.
//
// The list is set once, so reporting takes no lock and allocates nothing.
//
// Example:
//   Metrics metrics;
//   Dashboard dashboard(Clock::Real(), DashboardOptions{});
//   ObserverList observers({&metrics, &dashboard});
//   RateLimitService service(store, observers, RateLimitServiceOptions{});
//
// Thread safety: thread-safe when each observer is.
#ifndef SLUICE_SERVER_OBSERVE_OBSERVER_LIST_H_
#define SLUICE_SERVER_OBSERVE_OBSERVER_LIST_H_

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "src/server/observe/process_observer.h"

namespace sluice::server {

class ObserverList final : public ProcessObserver {
 public:
  // The observers must outlive the list.
  explicit ObserverList(std::vector<ProcessObserver*> observers)
      : observers_(std::move(observers)) {}

  void OnInvalidRequest() override {
    for (ProcessObserver* o : observers_) o->OnInvalidRequest();
  }
  void OnUnknownDomain(std::string_view domain, uint64_t descriptors) override {
    for (ProcessObserver* o : observers_) o->OnUnknownDomain(domain, descriptors);
  }
  void OnStoreError(std::string_view domain, std::chrono::microseconds latency) override {
    for (ProcessObserver* o : observers_) o->OnStoreError(domain, latency);
  }
  void OnDecision(const RlsDecisionReport& report) override {
    for (ProcessObserver* o : observers_) o->OnDecision(report);
  }
  void OnQuotaUsage(const QuotaUsageReport& usage) override {
    for (ProcessObserver* o : observers_) o->OnQuotaUsage(usage);
  }
  void OnConfigLoad(const ConfigLoadReport& load) override {
    for (ProcessObserver* o : observers_) o->OnConfigLoad(load);
  }

 private:
  const std::vector<ProcessObserver*> observers_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_OBSERVE_OBSERVER_LIST_H_
