// KeyProbe: a key prepared for lookup in the memory store, hashed once for both the shard and
// the slot table.
//
// A key of up to kMaxInlineKeySize bytes is kept inside its slot as two words: bytes 0..14 hold the
// key, zero-padded, and byte 15 holds its length. Such a key is compared with two integer
// comparisons and hashed without reading the string again. A longer key lives on the heap; its
// second word is then its length tagged with kLongKeyTag, which no inline length can equal.
//
// Example:
//   KeyProbe probe = MakeKeyProbe("user:42", seed);
//   Shard& shard = shards[probe.hash & shard_mask];
//
// Thread safety: a value type; the functions are pure.
#ifndef SLUICE_STORE_MEMORY_KEY_PROBE_H_
#define SLUICE_STORE_MEMORY_KEY_PROBE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "absl/hash/hash.h"

namespace sluice::internal {

// Keys of up to this many bytes are stored inline in their slot.
inline constexpr size_t kMaxInlineKeySize = 15;
// The top byte of a long key's second word. Inline keys put their length (<= 15) there.
inline constexpr uint64_t kLongKeyTag = uint64_t{0x80} << 56;

struct KeyProbe {
  // The key itself; not owned.
  std::string_view key;
  // The slot form of the key (see the file comment). word0 is 0 for a long key.
  uint64_t word0 = 0;
  uint64_t word1 = 0;
  // Bits 0..15 pick the shard, bits 16..22 are the control byte and the high bits the home slot.
  uint64_t hash = 0;

  bool is_inline() const { return key.size() <= kMaxInlineKeySize; }
};

namespace key_probe_internal {

inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline uint64_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The 64x64->128 multiply folded to 64 bits (as in wyhash): one multiply mixes every input bit
// into the high bits, which pick the home slot.
inline uint64_t Mix(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

}  // namespace key_probe_internal

// HashWords()
//
// Returns the hash of a key given in slot form. Used at lookup and again when a table rehashes,
// so slots need not store their hash.
inline uint64_t HashWords(uint64_t word0, uint64_t word1, uint64_t seed) {
  using key_probe_internal::Mix;
  return Mix(Mix(word0 ^ seed ^ 0xa0761d6478bd642full, word1 ^ 0xe7037ed1a0b428dbull) ^ seed,
             0x8ebc6af09c88c6e3ull);
}

// HashLongKey()
//
// Returns the hash of a key longer than kMaxInlineKeySize.
inline uint64_t HashLongKey(std::string_view key, uint64_t seed) {
  // Debian's Abseil has its own string_view type, which absl::Hash takes.
  return HashWords(absl::Hash<absl::string_view>{}(absl::string_view(key.data(), key.size())),
                   key.size() | kLongKeyTag, seed);
}

// MakeKeyProbe()
//
// Returns `key` in slot form with its hash. REQUIRES: !key.empty().
inline KeyProbe MakeKeyProbe(std::string_view key, uint64_t seed) {
  using key_probe_internal::Load32;
  using key_probe_internal::Load64;
  KeyProbe probe;
  probe.key = key;
  const char* p = key.data();
  const size_t n = key.size();
  if (n > kMaxInlineKeySize) {
    probe.word1 = n | kLongKeyTag;
    probe.hash = HashLongKey(key, seed);
    return probe;
  }
  // Overlapping loads instead of a variable-length memcpy: every byte is read from inside the key,
  // and the overlap writes each byte to its own position twice.
  if (n >= 8) {
    probe.word0 = Load64(p);
    probe.word1 = n == 8 ? 0 : Load64(p + n - 8) >> ((16 - n) * 8);
  } else if (n >= 4) {
    probe.word0 = Load32(p) | (Load32(p + n - 4) << ((n - 4) * 8));
  } else {
    const auto byte = [p](size_t i) { return uint64_t{static_cast<unsigned char>(p[i])}; };
    probe.word0 = byte(0) | (byte(n / 2) << (n / 2 * 8)) | (byte(n - 1) << ((n - 1) * 8));
  }
  probe.word1 |= uint64_t{n} << 56;
  probe.hash = HashWords(probe.word0, probe.word1, seed);
  return probe;
}

}  // namespace sluice::internal

#endif  // SLUICE_STORE_MEMORY_KEY_PROBE_H_
