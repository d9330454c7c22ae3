// FakeLeaseSource: a LeaseSource over the C++ fixed window (src/algorithm/), following the grant
// rule of docs/algorithms.md "Leases" (at most half of what remains, recorded in the window, ending
// with it), answering inline on a ManualClock. For tests of the lease store's own logic; the
// grant rule itself is tested against Redis in tests/store/redis/.
//
// Thread safety: thread-safe.
#ifndef SLUICE_TESTS_STORE_LEASE_FAKE_LEASE_SOURCE_H_
#define SLUICE_TESTS_STORE_LEASE_FAKE_LEASE_SOURCE_H_

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/clock.h"
#include "sluice/store.h"

#include "src/algorithm/algorithm.h"
#include "src/store/lease/lease_source.h"
#include "src/util/mutex.h"

namespace sluice::testing {

class FakeLeaseSource final : public internal::LeaseSource {
 public:
  explicit FakeLeaseSource(Clock& clock) : clock_(clock) {}

  void DecideAndLease(std::span<const LimitCheck> checks,
                      std::span<const internal::LeaseWant> wants, LeaseCallback done) override {
    internal::MutexLock lock(&mu_);
    ++calls_;
    if (failure_.has_value()) {
      std::move(done)(*failure_);
      return;
    }
    const int64_t now = clock_.EpochNow().count();
    std::map<std::string, algorithm::FixedWindowState> tentative;
    internal::LeasedDecision out;
    out.decision.allowed = true;
    for (const LimitCheck& c : checks) {
      algorithm::FixedWindowState st = state_[c.key];
      Decision d = c.refund ? algorithm::CreditFixedWindow(c.limit, st, now, c.cost)
                            : algorithm::DecideFixedWindow(c.limit, st, now, c.cost);
      out.decision.allowed = out.decision.allowed && d.allowed;
      out.decision.decisions.push_back(d);
      tentative[c.key] = st;
    }
    out.grants.resize(checks.size());
    if (!out.decision.allowed) {
      // All or nothing: the passing checks report a peek.
      for (size_t i = 0; i < checks.size(); ++i) {
        if (!out.decision.decisions[i].allowed) continue;
        algorithm::FixedWindowState st = state_[checks[i].key];
        out.decision.decisions[i] = algorithm::DecideFixedWindow(checks[i].limit, st, now, 0);
      }
      std::move(done)(std::move(out));
      return;
    }
    for (size_t i = 0; i < checks.size(); ++i) {
      algorithm::FixedWindowState& st = tentative[checks[i].key];
      Decision& d = out.decision.decisions[i];
      const int64_t g = std::min(wants[i].units, d.remaining / 2);
      const int64_t period = checks[i].limit.period.count();
      const int64_t window = now - now % period;
      if (st.window_start_us != window) st = {.window_start_us = window, .count = 0};
      st.count += g;
      d.remaining -= g;
      granted_ += g;
      out.grants[i] = {.granted = g, .now_us = now, .ends_us = window + period};
      state_[checks[i].key] = st;
    }
    std::move(done)(std::move(out));
  }

  void Refund(std::span<const internal::LeaseRefund> refunds, RefundCallback done) override {
    internal::MutexLock lock(&mu_);
    ++refund_calls_;
    const int64_t now = clock_.EpochNow().count();
    for (const internal::LeaseRefund& r : refunds) {
      auto it = state_.find(r.check.key);
      if (it == state_.end() || now >= r.grant.ends_us) continue;
      const int64_t period = r.check.limit.period.count();
      if (it->second.window_start_us + period != r.grant.ends_us) continue;
      it->second.count = std::max<int64_t>(0, it->second.count - r.unspent);
      refunded_ += r.unspent;
    }
    std::move(done)(absl::OkStatus());
  }

  // Records `id` until now + ttl and counts the records that have not ended, as lease_holders.
  void Announce(std::string_view id, std::chrono::microseconds ttl, HoldersCallback done) override {
    int64_t count = 0;
    {
      internal::MutexLock lock(&mu_);
      ++announcements_;
      const int64_t now = clock_.EpochNow().count();
      holders_[std::string(id)] = now + ttl.count();
      for (const auto& [holder, ends] : holders_) count += ends > now ? 1 : 0;
    }
    std::move(done)(count);
  }

  // The count the store holds for `key` in the current window.
  int64_t Count(const std::string& key, const Limit& limit) {
    internal::MutexLock lock(&mu_);
    algorithm::FixedWindowState st = state_[key];
    return limit.limit -
           algorithm::DecideFixedWindow(limit, st, clock_.EpochNow().count(), 0).remaining;
  }
  void Fail(absl::Status status) {
    internal::MutexLock lock(&mu_);
    failure_ = std::move(status);
  }
  void Heal() {
    internal::MutexLock lock(&mu_);
    failure_.reset();
  }
  int calls() const {
    internal::MutexLock lock(&mu_);
    return calls_;
  }
  int announcements() const {
    internal::MutexLock lock(&mu_);
    return announcements_;
  }
  int refund_calls() const {
    internal::MutexLock lock(&mu_);
    return refund_calls_;
  }
  int64_t refunded() const {
    internal::MutexLock lock(&mu_);
    return refunded_;
  }

 private:
  Clock& clock_;
  mutable internal::Mutex mu_;
  std::map<std::string, algorithm::FixedWindowState> state_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> failure_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  int refund_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int announcements_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> holders_ ABSL_GUARDED_BY(mu_);
  int64_t granted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refunded_ ABSL_GUARDED_BY(mu_) = 0;
};

// The fake as a plain Store: exact calls (no units wanted) on the same state.
class FakeLeaseSourceStore final : public Store {
 public:
  explicit FakeLeaseSourceStore(FakeLeaseSource& source) : source_(source) {}
  std::string_view Name() const override { return "fake"; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    std::vector<internal::LeaseWant> none(checks.size(), internal::LeaseWant{.units = 0});
    source_.DecideAndLease(
        checks, none, [done = std::move(done)](absl::StatusOr<internal::LeasedDecision> d) mutable {
          if (!d.ok()) {
            std::move(done)(std::move(d).status());
            return;
          }
          std::move(done)(std::move(d->decision));
        });
  }

 private:
  FakeLeaseSource& source_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_STORE_LEASE_FAKE_LEASE_SOURCE_H_
