// Control bytes and Group: the probing primitives of SlotTable, as in absl's raw_hash_set.
//
// Each slot has one control byte: empty, deleted, or (when full) 7 bits of its key's hash. A Group
// is 16 consecutive control bytes, compared with one SSE2 instruction each for a hash match, for
// empty slots, and for empty-or-deleted slots.
//
// Example:
//   Group group(ctrl + pos);
//   for (uint32_t m = group.Match(H2(hash)); m != 0; m &= m - 1) { ... }
//
// Thread safety: value types over memory the caller guards.
#ifndef SLUICE_STORE_MEMORY_CTRL_GROUP_H_
#define SLUICE_STORE_MEMORY_CTRL_GROUP_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sluice::internal {

// Control bytes, as in absl's raw_hash_set: a full slot holds 7 bits of its hash (0..127), so
// "empty or deleted" is the sign bit.
inline constexpr int8_t kEmpty = -128;
inline constexpr int8_t kDeleted = -2;
inline constexpr size_t kGroupWidth = 16;
// The control byte of a full slot: 7 bits of the hash that neither the shard (bits 0..15) nor
// the home slot (the high bits) depends on.
inline int8_t H2(uint64_t hash) { return static_cast<int8_t>((hash >> 16) & 0x7f); }

#if defined(__SSE2__)
class Group {
 public:
  explicit Group(const int8_t* ctrl)
      : bytes_(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ctrl))) {}

  uint32_t Match(int8_t h2) const { return MaskOf(_mm_cmpeq_epi8(bytes_, _mm_set1_epi8(h2))); }
  uint32_t MaskEmpty() const { return MaskOf(_mm_cmpeq_epi8(bytes_, _mm_set1_epi8(kEmpty))); }
  uint32_t MaskEmptyOrDeleted() const { return MaskOf(bytes_); }

 private:
  static uint32_t MaskOf(__m128i v) { return static_cast<uint32_t>(_mm_movemask_epi8(v)); }

  __m128i bytes_;
};
#else
// Portable fallback: the same masks, one byte at a time.
class Group {
 public:
  explicit Group(const int8_t* ctrl) { std::memcpy(bytes_, ctrl, kGroupWidth); }

  uint32_t Match(int8_t h2) const {
    return MaskWhere([h2](int8_t c) { return c == h2; });
  }
  uint32_t MaskEmpty() const {
    return MaskWhere([](int8_t c) { return c == kEmpty; });
  }
  uint32_t MaskEmptyOrDeleted() const {
    return MaskWhere([](int8_t c) { return c < 0; });
  }

 private:
  template <typename Pred>
  uint32_t MaskWhere(Pred pred) const {
    uint32_t mask = 0;
    for (size_t i = 0; i < kGroupWidth; ++i) mask |= uint32_t{pred(bytes_[i])} << i;
    return mask;
  }

  int8_t bytes_[kGroupWidth];
};
#endif

}  // namespace sluice::internal

#endif  // SLUICE_STORE_MEMORY_CTRL_GROUP_H_
