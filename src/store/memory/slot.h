// Slot: one entry of the memory store, 40 bytes.
//
//   word   contents
//   key0   inline key bytes 0..7           | long key: address of its heap copy
//   key1   inline key bytes 8..14, length  | long key: length | kLongKeyTag   (see key_probe.h)
//   state0 algorithm state, first word     | sliding log: address of its SlidingLogState
//   state1 algorithm state, second word
//   meta   bits 0..55 expiry (us since the epoch), bits 56..58 the Algorithm
//
// Four algorithms fit their state in two words (entry_state.h says how); the sliding log keeps one
// time per admitted unit, so its state lives behind a pointer. The expiry is exact to the
// microsecond: 56 bits reach the year 4253. With the table's one control byte a slot costs 41 bytes
// at the table's load factor, which is 7/8 at most and 7/12 right after it grows by 1.5x.
//
// Thread safety: none; the shard's lock guards its slots.
#ifndef SLUICE_STORE_MEMORY_SLOT_H_
#define SLUICE_STORE_MEMORY_SLOT_H_

#include <cstdint>
#include <cstring>
#include <string_view>

#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/store/memory/key_probe.h"

namespace sluice::internal {

struct Slot {
  uint64_t key0;
  uint64_t key1;
  int64_t state0;
  int64_t state1;
  uint64_t meta;
};
static_assert(sizeof(Slot) == 40, "the per-key memory budget assumes a 40-byte slot");

inline constexpr int64_t kMaxExpiryUs = (int64_t{1} << 56) - 1;
inline constexpr uint64_t kExpiryMask = (uint64_t{1} << 56) - 1;

inline bool IsLongKey(const Slot& slot) { return (slot.key1 & kLongKeyTag) != 0; }

// The heap copy of a long key, whose address key0 holds. REQUIRES: IsLongKey(slot).
inline char* LongKeyBytes(const Slot& slot) {
  // The slot stores pointers as integer words to stay at 40 bytes (see the layout above).
  return reinterpret_cast<char*>(slot.key0);  // NOLINT(performance-no-int-to-ptr): tagged word
}

inline std::string_view SlotKey(const Slot& slot) {
  if (IsLongKey(slot)) return {LongKeyBytes(slot), static_cast<size_t>(slot.key1 & ~kLongKeyTag)};
  // key0 is the first member, so the slot's address is that of the inline bytes.
  return {reinterpret_cast<const char*>(&slot), static_cast<size_t>(slot.key1 >> 56)};
}

// Whether `slot` holds the key of `probe`.
inline bool KeyEquals(const Slot& slot, const KeyProbe& probe) {
  if (slot.key1 != probe.word1) return false;  // Length and kind (inline or long) differ.
  if (probe.is_inline()) return slot.key0 == probe.word0;
  return std::memcmp(LongKeyBytes(slot), probe.key.data(), probe.key.size()) == 0;
}

// The hash MakeKeyProbe() gives the slot's key, for rehashing.
inline uint64_t SlotHash(const Slot& slot, uint64_t seed) {
  if (IsLongKey(slot)) return HashLongKey(SlotKey(slot), seed);
  return HashWords(slot.key0, slot.key1, seed);
}

inline Algorithm SlotAlgorithm(const Slot& slot) {
  return static_cast<Algorithm>((slot.meta >> 56) & 0x7);
}

inline int64_t SlotExpiry(const Slot& slot) {
  return static_cast<int64_t>(slot.meta & kExpiryMask);
}

// Whether the state in `slot` is equivalent to no state at `now_us` (docs/algorithms.md: from
// `now + reset_after` on).
inline bool IsExpired(const Slot& slot, int64_t now_us) { return now_us >= SlotExpiry(slot); }

inline void SetMeta(Slot& slot, Algorithm algorithm, int64_t expiry_us) {
  const int64_t clamped = expiry_us < 0 ? 0 : (expiry_us > kMaxExpiryUs ? kMaxExpiryUs : expiry_us);
  slot.meta = static_cast<uint64_t>(clamped) | (uint64_t{static_cast<uint8_t>(algorithm)} << 56);
}

inline algorithm::SlidingLogState* SlotLog(const Slot& slot) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): state0 holds the log's address (see the layout).
  return reinterpret_cast<algorithm::SlidingLogState*>(slot.state0);
}

// Copies the key of `probe` into a slot; a long key gets a heap copy that the slot owns.
inline void AssignKey(Slot& slot, const KeyProbe& probe) {
  slot.key1 = probe.word1;
  if (probe.is_inline()) {
    slot.key0 = probe.word0;
    return;
  }
  char* copy = new char[probe.key.size()];
  std::memcpy(copy, probe.key.data(), probe.key.size());
  slot.key0 = reinterpret_cast<uint64_t>(copy);
}

// Frees the sliding log behind a slot, if any, and zeroes the state.
inline void ReleaseState(Slot& slot) {
  if (SlotAlgorithm(slot) == Algorithm::kSlidingLog) delete SlotLog(slot);
  slot.state0 = 0;
  slot.state1 = 0;
}

// Frees everything a slot owns: the heap copy of a long key and the sliding log.
inline void ReleaseSlot(Slot& slot) {
  ReleaseState(slot);
  if (IsLongKey(slot)) delete[] LongKeyBytes(slot);
}

}  // namespace sluice::internal

#endif  // SLUICE_STORE_MEMORY_SLOT_H_
