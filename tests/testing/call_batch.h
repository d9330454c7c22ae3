// CallBatch: waits for a batch of asynchronous calls, for tests that keep N calls in flight.
//
// Each completion calls Done(); Wait() returns after the last one. Hold it in a shared_ptr that
// the callbacks capture, so it outlives the last of them (a callback may still be inside Done()
// when Wait() returns). Built on std::mutex, which ThreadSanitizer sees; Debian's Abseil is not
// instrumented, so absl::Notification would hide the ordering from it.
//
// Example:
//   auto batch = std::make_shared<CallBatch>(32);
//   for (int i = 0; i < 32; ++i) store.CheckAsync(key, limit, 1, [batch](auto) { batch->Done(); });
//   batch->Wait();
//
// Thread safety: thread-safe.
#ifndef SLUICE_TESTS_TESTING_CALL_BATCH_H_
#define SLUICE_TESTS_TESTING_CALL_BATCH_H_

#include <condition_variable>
#include <mutex>

namespace sluice::testing {

class CallBatch {
 public:
  explicit CallBatch(int calls) : pending_(calls) {}

  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) cv_.notify_all();
  }

  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return pending_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int pending_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_CALL_BATCH_H_
