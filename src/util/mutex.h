// Mutex: a std::mutex carrying Abseil's thread-safety annotations.
//
// Not absl::Mutex: Debian's Abseil is built without NDEBUG, so every absl::Mutex::Lock() pays for
// deadlock-detection bookkeeping, and it is not built for ThreadSanitizer, which then reports
// every access it guards as a race. glibc's mutex has neither problem and TSan intercepts it.
// (The memory store's shards use their own spinlock, src/store/memory/shard_mutex.h.)
//
// Example:
//   internal::Mutex mu_;
//   int value_ ABSL_GUARDED_BY(mu_);
//   { internal::MutexLock lock(&mu_); ++value_; }
//
// Thread safety: a mutex.
#ifndef SLUICE_UTIL_MUTEX_H_
#define SLUICE_UTIL_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace sluice::internal {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  ~Mutex() = default;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // BasicLockable, for std::condition_variable_any.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope, as absl::MutexLock does.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  Mutex* const mu_;
};

}  // namespace sluice::internal

#endif  // SLUICE_UTIL_MUTEX_H_
