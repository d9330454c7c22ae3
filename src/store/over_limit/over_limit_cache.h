// OverLimitCache: remembers keys known to be over their limit, so that repeated requests on a hot
// over-limit key are answered in-process, without a store round trip (envoyproxy/ratelimit's
// LOCAL_CACHE_SIZE_IN_BYTES).
//
// A denial says the same request cannot pass for `retry_after`, whatever other instances do, except
// that a credit (LimitCheck::refund) through another instance gives units back: so an entry lives
// for retry_after measured on the local monotonic clock but at most `max_life` (1 s by default),
// which bounds how long such a credit goes unseen here, and only answers requests of at least the
// denied cost. A credit through this instance erases its key's entry (Forget()). The trade-off
// is memory (bounded by `max_entries` and by `max_bytes`, each entry counting its key's length
// plus kEntryOverheadBytes; when full, new entries are dropped after expired ones are swept, at
// most once per kFullSweepInterval so a cache full of live entries costs an Add() nothing) and
// that a limit raised by a config reload is seen only when the entry expires — entries are keyed
// by the store key, which includes the limit's algorithm and period but not its quota.
//
// Thread safety: thread-safe.
#ifndef SLUICE_STORE_OVER_LIMIT_OVER_LIMIT_CACHE_H_
#define SLUICE_STORE_OVER_LIMIT_OVER_LIMIT_CACHE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

#include "src/util/mutex.h"

namespace sluice::internal {

class OverLimitCache {
 public:
  // What an entry costs besides its key's bytes: the hash map's slot (a std::string, the entry,
  // a control byte) at its lowest load factor, and the key's malloc header. Approximate.
  static constexpr size_t kEntryOverheadBytes = 128;
  // Default bound on bytes: 64 MiB, about 300,000 entries of 100-byte keys.
  static constexpr size_t kDefaultMaxBytes = size_t{64} << 20;
  // A full cache looks for expired entries at most this often.
  static constexpr std::chrono::milliseconds kFullSweepInterval{100};

  // Default bound on an entry's life: a credit through another instance is seen within it.
  static constexpr std::chrono::milliseconds kDefaultMaxLife{1000};

  explicit OverLimitCache(size_t max_entries, size_t max_bytes = kDefaultMaxBytes,
                          std::chrono::microseconds max_life = kDefaultMaxLife)
      : max_entries_(max_entries), max_bytes_(max_bytes), max_life_(max_life) {}

  // Records that `cost` units on `key` were denied at `now` and cannot pass for `retry_after`;
  // the limit resets `reset_after` after `now` (what a cached answer reports).
  void Add(absl::string_view key, int64_t limit, int64_t cost,
           std::chrono::steady_clock::time_point now, std::chrono::microseconds retry_after,
           std::chrono::microseconds reset_after);
  // As above, with the reset at the end of `retry_after`.
  void Add(absl::string_view key, int64_t limit, int64_t cost,
           std::chrono::steady_clock::time_point now, std::chrono::microseconds retry_after) {
    Add(key, limit, cost, now, retry_after, retry_after);
  }

  // Returns whether a request of `cost` on `key` (with quota `limit`) is known to be over at `now`.
  bool IsOver(absl::string_view key, int64_t limit, int64_t cost,
              std::chrono::steady_clock::time_point now) {
    return Lookup(key, limit, cost, now).has_value();
  }

  // What a cached denial says: how long until it may pass, and until the limit resets.
  struct Over {
    std::chrono::microseconds retry_after;
    std::chrono::microseconds reset_after;
  };
  // Returns the cached denial of a request of `cost` on `key` (with quota `limit`) at `now`, or
  // nullopt when it is not known to be over.
  std::optional<Over> Lookup(absl::string_view key, int64_t limit, int64_t cost,
                             std::chrono::steady_clock::time_point now);

  // Drops the entry of `key`, if any: units were given back to it.
  void Forget(absl::string_view key);

  // Entries held, and the bytes counted against max_bytes.
  size_t entries() const;
  size_t bytes() const;

  static size_t EntryBytes(absl::string_view key) { return key.size() + kEntryOverheadBytes; }

 private:
  struct Entry {
    // The entry answers until `until` (at most max_life after it was added); the request may
    // pass at `retry_at`, which a cached answer reports.
    std::chrono::steady_clock::time_point until;
    std::chrono::steady_clock::time_point retry_at;
    std::chrono::steady_clock::time_point reset_at;
    int64_t limit;
    int64_t cost;
  };
  void Erase(absl::flat_hash_map<std::string, Entry>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_entries_;
  const size_t max_bytes_;
  const std::chrono::microseconds max_life_;
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point next_full_sweep_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_OVER_LIMIT_OVER_LIMIT_CACHE_H_
