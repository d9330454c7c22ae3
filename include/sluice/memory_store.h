// MemoryStore: the embedded, in-process Store.
//
// State lives in a sharded hash map in this process, so limits are per instance: N instances of a
// service each admit the full limit (use the Redis store to share one limit). Every entry expires
// when its state no longer matters (docs/algorithms.md): lazily, when a check finds it expired, and
// by an incremental sweep that checks run on their shard at most once per `sweep_interval`. Time
// comes from the injected Clock's EpochNow(), which is monotonic, so a wall-clock step neither
// resets nor locks out a limit.
//
// Example:
//   absl::StatusOr<std::unique_ptr<MemoryStore>> store =
//       MemoryStore::Create({.max_entries = 1'000'000, .max_bytes = size_t{256} << 20});
//   if (!store.ok()) return store.status();
//
// Thread safety: thread-safe. Async methods run their callback inline, on the caller's stack,
// before returning.
#ifndef SLUICE_MEMORY_STORE_H_
#define SLUICE_MEMORY_STORE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "sluice/clock.h"
#include "sluice/store.h"

namespace sluice {

// What a full store (max_entries or max_bytes reached, nothing expired to reclaim) does with a new
// key.
enum class OverflowPolicy : uint8_t {
  // Evict the entry that expires soonest among a small sample of the new key's shard (Redis's
  // volatile-ttl approximation), as many times as the new key needs room (a long key may take the
  // room of several short ones). Limits of evicted keys restart from empty. The default: memory
  // stays bounded and no request is refused for lack of room (except for a key longer than a
  // shard's share of max_bytes, which can never fit and is denied).
  kEvictSoonestExpiring = 0,
  // Deny requests on new keys (Decision with allowed = false, remaining = 0 and reset_after =
  // retry_after = sweep_interval) until room frees up. Keys already present keep working, and
  // peeks need no room.
  kDenyNewKeys = 1,
};

struct MemoryStoreOptions {
  // The time source. Not owned; must outlive the store. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
  // Upper bound on live entries across all shards. Each shard holds at most its share (the shares
  // add up to max_entries), so a full shard evicts or denies although others may still have a
  // little room. Default: 10 million.
  size_t max_entries = 10'000'000;
  // Upper bound on the bytes the entries take. An entry counts kEntryOverheadBytes for its slot in
  // the hash table, plus, for a key longer than 15 bytes, the heap copy of the key as malloc
  // rounds it (EntryBytes()). A new key that would take the store past the bound gets room from the
  // overflow policy, as for max_entries. Each shard holds at most its share (the shares add up to
  // max_bytes). Not counted: a sliding log's times (8 bytes per admitted unit, bounded by the
  // limit), and a table left sparse by a wave of expiries until the sweep shrinks it. With 4 KB
  // keys the default holds about 250,000 entries; with short keys max_entries binds first.
  // Default: 1 GiB.
  size_t max_bytes = size_t{1} << 30;
  // See OverflowPolicy. Default: kEvictSoonestExpiring.
  OverflowPolicy overflow_policy = OverflowPolicy::kEvictSoonestExpiring;
  // How often each shard is swept of expired entries (by the checks that use it). Default: 1 s.
  std::chrono::microseconds sweep_interval = std::chrono::seconds(1);
  // Number of independently locked shards, rounded up to a power of two, at most 65536. Lowered,
  // if needed, so that each shard's share of max_entries is at least 1024 entries and its share of
  // max_bytes at least 1 MiB (a store of fewer than 2048 entries or 2 MiB has one shard, and its
  // bounds are exact). Default: 64.
  size_t shards = 64;
};

// Counters of a memory store, read without stopping it (values may be slightly outdated).
struct MemoryStoreStats {
  size_t entries = 0;
  // Bytes counted against max_bytes (see MemoryStoreOptions::max_bytes).
  size_t bytes = 0;
  uint64_t expired = 0;
  uint64_t evicted = 0;
  uint64_t denied_for_room = 0;
};

class MemoryStore : public Store {
 public:
  // The bytes an entry counts for its hash table slot: the table's 41 bytes a slot at its lowest
  // load factor after growing, 7/12 (70 bytes), rounded up.
  static constexpr size_t kEntryOverheadBytes = 72;

  // MemoryStore::EntryBytes()
  //
  // Returns the bytes an entry for a key of `key_size` bytes counts against max_bytes:
  // kEntryOverheadBytes, plus for a key longer than 15 bytes its heap copy as glibc's malloc sizes
  // it (the size plus 8, rounded up to 16, at least 32).
  static constexpr size_t EntryBytes(size_t key_size) {
    if (key_size <= 15) return kEntryOverheadBytes;
    const size_t chunk = (key_size + 8 + 15) & ~size_t{15};
    return kEntryOverheadBytes + (chunk < 32 ? 32 : chunk);
  }

  // MemoryStore::Create()
  //
  // Returns a new store, or InvalidArgument when an option is out of range (max_entries of 0,
  // max_bytes below kEntryOverheadBytes, shards of 0 or above 65536, a non-positive
  // sweep_interval).
  static absl::StatusOr<std::unique_ptr<MemoryStore>> Create(const MemoryStoreOptions& options);

  // MemoryStore::Stats()
  virtual MemoryStoreStats Stats() const = 0;

  // MemoryStore::SweepExpired()
  //
  // Removes every expired entry now and returns how many were removed.
  virtual size_t SweepExpired() = 0;

  std::string_view Name() const override { return "memory"; }
  bool AnswersInline() const override { return true; }
};

}  // namespace sluice

#endif  // SLUICE_MEMORY_STORE_H_
