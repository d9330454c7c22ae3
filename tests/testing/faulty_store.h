// FaultyStore: a forwarding Store that injects failures, for tests of failure handling.
//
// Forwards every call to a wrapped store until Fail(status) is set; then every call completes with
// that status (async calls inline) without reaching the wrapped store, as a dead or hung Redis
// would after its deadline. Heal() restores forwarding.
//
// Thread safety: thread-safe.
#ifndef SLUICE_TESTS_TESTING_FAULTY_STORE_H_
#define SLUICE_TESTS_TESTING_FAULTY_STORE_H_

#include <atomic>
#include <memory>
#include <utility>

#include "sluice/store.h"
#include "sluice/store_wrapper.h"

#include "src/util/mutex.h"

namespace sluice::testing {

class FaultyStore final : public StoreWrapper {
 public:
  explicit FaultyStore(std::unique_ptr<Store> wrapped) : StoreWrapper(std::move(wrapped)) {}
  // Wraps `wrapped` without owning it; it must outlive this store.
  explicit FaultyStore(Store& wrapped) : StoreWrapper(wrapped) {}

  void Fail(absl::Status status) {
    internal::MutexLock lock(&mu_);
    failure_ = std::move(status);
  }
  void Heal() { Fail(absl::OkStatus()); }
  // Calls that reached the wrapped store.
  int forwarded() const { return forwarded_.load(); }
  // Calls answered with the injected failure.
  int failed() const { return failed_.load(); }

  std::string_view Name() const override { return "faulty"; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    if (absl::Status s = Failure(); !s.ok()) {
      std::move(done)(s);
      return;
    }
    DecideOn(inner(), checks, std::move(done));
  }

 private:
  absl::Status Failure() {
    internal::MutexLock lock(&mu_);
    if (failure_.ok()) {
      forwarded_.fetch_add(1);
    } else {
      failed_.fetch_add(1);
    }
    return failure_;
  }

  internal::Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> forwarded_{0};
  std::atomic<int> failed_{0};
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_FAULTY_STORE_H_
