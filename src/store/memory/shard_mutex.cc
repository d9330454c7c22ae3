#include "src/store/memory/shard_mutex.h"

#include <thread>

namespace sluice::internal {
namespace {

// About a microsecond of spinning: many times a shard's critical section, and less than a
// yield's system call.
constexpr int kSpins = 64;

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

void ShardMutex::LockSlow() {
  // Test before test-and-set: waiters read the shared line and write it only when it is free.
  for (int attempt = 0;; ++attempt) {
    if (attempt < kSpins) {
      CpuRelax();
    } else {
      // The holder may have been preempted (more threads than cores); let it run.
      std::this_thread::yield();
    }
    bool expected = false;
    if (!locked_.load(std::memory_order_relaxed) &&
        locked_.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
      return;
    }
  }
}

}  // namespace sluice::internal
