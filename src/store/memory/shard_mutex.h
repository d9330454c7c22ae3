// ShardMutex: the lock of one memory store shard: a spinlock on one atomic word that yields the
// CPU when spinning does not get it, with Abseil's thread-safety annotations.
//
// A shard's critical section is a few tens of nanoseconds, so the lock is built for the case where
// it is free or about to be: Lock() is one compare-and-swap, Unlock() one plain release store (no
// read-modify-write, which on x86 drains the store buffer and costs as much as the rest of the
// unlock path). A waiter spins for about a microsecond, then yields between attempts, so a holder
// that was preempted gets the CPU back; nobody sleeps, so nobody needs waking.
//
// Why not absl::Mutex: Debian builds Abseil without NDEBUG, so every absl::Mutex::Lock() also runs
// the deadlock detector's bookkeeping (a global graph), which costs more than the rest of a
// decision; and without ThreadSanitizer, so TSan cannot see its synchronisation and reports every
// access it guards as a race. Why not std::mutex: glibc's unlock is a read-modify-write (it must
// find out whether to wake a sleeper), and lock and unlock together run about 50 instructions;
// measured, a decision on a hot key took about 7 ns more (bench/memory_store_benchmark.cc).
//
// Example:
//   ShardMutex mu;
//   int value ABSL_GUARDED_BY(mu);
//   { ShardLock lock(&mu); ++value; }
//
// Thread safety: a mutex; not reentrant. TSan sees its acquire and release.
#ifndef SLUICE_STORE_MEMORY_SHARD_MUTEX_H_
#define SLUICE_STORE_MEMORY_SHARD_MUTEX_H_

#include <atomic>

#include "absl/base/thread_annotations.h"

namespace sluice::internal {

class ABSL_LOCKABLE ShardMutex {
 public:
  ShardMutex() = default;
  ShardMutex(const ShardMutex&) = delete;
  ShardMutex& operator=(const ShardMutex&) = delete;
  ~ShardMutex() = default;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    bool expected = false;
    if (!locked_.compare_exchange_strong(expected, true, std::memory_order_acquire)) LockSlow();
  }

  void Unlock() ABSL_UNLOCK_FUNCTION() { locked_.store(false, std::memory_order_release); }

 private:
  void LockSlow();

  std::atomic<bool> locked_{false};
};

// Holds a ShardMutex for its scope, as absl::MutexLock does.
class ABSL_SCOPED_LOCKABLE ShardLock {
 public:
  explicit ShardLock(ShardMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ShardLock(const ShardLock&) = delete;
  ShardLock& operator=(const ShardLock&) = delete;
  ~ShardLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  ShardMutex* const mu_;
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_MEMORY_SHARD_MUTEX_H_
