#include "src/server/dashboard/space_saving.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace sluice::server {

SpaceSaving::SpaceSaving(SpaceSavingOptions options)
    : options_(options),
      slots_(std::max<size_t>(options.capacity, 1)),
      keys_(slots_.size() * options.max_key_bytes, '\0'),
      heap_(slots_.size()),
      // Sized once, past the 7/8 load factor, so that Add() never grows it (nor allocates).
      index_(slots_.size() * 8 / 7 + 1) {
  for (size_t i = 0; i < heap_.size(); ++i) {
    heap_[i] = i;
    slots_[i].heap_pos = i;
  }
}

void SpaceSaving::SetKey(size_t slot, std::string_view key, bool truncated) {
  if (!key.empty())
    std::memcpy(keys_.data() + slot * options_.max_key_bytes, key.data(), key.size());
  slots_[slot].key_len = static_cast<uint32_t>(key.size());
  slots_[slot].truncated = truncated;
}

void SpaceSaving::Swap(size_t a, size_t b) {
  std::swap(heap_[a], heap_[b]);
  slots_[heap_[a]].heap_pos = a;
  slots_[heap_[b]].heap_pos = b;
}

void SpaceSaving::SiftDown(size_t pos) {
  // Only the used prefix of the heap holds counted slots; the unused ones (count 0) sit after it.
  const size_t n = used_;
  while (true) {
    const size_t l = 2 * pos + 1;
    const size_t r = l + 1;
    size_t smallest = pos;
    if (l < n && slots_[heap_[l]].count < slots_[heap_[smallest]].count) smallest = l;
    if (r < n && slots_[heap_[r]].count < slots_[heap_[smallest]].count) smallest = r;
    if (smallest == pos) return;
    Swap(pos, smallest);
    pos = smallest;
  }
}

void SpaceSaving::Add(std::string_view key, uint64_t weight, int64_t now_ms, Tag tag,
                      int64_t since_ms) {
  const bool truncated = key.size() > options_.max_key_bytes;
  key = Cut(key);
  total_ += weight;
  if (auto it = index_.find(key); it != index_.end()) {
    Slot& s = slots_[it->second];
    s.count += weight;
    s.tag = tag;
    SiftDown(s.heap_pos);
    return;
  }
  size_t slot;
  uint64_t inherited = 0;
  if (used_ < slots_.size()) {
    // A free counter: the heap's used prefix grows by one, its new last element a count of 0,
    // which the increment below sifts into place.
    slot = heap_[used_];
    ++used_;
    // The new slot (count 0) is the smallest: bring it to the root before counting.
    size_t pos = slots_[slot].heap_pos;
    while (pos > 0) {
      Swap(pos, (pos - 1) / 2);
      pos = (pos - 1) / 2;
    }
  } else {
    slot = heap_[0];
    inherited = slots_[slot].count;
    index_.erase(KeyOf(slot));
  }
  Slot& s = slots_[slot];
  SetKey(slot, key, truncated);
  s.count = inherited + weight;
  s.error = inherited;
  s.since_ms = since_ms != 0 ? since_ms : now_ms;
  s.tag = tag;
  index_.emplace(KeyOf(slot), slot);
  SiftDown(s.heap_pos);
}

int64_t SpaceSaving::SinceOf(std::string_view key) const {
  auto it = index_.find(Cut(key));
  return it == index_.end() ? 0 : slots_[it->second].since_ms;
}

std::vector<SpaceSaving::Entry> SpaceSaving::Top(size_t k) const {
  std::vector<size_t> order(heap_.begin(), heap_.begin() + static_cast<ptrdiff_t>(used_));
  k = std::min(k, order.size());
  auto larger = [this](size_t a, size_t b) {
    if (slots_[a].count != slots_[b].count) return slots_[a].count > slots_[b].count;
    return KeyOf(a) < KeyOf(b);
  };
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(k), order.end(), larger);
  std::vector<Entry> out;
  out.reserve(k);
  for (size_t i = 0; i < k; ++i) {
    const Slot& s = slots_[order[i]];
    out.push_back(Entry{.key = std::string(KeyOf(order[i])),
                        .truncated = s.truncated,
                        .count = s.count,
                        .error = s.error,
                        .since_ms = s.since_ms,
                        .tag = s.tag});
  }
  return out;
}

void SpaceSaving::Clear() {
  // Erased key by key rather than clear(), which may free the table: Add() must not allocate.
  for (size_t i = 0; i < used_; ++i) index_.erase(KeyOf(heap_[i]));
  for (Slot& s : slots_) {
    s.count = 0;
    s.error = 0;
    s.key_len = 0;
  }
  used_ = 0;
  total_ = 0;
}

size_t SpaceSaving::MemoryBytes() const {
  return sizeof(*this) + slots_.capacity() * sizeof(Slot) + keys_.capacity() +
         heap_.capacity() * sizeof(size_t) +
         index_.capacity() * (sizeof(std::pair<std::string_view, size_t>) + 1);
}

}  // namespace sluice::server
