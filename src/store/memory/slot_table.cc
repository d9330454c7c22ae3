#include "src/store/memory/slot_table.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <new>

#include <sys/mman.h>

namespace sluice::internal {
namespace {

// Blocks at least this big are mapped directly (see the header comment).
constexpr size_t kMmapThreshold = size_t{256} << 10;
constexpr size_t kHugePage = size_t{2} << 20;

size_t CtrlBytes(size_t capacity) { return (capacity + kGroupWidth - 1 + 7) & ~size_t{7}; }

// Blocks of 2 MiB or more are placed at a 2 MiB boundary and marked for transparent huge pages.
// A random lookup in a big table misses the TLB as well as the cache, and on a virtual machine
// that page walk costs as much again as the miss; with huge pages one TLB entry covers 2 MiB of
// slots. The mapping is trimmed to exactly `bytes`, so the only cost is address space, never
// resident memory: a tail that does not fill a huge page stays on 4 KiB pages.
void* AllocateBlock(size_t bytes) {
  if (bytes < kMmapThreshold) return ::operator new(bytes);
  const size_t reserved = bytes >= kHugePage ? bytes + kHugePage : bytes;
  char* const mapped = static_cast<char*>(
      mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (mapped == MAP_FAILED) throw std::bad_alloc();  // As operator new reports running out.
  if (reserved == bytes) return mapped;
  // Round up by pointer arithmetic on `mapped`, not by casting an integer back to a pointer.
  const size_t misalignment = reinterpret_cast<uintptr_t>(mapped) & (kHugePage - 1);
  char* const block = misalignment == 0 ? mapped : mapped + (kHugePage - misalignment);
  if (block != mapped) munmap(mapped, static_cast<size_t>(block - mapped));
  const auto tail = static_cast<size_t>(mapped + reserved - (block + bytes));
  if (tail > 0) munmap(block + bytes, tail);
  // Advice only: where huge pages are disabled this fails and 4 KiB pages serve.
  madvise(block, bytes, MADV_HUGEPAGE);
  return block;
}

void FreeBlock(void* block, size_t bytes) {
  if (block == nullptr) return;
  if (bytes < kMmapThreshold) {
    ::operator delete(block);
  } else {
    munmap(block, bytes);
  }
}

}  // namespace

SlotTable::~SlotTable() {
  for (size_t i = 0; i < capacity_; ++i) {
    if (IsFull(i)) ReleaseSlot(slots_[i]);
  }
  FreeBlock(ctrl_, AllocationSize(capacity_));
}

size_t SlotTable::AllocationSize(size_t capacity) {
  return capacity == 0 ? 0 : CtrlBytes(capacity) + capacity * sizeof(Slot);
}

size_t SlotTable::CapacityFor(size_t entries) {
  // The smallest capacity whose MaxLoad() holds `entries`.
  size_t capacity = std::max(kMinCapacity, entries + entries / 7 + 1);
  while (MaxLoad(capacity) < entries) ++capacity;
  return capacity;
}

size_t SlotTable::FindInsertIndex(uint64_t hash) const {
  size_t pos = Home(hash);
  while (true) {
    const uint32_t free = Group(ctrl_ + pos).MaskEmptyOrDeleted();
    if (free != 0) {
      const size_t index = pos + static_cast<size_t>(std::countr_zero(free));
      return index >= capacity_ ? index - capacity_ : index;
    }
    pos += kGroupWidth;
    if (pos >= capacity_) pos -= capacity_;
  }
}

void SlotTable::SetCtrl(size_t index, int8_t value) {
  ctrl_[index] = value;
  if (index < kGroupWidth - 1) ctrl_[capacity_ + index] = value;
}

Slot* SlotTable::Insert(const KeyProbe& probe) {
  size_t index = capacity_ == 0 ? 0 : FindInsertIndex(probe.hash);
  // A deleted slot can be reused at no cost; an empty one uses up growth.
  if (capacity_ == 0 || (growth_left_ == 0 && ctrl_[index] == kEmpty)) {
    GrowOrCompact();
    index = FindInsertIndex(probe.hash);
  }
  if (ctrl_[index] == kEmpty) --growth_left_;
  SetCtrl(index, H2(probe.hash));
  ++size_;
  Slot& slot = slots_[index];
  AssignKey(slot, probe);
  slot.state0 = 0;
  slot.state1 = 0;
  slot.meta = 0;
  return &slot;
}

void SlotTable::EraseAt(size_t index) {
  ReleaseSlot(slots_[index]);
  --size_;
  // As absl: if every window of 16 that contains `index` also contains an empty slot, no probe ever
  // continued past this slot, so it can become empty; otherwise it must stay a deleted marker.
  const size_t before =
      index >= kGroupWidth ? index - kGroupWidth : index + capacity_ - kGroupWidth;
  const uint32_t empty_after = Group(ctrl_ + index).MaskEmpty();
  const uint32_t empty_before = Group(ctrl_ + before).MaskEmpty();
  const bool was_never_full =
      empty_after != 0 && empty_before != 0 &&
      static_cast<size_t>(std::countr_zero(empty_after)) +
              static_cast<size_t>(std::countl_zero(static_cast<uint16_t>(empty_before))) <
          kGroupWidth;
  SetCtrl(index, was_never_full ? kEmpty : kDeleted);
  if (was_never_full) ++growth_left_;
}

void SlotTable::GrowOrCompact() {
  if (capacity_ == 0) {
    Rehash(kMinCapacity);
    return;
  }
  // Headroom above max_size_ keeps a full shard that evicts and inserts from compacting its
  // deleted markers on every insert.
  const size_t limit = CapacityFor(max_size_ + max_size_ / 8);
  const size_t deleted = MaxLoad(capacity_) - size_ - growth_left_;
  if (capacity_ >= limit || deleted >= MaxLoad(capacity_) / 4) {
    Rehash(std::max(capacity_, CapacityFor(size_ + 1)));
  } else {
    Rehash(std::max(CapacityFor(size_ + 1), std::min(capacity_ + capacity_ / 2, limit)));
  }
}

void SlotTable::ShrinkIfSparse() {
  if (capacity_ <= kMinCapacity || size_ >= capacity_ / 8) return;
  Rehash(size_ == 0 ? 0 : CapacityFor(size_ * 2));
}

void SlotTable::Rehash(size_t new_capacity) {
  int8_t* const old_ctrl = ctrl_;
  Slot* const old_slots = slots_;
  const size_t old_capacity = capacity_;

  ctrl_ = nullptr;
  slots_ = nullptr;
  capacity_ = new_capacity;
  growth_left_ = 0;
  if (new_capacity > 0) {
    char* block = static_cast<char*>(AllocateBlock(AllocationSize(new_capacity)));
    ctrl_ = reinterpret_cast<int8_t*>(block);
    std::memset(ctrl_, static_cast<unsigned char>(kEmpty), new_capacity + kGroupWidth - 1);
    slots_ = reinterpret_cast<Slot*>(block + CtrlBytes(new_capacity));
    for (size_t i = 0; i < old_capacity; ++i) {
      if (old_ctrl[i] < 0) continue;
      const uint64_t hash = SlotHash(old_slots[i], seed_);
      const size_t index = FindInsertIndex(hash);
      SetCtrl(index, H2(hash));
      // Slots own their long key and sliding log through plain addresses: moving is copying.
      std::memcpy(&slots_[index], &old_slots[i], sizeof(Slot));
    }
    growth_left_ = MaxLoad(new_capacity) - size_;
  }
  FreeBlock(old_ctrl, AllocationSize(old_capacity));
}

}  // namespace sluice::internal
