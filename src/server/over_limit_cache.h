// OverLimitCache: remembers keys known to be over their limit, so that repeated requests on a hot
// over-limit key are answered in-process, without a store round trip (envoyproxy/ratelimit's
// LOCAL_CACHE_SIZE_IN_BYTES).
//
// A denial says the same request cannot pass for `retry_after`, whatever other instances do (they
// can only add usage), so the entry is exact, not approximate: it lives for retry_after measured on
// the local monotonic clock, and only answers requests of at least the denied cost. The trade-off
// is memory (bounded by `max_entries`; when full, new entries are dropped after expired ones are
// swept) and that a limit raised by a config reload is seen only when the entry expires — entries
// are keyed by the store key, which includes the limit's algorithm and period but not its quota.
//
// Thread safety: thread-safe.
#ifndef SLUICE_SERVER_OVER_LIMIT_CACHE_H_
#define SLUICE_SERVER_OVER_LIMIT_CACHE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

#include "src/util/mutex.h"

namespace sluice::server {

class OverLimitCache {
 public:
  explicit OverLimitCache(size_t max_entries) : max_entries_(max_entries) {}

  // Records that `cost` units on `key` were denied at `now` and cannot pass for `retry_after`.
  void Add(absl::string_view key, int64_t limit, int64_t cost,
           std::chrono::steady_clock::time_point now, std::chrono::microseconds retry_after);

  // Returns whether a request of `cost` on `key` (with quota `limit`) is known to be over at `now`.
  bool IsOver(absl::string_view key, int64_t limit, int64_t cost,
              std::chrono::steady_clock::time_point now);

 private:
  struct Entry {
    std::chrono::steady_clock::time_point until;
    int64_t limit;
    int64_t cost;
  };
  const size_t max_entries_;
  internal::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_OVER_LIMIT_CACHE_H_
