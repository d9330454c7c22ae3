#include "src/store/memory/shard.h"

#include <algorithm>
#include <chrono>

namespace sluice::internal {
namespace {

bool IsKept(const Slot& slot, std::span<const KeyProbe* const> keep) {
  for (const KeyProbe* probe : keep) {
    if (KeyEquals(slot, *probe)) return true;
  }
  return false;
}

}  // namespace

Shard::Shard(const ShardOptions& options, int64_t now_us)
    : options_(options),
      // The table never grows past what max_bytes allows of entries with short keys.
      table_(options.hash_seed,
             std::min(options.max_entries, options.max_bytes / MemoryStore::kEntryOverheadBytes)),
      next_sweep_us_(now_us + options.sweep_interval_us),
      rng_(options.rng_seed) {}

uint64_t Shard::NextRandom() {
  // splitmix64: the sample only needs to start somewhere unpredictable-enough, cheaply.
  uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void Shard::SweepSome(int64_t now_us, size_t budget) {
  const size_t capacity = table_.capacity();
  // The table may have been reallocated since the last step; a pass then skips or repeats some
  // slots, which later passes and lazy expiry make up for.
  const size_t begin = std::min(sweep_cursor_, capacity);
  const size_t end = std::min(capacity, begin + budget);
  for (size_t i = begin; i < end; ++i) {
    if (table_.IsFull(i) && IsExpired(table_.at(i), now_us)) {
      Erase(i);
      ++expired_;
    }
  }
  sweep_cursor_ = end;
  if (end == capacity) {
    sweep_cursor_ = 0;
    next_sweep_us_ = now_us + options_.sweep_interval_us;
    table_.ShrinkIfSparse();
  }
}

size_t Shard::SweepAll(int64_t now_us) {
  const uint64_t before = expired_;
  sweep_cursor_ = 0;
  SweepSome(now_us, table_.capacity());
  return static_cast<size_t>(expired_ - before);
}

void Shard::Erase(size_t index) {
  bytes_ -= MemoryStore::EntryBytes(SlotKey(table_.at(index)).size());
  table_.EraseAt(index);
}

void Shard::EraseExpired(Slot* slot) {
  Erase(table_.IndexOf(slot));
  ++expired_;
}

Slot* Shard::Insert(const KeyProbe& probe, int64_t now_us, std::span<const KeyProbe* const> keep) {
  const size_t bytes = MemoryStore::EntryBytes(probe.key.size());
  // A key that could not fit in an empty shard is refused before anything is evicted for it.
  if (bytes > options_.max_bytes) return nullptr;
  const bool may_evict = options_.overflow_policy == OverflowPolicy::kEvictSoonestExpiring;
  while (!Fits(bytes)) {
    if (!MakeRoom(now_us, keep, may_evict)) return nullptr;
  }
  bytes_ += bytes;
  return table_.Insert(probe);
}

bool Shard::MakeRoom(int64_t now_us, std::span<const KeyProbe* const> keep, bool may_evict) {
  const size_t capacity = table_.capacity();
  if (capacity == 0) return false;
  // The sample is the first kEvictionSample entries from a random slot on. Slots are placed by
  // hash, so neighbours are as good as a random sample, and they share cache lines.
  auto index = static_cast<size_t>((static_cast<unsigned __int128>(NextRandom()) * capacity) >> 64);
  size_t best = capacity;
  int64_t best_expiry = 0;
  size_t sampled = 0;
  for (size_t scanned = 0; scanned < capacity && sampled < kEvictionSample; ++scanned) {
    if (table_.IsFull(index) && !IsKept(table_.at(index), keep)) {
      const Slot& slot = table_.at(index);
      ++sampled;
      if (IsExpired(slot, now_us)) {
        Erase(index);
        ++expired_;
        return true;
      }
      if (best == capacity || SlotExpiry(slot) < best_expiry) {
        best = index;
        best_expiry = SlotExpiry(slot);
      }
    }
    index = index + 1 == capacity ? 0 : index + 1;
  }
  if (!may_evict || best == capacity) return false;
  Erase(best);
  ++evicted_;
  return true;
}

size_t Shard::Reserve(std::span<const size_t> new_key_bytes, size_t kept_present, size_t kept_bytes,
                      int64_t now_us, std::span<const KeyProbe* const> keep) {
  // How many of the new keys, from the first, fit beside `entries` entries of `bytes` bytes.
  auto prefix_that_fits = [&](size_t entries, size_t bytes) {
    size_t fits = 0;
    for (const size_t b : new_key_bytes) {
      if (entries >= options_.max_entries || bytes > options_.max_bytes ||
          b > options_.max_bytes - bytes) {
        break;
      }
      ++entries;
      bytes += b;
      ++fits;
    }
    return fits;
  };
  if (options_.overflow_policy == OverflowPolicy::kEvictSoonestExpiring) {
    // Insert() can evict anything but the kept keys.
    return prefix_that_fits(kept_present, kept_bytes);
  }
  size_t wanted_bytes = 0;
  for (const size_t b : new_key_bytes) wanted_bytes += b;
  while ((table_.size() + new_key_bytes.size() > options_.max_entries ||
          bytes_ + wanted_bytes > options_.max_bytes) &&
         MakeRoom(now_us, keep, /*may_evict=*/false)) {
  }
  return prefix_that_fits(table_.size(), bytes_);
}

Decision Shard::DenyForRoom(const Limit& limit) {
  ++denied_for_room_;
  // remaining 0 and reset_after == retry_after: nothing will pass on this key before a sweep has
  // had the chance to free room, and retry_after must never exceed reset_after.
  const std::chrono::microseconds wait(options_.sweep_interval_us);
  return Decision{.allowed = false,
                  .limit = limit.Capacity(),
                  .remaining = 0,
                  .reset_after = wait,
                  .retry_after = wait,
                  .from_fallback = false};
}

void Shard::AddStats(MemoryStoreStats& stats) {
  ShardLock lock(&mu);
  stats.entries += table_.size();
  stats.bytes += bytes_;
  stats.expired += expired_;
  stats.evicted += evicted_;
  stats.denied_for_room += denied_for_room_;
}

}  // namespace sluice::internal
