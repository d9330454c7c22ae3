// SlotTable: the open-addressing hash table of one memory store shard.
//
// Swiss-table layout, as absl::flat_hash_map: one control byte per slot (empty, deleted, or 7 bits
// of the hash) in an array of its own, scanned 16 at a time with SSE2, then 40-byte slots. Two
// differences make it smaller than absl::flat_hash_map<Key, State> for this store:
//   - Capacity is any integer >= 16 (the home slot is hash * capacity >> 64, not hash & mask) and
//     grows by 1.5x, not 2x: the load factor stays in [7/12, 7/8] instead of [7/16, 7/8], so the
//     bytes per key range over 47..70 instead of 47..94 (41 bytes a slot).
//   - Probing is linear, by windows of 16 control bytes that start at any slot; the first 15
//     control bytes are mirrored after the last so a window never wraps.
// Big tables are mapped with mmap so that freeing one returns its pages at once, rather than
// leaving a hole in malloc's heap that still counts in the process's resident memory, and tables
// of 2 MiB or more ask for transparent huge pages (slot_table.cc says why).
//
// Example:
//   SlotTable table(seed, /*max_size=*/1000);
//   Slot* slot = table.Find(probe);
//   if (slot == nullptr) slot = table.Insert(probe);
//
// Thread safety: not thread-safe; the shard's lock guards it.
#ifndef SLUICE_STORE_MEMORY_SLOT_TABLE_H_
#define SLUICE_STORE_MEMORY_SLOT_TABLE_H_

#include <bit>
#include <cstddef>
#include <cstdint>

#include "src/store/memory/ctrl_group.h"
#include "src/store/memory/key_probe.h"
#include "src/store/memory/slot.h"

namespace sluice::internal {

class SlotTable {
 public:
  static constexpr size_t kMinCapacity = 16;

  // `max_size` bounds growth: the table never allocates more slots than that many entries need.
  SlotTable(uint64_t seed, size_t max_size) : seed_(seed), max_size_(max_size) {}
  SlotTable(const SlotTable&) = delete;
  SlotTable& operator=(const SlotTable&) = delete;
  ~SlotTable();

  // SlotTable::Find()
  //
  // Returns the slot holding `probe`'s key, or nullptr. Inline: it is most of a check.
  Slot* Find(const KeyProbe& probe) const {
    if (size_ == 0) return nullptr;
    const int8_t h2 = H2(probe.hash);
    size_t pos = Home(probe.hash);
    // Most keys sit at their home slot or one to three slots after it (40-byte slots, so within
    // two cache lines). Fetching those now overlaps the two cache misses of a lookup in a big
    // table (control bytes, then the slot) instead of paying them in turn.
    const char* home = reinterpret_cast<const char*>(&slots_[pos]);
    __builtin_prefetch(home);
    if (pos + 2 < capacity_) __builtin_prefetch(home + 64);  // Inside slot pos + 1 or pos + 2.
    while (true) {
      const Group group(ctrl_ + pos);
      for (uint32_t match = group.Match(h2); match != 0; match &= match - 1) {
        size_t index = pos + static_cast<size_t>(std::countr_zero(match));
        if (index >= capacity_) index -= capacity_;
        if (KeyEquals(slots_[index], probe)) return &slots_[index];
      }
      // A window with an empty slot ends every probe sequence that reaches it.
      if (group.MaskEmpty() != 0) return nullptr;
      pos += kGroupWidth;
      if (pos >= capacity_) pos -= capacity_;
    }
  }

  // SlotTable::Insert()
  //
  // Inserts `probe`'s key with zero state and meta and returns its slot. May rehash, which
  // invalidates every Slot pointer and index. REQUIRES: Find(probe) == nullptr.
  Slot* Insert(const KeyProbe& probe);

  // SlotTable::EraseAt()
  //
  // Removes the entry at `index` and frees what its slot owns. Other slots do not move.
  // REQUIRES: IsFull(index).
  void EraseAt(size_t index);

  // SlotTable::IndexOf()
  size_t IndexOf(const Slot* slot) const { return static_cast<size_t>(slot - slots_); }

  // SlotTable::ShrinkIfSparse()
  //
  // Reallocates a table whose load has fallen below 1/8 (after a wave of keys expired), so memory
  // follows the live keys down as well as up.
  void ShrinkIfSparse();

  bool IsFull(size_t index) const { return ctrl_[index] >= 0; }
  Slot& at(size_t index) const { return slots_[index]; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Bytes allocated for control bytes and slots.
  size_t allocated_bytes() const { return AllocationSize(capacity_); }

 private:
  static size_t AllocationSize(size_t capacity);
  static size_t MaxLoad(size_t capacity) { return capacity * 7 / 8; }
  static size_t CapacityFor(size_t entries);

  size_t Home(uint64_t hash) const {
    return static_cast<size_t>((static_cast<unsigned __int128>(hash) * capacity_) >> 64);
  }
  // Returns the first empty or deleted slot on `hash`'s probe sequence.
  size_t FindInsertIndex(uint64_t hash) const;
  void SetCtrl(size_t index, int8_t value);
  void GrowOrCompact();
  void Rehash(size_t new_capacity);

  const uint64_t seed_;
  const size_t max_size_;
  int8_t* ctrl_ = nullptr;  // capacity_ + 15 bytes: the mirror of the first 15 follows.
  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
  // Inserts into empty slots left before the table must grow or drop its deleted markers.
  size_t growth_left_ = 0;
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_MEMORY_SLOT_TABLE_H_
