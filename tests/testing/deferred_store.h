// DeferredStore: a forwarding Store whose asynchronous answers arrive later, when the test says,
// on a thread of the test's choosing, as the Redis store's answers arrive on its I/O thread.
//
// Every CheckAsync / CheckAllAsync is queued (its inputs copied) and returns at once; pending()
// counts the queue. RunPending() decides the queued calls on the wrapped store and completes them
// on the calling thread; RunPendingOnThread() does the same on a new thread and joins it. The
// synchronous methods forward directly.
//
// Example:
//   DeferredStore store(*memory);
//   service.ShouldRateLimit(request, done);  // nothing answered yet
//   EXPECT_EQ(store.pending(), 1);
//   store.RunPendingOnThread();              // `done` runs on another thread
//
// Thread safety: thread-safe.
#ifndef SLUICE_TESTS_TESTING_DEFERRED_STORE_H_
#define SLUICE_TESTS_TESTING_DEFERRED_STORE_H_

#include <cstddef>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"

#include "sluice/store.h"
#include "sluice/store_wrapper.h"

#include "src/util/mutex.h"

namespace sluice::testing {

class DeferredStore final : public StoreWrapper {
 public:
  // `target` decides; it must outlive this store.
  explicit DeferredStore(Store& target) : StoreWrapper(target) {}

  std::string_view Name() const override { return "deferred"; }

  // Calls queued and not yet answered.
  size_t pending() const {
    internal::MutexLock lock(&mu_);
    return queue_.size();
  }

  // Answers every queued call, including calls queued by the answers themselves, on this thread.
  // Returns how many were answered.
  size_t RunPending() {
    size_t answered = 0;
    for (;;) {
      std::vector<absl::AnyInvocable<void() &&>> batch;
      {
        internal::MutexLock lock(&mu_);
        batch.swap(queue_);
      }
      if (batch.empty()) return answered;
      for (auto& work : batch) std::move(work)();
      answered += batch.size();
    }
  }

  // As RunPending(), on a new thread; returns once that thread has finished.
  size_t RunPendingOnThread() {
    size_t answered = 0;
    std::thread t([this, &answered] { answered = RunPending(); });
    t.join();
    return answered;
  }

 protected:
  // Every call waits in the queue, so a synchronous call returns only once another thread has
  // answered it (RunPendingOnThread() from the test's thread does not).
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    std::vector<LimitCheck> copy(checks.begin(), checks.end());
    Queue([this, copy = std::move(copy), done = std::move(done)]() mutable {
      DecideOn(inner(), copy, std::move(done));
    });
  }

 private:
  void Queue(absl::AnyInvocable<void() &&> work) {
    internal::MutexLock lock(&mu_);
    queue_.push_back(std::move(work));
  }

  mutable internal::Mutex mu_;
  std::vector<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_DEFERRED_STORE_H_
