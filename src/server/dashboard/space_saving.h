// SpaceSaving: the heaviest keys of a stream in fixed memory (Metwally, Agrawal and El Abbadi,
// "Efficient computation of frequent and top-k elements in data streams", 2005).
//
// It keeps at most `capacity` counters. A key already counted is incremented; a new key takes a
// free counter, or else the smallest one, whose count it inherits as its error. Any key counted
// more than N / capacity times (N the total added) is in the table, and each count overestimates
// its key's true count by at most its `error`. Keys longer than `max_key_bytes` are cut to that
// length (and flagged), so memory is bounded in bytes whatever the keys: MemoryBytes() is fixed at
// construction and Add() never allocates.
//
// Example:
//   SpaceSaving top({.capacity = 64, .max_key_bytes = 128});
//   top.Add("edge:remote_address:10.0.0.1", 1, now_ms, {});
//   for (const SpaceSaving::Entry& e : top.Top(10)) ...
//
// Thread safety: not thread-safe; the Dashboard (dashboard.h) holds one per shard under a lock.
#ifndef SLUICE_SERVER_DASHBOARD_SPACE_SAVING_H_
#define SLUICE_SERVER_DASHBOARD_SPACE_SAVING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace sluice::server {

struct SpaceSavingOptions {
  // Counters kept. Default: 64.
  size_t capacity = 64;
  // Longest key kept; longer keys are cut. Default: 128.
  size_t max_key_bytes = 128;
};

class SpaceSaving {
 public:
  // What the caller attaches to a key: the limit it was over, for the dashboard. Kept from the
  // key's latest Add().
  struct Tag {
    uint32_t requests_per_unit = 0;
    uint8_t unit = 0;
  };
  struct Entry {
    std::string key;
    bool truncated = false;
    uint64_t count = 0;
    // Upper bound of the overcount: count - error <= true count <= count.
    uint64_t error = 0;
    // When the key took its counter, in the caller's milliseconds.
    int64_t since_ms = 0;
    Tag tag{};
  };

  explicit SpaceSaving(SpaceSavingOptions options = {});
  SpaceSaving(const SpaceSaving&) = delete;
  SpaceSaving& operator=(const SpaceSaving&) = delete;
  ~SpaceSaving() = default;

  // Counts `weight` for `key` (cut to max_key_bytes) at `now_ms`. A key new to the table starts
  // with `since_ms` when it is not 0, else `now_ms`.
  void Add(std::string_view key, uint64_t weight, int64_t now_ms, Tag tag, int64_t since_ms = 0);

  // The since_ms of `key` (cut as Add() cuts it), or 0 when it has no counter.
  int64_t SinceOf(std::string_view key) const;

  // Returns the `k` largest counters, largest first.
  std::vector<Entry> Top(size_t k) const;

  // Forgets every key (the memory stays).
  void Clear();

  // Total weight added since construction or Clear().
  uint64_t total() const { return total_; }
  size_t size() const { return used_; }

  // Bytes this table holds; fixed at construction.
  size_t MemoryBytes() const;

 private:
  struct Slot {
    uint64_t count = 0;
    uint64_t error = 0;
    int64_t since_ms = 0;
    uint32_t key_len = 0;
    bool truncated = false;
    Tag tag{};
    size_t heap_pos = 0;
  };

  std::string_view KeyOf(size_t slot) const {
    return {keys_.data() + slot * options_.max_key_bytes, slots_[slot].key_len};
  }
  std::string_view Cut(std::string_view key) const { return key.substr(0, options_.max_key_bytes); }
  void SetKey(size_t slot, std::string_view key, bool truncated);
  // Restores the min-heap order after slot's count grew.
  void SiftDown(size_t pos);
  void Swap(size_t a, size_t b);

  const SpaceSavingOptions options_;
  std::vector<Slot> slots_;
  // One max_key_bytes cell per slot: the keys' bytes, which index_ views.
  std::string keys_;
  // A min-heap of slot numbers by count: heap_[0] is the counter a new key replaces.
  std::vector<size_t> heap_;
  absl::flat_hash_map<std::string_view, size_t> index_;
  size_t used_ = 0;
  uint64_t total_ = 0;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_DASHBOARD_SPACE_SAVING_H_
