// Shard: one independently locked part of the memory store: a SlotTable, its expiry sweep and its
// share of max_entries.
//
// Expiry is exact and lazy: FindLive() erases an entry whose state no longer matters when a check
// reaches it. On top of that, once `sweep_interval` has passed since a shard's last full pass, each
// check on the shard examines kSweepSlotsPerCheck more slots until the pass completes, so
// reclaiming costs every check a bounded, small amount and never one check the whole shard. All of
// it is driven by the time the checks pass in, so a ManualClock makes it deterministic.
//
// Each shard holds at most its share of max_entries and of max_bytes (the shares add up to the
// store's bounds; bytes as MemoryStore::EntryBytes() counts them). When a new key finds its shard
// full, the shard samples kEvictionSample entries: an expired one is reclaimed; otherwise
// kEvictSoonestExpiring evicts the sampled entry that expires soonest and kDenyNewKeys refuses
// the key. A long key may need several entries' room; the shard repeats until it fits.
//
// Thread safety: every method requires `mu`, except AddStats(), which takes it.
#ifndef SLUICE_STORE_MEMORY_SHARD_H_
#define SLUICE_STORE_MEMORY_SHARD_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/base/thread_annotations.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"

#include "src/store/memory/key_probe.h"
#include "src/store/memory/shard_mutex.h"
#include "src/store/memory/slot.h"
#include "src/store/memory/slot_table.h"

namespace sluice::internal {

// Slots a check examines when its shard is due for a sweep: a few hundred nanoseconds.
inline constexpr size_t kSweepSlotsPerCheck = 256;
// Entries sampled to find one to reclaim or evict (Redis samples 5).
inline constexpr size_t kEvictionSample = 8;

struct ShardOptions {
  // The store's hash seed (see key_probe.h); the same for every shard.
  uint64_t hash_seed = 0;
  // Seeds the choice of eviction samples.
  uint64_t rng_seed = 0;
  size_t max_entries = 0;
  size_t max_bytes = 0;
  OverflowPolicy overflow_policy = OverflowPolicy::kEvictSoonestExpiring;
  int64_t sweep_interval_us = 0;
};

// Padded to a cache line so that two cores working on neighbouring shards do not share one.
class alignas(64) Shard {
 public:
  Shard(const ShardOptions& options, int64_t now_us);
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;
  ~Shard() = default;

  // Shard::MaybeSweep()
  //
  // Continues the sweep when it is due; called by every check on the shard.
  void MaybeSweep(int64_t now_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (now_us >= next_sweep_us_) SweepSome(now_us, kSweepSlotsPerCheck);
  }

  // Shard::SweepAll()
  //
  // Removes every expired entry and returns how many it removed.
  size_t SweepAll(int64_t now_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Shard::FindLive()
  //
  // Returns the slot of `probe`'s key, or nullptr when it is absent or expired (an expired entry is
  // erased). The pointer stays valid until the next insert into this shard.
  Slot* FindLive(const KeyProbe& probe, int64_t now_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Slot* slot = table_.Find(probe);
    if (slot != nullptr && IsExpired(*slot, now_us)) {
      EraseExpired(slot);
      return nullptr;
    }
    return slot;
  }

  // Shard::Insert()
  //
  // Inserts `probe`'s key (absent) with zero state, making room under the overflow policy first
  // when the shard is full. Entries whose keys are in `keep` are neither evicted nor reclaimed.
  // Returns nullptr when there is no room (kDenyNewKeys, or nothing but `keep` to evict).
  Slot* Insert(const KeyProbe& probe, int64_t now_us, std::span<const KeyProbe* const> keep)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Shard::Reserve()
  //
  // Returns how many of the new keys whose EntryBytes() are `new_key_bytes` fit, counted from the
  // first: room that exists, that reclaiming expired entries makes, or (kEvictSoonestExpiring)
  // that eviction will make while sparing the `keep` keys, `kept_present` of which (taking
  // `kept_bytes`) are stored in this shard. Never evicts; Insert() does.
  size_t Reserve(std::span<const size_t> new_key_bytes, size_t kept_present, size_t kept_bytes,
                 int64_t now_us, std::span<const KeyProbe* const> keep)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Shard::DenyForRoom()
  //
  // Returns the decision for a new key refused for lack of room, and counts it.
  Decision DenyForRoom(const Limit& limit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Shard::AddStats()
  //
  // Adds this shard's counters to `stats`.
  void AddStats(MemoryStoreStats& stats) ABSL_LOCKS_EXCLUDED(mu);

  ShardMutex mu;

 private:
  // Whether an entry of `bytes` more fits without making room.
  bool Fits(size_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return table_.size() < options_.max_entries && bytes_ + bytes <= options_.max_bytes;
  }
  // Removes the entry at `index` and stops counting its bytes.
  void Erase(size_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Reclaims one expired entry, or evicts one when `may_evict`, from a sample. Returns whether a
  // slot was freed.
  bool MakeRoom(int64_t now_us, std::span<const KeyProbe* const> keep, bool may_evict)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void SweepSome(int64_t now_us, size_t budget) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void EraseExpired(Slot* slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  uint64_t NextRandom() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  const ShardOptions options_;
  SlotTable table_ ABSL_GUARDED_BY(mu);
  int64_t next_sweep_us_ ABSL_GUARDED_BY(mu);
  size_t sweep_cursor_ ABSL_GUARDED_BY(mu) = 0;
  uint64_t rng_ ABSL_GUARDED_BY(mu);
  // Bytes of the entries, as MemoryStore::EntryBytes() counts them.
  size_t bytes_ ABSL_GUARDED_BY(mu) = 0;
  uint64_t expired_ ABSL_GUARDED_BY(mu) = 0;
  uint64_t evicted_ ABSL_GUARDED_BY(mu) = 0;
  uint64_t denied_for_room_ ABSL_GUARDED_BY(mu) = 0;
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_MEMORY_SHARD_H_
