// The embedded memory store: a fixed array of Shards, each a SlotTable under its own lock.
//
// Why locks and not one atomic word per key (folly's TokenBucket): GCRA's exact TAT and every
// other state here take two words, the sliding log a container, and CheckAll() must decide several
// keys as one step. An uncontended shard lock costs about as much as one CAS, and 64 shards keep
// two cores from contending except on one hot key.
#include "sluice/memory_store.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include "sluice/status_macros.h"

#include "src/store/memory/entry_state.h"
#include "src/store/memory/key_probe.h"
#include "src/store/memory/shard.h"
#include "src/store/memory/slot.h"

namespace sluice {
namespace {

using internal::EntryState;
using internal::KeyProbe;
using internal::Shard;
using internal::Slot;

constexpr size_t kMaxShards = size_t{1} << 16;
// Each shard bounds its own share of max_entries and max_bytes, so small bounds get fewer shards:
// with shares of at least this many entries and bytes, a shard fills up close to when the whole
// store does.
constexpr size_t kMinEntriesPerShard = 1024;
constexpr size_t kMinBytesPerShard = size_t{1} << 20;
// Above this many checks, CheckAll() groups keys with a hash map instead of comparing pairs.
constexpr size_t kPairwiseKeyLimit = 16;
// The algorithms require 0 <= now < 2^52 us (the year 2112; docs/algorithms.md).
constexpr uint64_t kMaxNowUs = uint64_t{1} << 52;

absl::Status ClockOutOfRange(int64_t now_us) {
  return absl::InternalError(
      absl::StrCat("clock: EpochNow() returned ", now_us, "us, outside [0, 2^52)"));
}

// The work on one distinct key of a CheckAll() call.
struct KeyWork {
  KeyProbe probe;
  Shard* shard = nullptr;
  // The live stored entry, under any algorithm; valid until this call inserts.
  Slot* slot = nullptr;
  // This call's copy of the state, once a check has decided on it; the stored state until then.
  std::optional<EntryState> state;
  // Whether `state` holds costs recorded by this call.
  bool dirty = false;
  int64_t expiry_us = 0;
  bool denied_for_room = false;
};

// Locks a set of shards in ascending address order, so that two calls sharing shards always take
// them in the same order and cannot deadlock. The set is dynamic, beyond the reach of the static
// thread-safety analysis.
class ShardLocks {
 public:
  explicit ShardLocks(std::span<Shard* const> shards) ABSL_NO_THREAD_SAFETY_ANALYSIS
      : shards_(shards) {
    for (Shard* shard : shards_) shard->mu.Lock();
  }
  ShardLocks(const ShardLocks&) = delete;
  ShardLocks& operator=(const ShardLocks&) = delete;
  ~ShardLocks() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (size_t i = shards_.size(); i-- > 0;) shards_[i]->mu.Unlock();  // Reverse order.
  }

 private:
  std::span<Shard* const> shards_;
};

// The decision a cost-0 check gets from the stored state (nothing is written).
Decision Peek(const Limit& limit, Slot* slot, int64_t now_us) {
  if (slot != nullptr && internal::SlotAlgorithm(*slot) == limit.algorithm) {
    return internal::DecideOnSlot(limit, *slot, now_us, 0);
  }
  EntryState fresh = internal::FreshState(limit.algorithm);
  return internal::DecideOnState(limit, fresh, now_us, 0);
}

class MemoryStoreImpl final : public MemoryStore {
 public:
  MemoryStoreImpl(const MemoryStoreOptions& options, Clock& clock, size_t shard_count)
      : clock_(clock), seed_(absl::Hash<const void*>{}(this)), shard_mask_(shard_count - 1) {
    const int64_t now_us = NowUs();
    shards_.reserve(shard_count);
    for (size_t i = 0; i < shard_count; ++i) {
      // The shares add up to max_entries exactly.
      const size_t share =
          options.max_entries / shard_count + (i < options.max_entries % shard_count);
      const size_t bytes_share =
          options.max_bytes / shard_count + (i < options.max_bytes % shard_count);
      shards_.push_back(std::make_unique<Shard>(
          internal::ShardOptions{.hash_seed = seed_,
                                 .rng_seed = seed_ ^ (i * 0x9e3779b97f4a7c15ull),
                                 .max_entries = share,
                                 .max_bytes = bytes_share,
                                 .overflow_policy = options.overflow_policy,
                                 .sweep_interval_us = options.sweep_interval.count()},
          now_us));
    }
  }

  // One check takes the single-key path: one shard lock, no grouping of keys.
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    if (checks.size() != 1) {
      std::move(done)(DecideMany(checks));
      return;
    }
    absl::StatusOr<Decision> one = DecideOne(checks[0]);
    if (!one.ok()) {
      std::move(done)(one.status());
      return;
    }
    const bool allowed = one->allowed;
    std::move(done)(MultiDecision{.allowed = allowed, .decisions = {*std::move(one)}});
  }

  MemoryStoreStats Stats() const override {
    MemoryStoreStats stats;
    for (const auto& shard : shards_) shard->AddStats(stats);
    return stats;
  }

  size_t SweepExpired() override {
    const int64_t now_us = NowUs();
    size_t removed = 0;
    for (const auto& shard : shards_) {
      internal::ShardLock lock(&shard->mu);
      removed += shard->SweepAll(now_us);
    }
    return removed;
  }

 private:
  int64_t NowUs() const { return clock_.EpochNow().count(); }
  Shard& ShardFor(uint64_t hash) const { return *shards_[hash & shard_mask_]; }

  // Decide() of one check, and of several. REQUIRES: validated checks.
  absl::StatusOr<Decision> DecideOne(const LimitCheck& check);
  absl::StatusOr<MultiDecision> DecideMany(std::span<const LimitCheck> checks);

  // Groups `checks` by distinct key into `keys`; key_of[i] is the index of checks[i]'s key.
  void GroupKeys(std::span<const LimitCheck> checks, absl::InlinedVector<KeyWork, 4>& keys,
                 absl::InlinedVector<uint32_t, 4>& key_of) const;

  // The body of CheckAll(), with every shard of `keys` locked.
  MultiDecision CheckAllLocked(std::span<const LimitCheck> checks, std::span<KeyWork> keys,
                               std::span<const uint32_t> key_of, std::span<Shard* const> shards,
                               int64_t now_us) ABSL_NO_THREAD_SAFETY_ANALYSIS;

  Clock& clock_;
  // Differs per store and per process (absl::Hash is seeded per process, and addresses move with
  // ASLR), so that clients cannot choose keys that all collide in one table.
  const uint64_t seed_;
  const size_t shard_mask_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

absl::StatusOr<Decision> MemoryStoreImpl::DecideOne(const LimitCheck& check) {
  const Limit& limit = check.limit;
  const int64_t cost = check.cost;
  const int64_t now_us = NowUs();
  if (static_cast<uint64_t>(now_us) >= kMaxNowUs) return ClockOutOfRange(now_us);
  const KeyProbe probe = internal::MakeKeyProbe(check.key, seed_);
  Shard& shard = ShardFor(probe.hash);
  internal::ShardLock lock(&shard.mu);
  shard.MaybeSweep(now_us);
  Slot* slot = shard.FindLive(probe, now_us);
  const internal::CheckMode mode = internal::ModeOf(check);
  if (slot != nullptr && internal::SlotAlgorithm(*slot) == limit.algorithm) {
    const Decision decision = internal::DecideOnSlot(limit, *slot, now_us, cost, mode);
    if (internal::Records(decision, cost, mode)) {
      internal::SetMeta(*slot, limit.algorithm, now_us + decision.reset_after.count());
    }
    return decision;
  }
  // No state under this algorithm. Decide on a fresh one and store it only if the check records:
  // a peek, a credit or a denial (unless it counts rejected hits) leaves a key that another
  // algorithm uses untouched, and creates none.
  EntryState fresh = internal::FreshState(limit.algorithm);
  const Decision decision = internal::DecideOnState(limit, fresh, now_us, cost, mode);
  if (check.refund || !internal::Records(decision, cost, mode)) return decision;
  if (slot == nullptr) {
    slot = shard.Insert(probe, now_us, {});
    if (slot == nullptr) return shard.DenyForRoom(limit);
  }
  internal::StoreState(*slot, std::move(fresh), now_us + decision.reset_after.count());
  return decision;
}

void MemoryStoreImpl::GroupKeys(std::span<const LimitCheck> checks,
                                absl::InlinedVector<KeyWork, 4>& keys,
                                absl::InlinedVector<uint32_t, 4>& key_of) const {
  absl::flat_hash_map<absl::string_view, uint32_t> index_of;
  const bool pairwise = checks.size() <= kPairwiseKeyLimit;
  for (const LimitCheck& check : checks) {
    const std::string_view key = check.key;
    std::optional<uint32_t> found;
    if (pairwise) {
      for (uint32_t k = 0; k < keys.size(); ++k) {
        if (keys[k].probe.key == key) {
          found = k;
          break;
        }
      }
    } else if (auto it = index_of.find(absl::string_view(key.data(), key.size()));
               it != index_of.end()) {
      found = it->second;
    }
    if (!found.has_value()) {
      found = static_cast<uint32_t>(keys.size());
      KeyWork& work = keys.emplace_back();
      work.probe = internal::MakeKeyProbe(key, seed_);
      work.shard = &ShardFor(work.probe.hash);
      if (!pairwise) index_of.emplace(absl::string_view(key.data(), key.size()), *found);
    }
    key_of.push_back(*found);
  }
}

absl::StatusOr<MultiDecision> MemoryStoreImpl::DecideMany(std::span<const LimitCheck> checks) {
  const int64_t now_us = NowUs();
  if (static_cast<uint64_t>(now_us) >= kMaxNowUs) return ClockOutOfRange(now_us);
  absl::InlinedVector<KeyWork, 4> keys;
  absl::InlinedVector<uint32_t, 4> key_of;
  GroupKeys(checks, keys, key_of);

  absl::InlinedVector<Shard*, 4> shards;
  for (const KeyWork& work : keys) shards.push_back(work.shard);
  std::sort(shards.begin(), shards.end(), std::less<>());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());

  ShardLocks locks(shards);
  return CheckAllLocked(checks, std::span<KeyWork>(keys.data(), keys.size()), key_of, shards,
                        now_us);
}

MultiDecision MemoryStoreImpl::CheckAllLocked(std::span<const LimitCheck> checks,
                                              std::span<KeyWork> keys,
                                              std::span<const uint32_t> key_of,
                                              std::span<Shard* const> shards, int64_t now_us) {
  for (Shard* shard : shards) shard->MaybeSweep(now_us);
  absl::InlinedVector<const KeyProbe*, 4> keep;
  for (KeyWork& work : keys) {
    work.slot = work.shard->FindLive(work.probe, now_us);
    keep.push_back(&work.probe);
  }

  // Decide every check in order, each on its key's copy as the checks before it left it, so that
  // repeated keys behave as if the checks ran one after another.
  MultiDecision result{.allowed = true, .decisions = std::vector<Decision>(checks.size())};
  for (size_t i = 0; i < checks.size(); ++i) {
    const LimitCheck& check = checks[i];
    KeyWork& work = keys[key_of[i]];
    const bool stored_matches =
        work.state.has_value()
            ? work.state->algorithm == check.limit.algorithm
            : work.slot != nullptr && internal::SlotAlgorithm(*work.slot) == check.limit.algorithm;
    Decision& decision = result.decisions[i];
    const internal::CheckMode mode = internal::ModeOf(check);
    bool records = false;
    if (stored_matches) {
      if (!work.state.has_value()) work.state = internal::CopyState(*work.slot);
      decision = internal::DecideOnState(check.limit, *work.state, now_us, check.cost, mode);
      records = decision.allowed && check.cost > 0;
    } else {
      // As in Check(): another algorithm's state gives way only to a check that records, and a
      // credit creates no state.
      EntryState fresh = internal::FreshState(check.limit.algorithm);
      decision = internal::DecideOnState(check.limit, fresh, now_us, check.cost, mode);
      records = decision.allowed && check.cost > 0 && !check.refund;
      if (records) work.state = std::move(fresh);
    }
    if (records) {
      work.dirty = true;
      work.expiry_us = now_us + decision.reset_after.count();
    }
  }

  // New keys need room in their shard; those that get none are denied.
  absl::InlinedVector<size_t, 4> new_key_bytes;
  for (Shard* shard : shards) {
    new_key_bytes.clear();
    size_t kept_present = 0;
    size_t kept_bytes = 0;
    for (const KeyWork& work : keys) {
      if (work.shard != shard) continue;
      const size_t bytes = EntryBytes(work.probe.key.size());
      if (work.slot != nullptr) {
        ++kept_present;
        kept_bytes += bytes;
      }
      if (work.slot == nullptr && work.dirty) new_key_bytes.push_back(bytes);
    }
    if (new_key_bytes.empty()) continue;
    size_t fits = shard->Reserve(new_key_bytes, kept_present, kept_bytes, now_us, keep);
    for (KeyWork& work : keys) {
      if (work.shard != shard || work.slot != nullptr || !work.dirty) continue;
      if (fits > 0) {
        --fits;
      } else {
        work.denied_for_room = true;
      }
    }
  }
  for (size_t i = 0; i < checks.size(); ++i) {
    const KeyWork& work = keys[key_of[i]];
    Decision& decision = result.decisions[i];
    if (work.denied_for_room && decision.allowed && checks[i].cost > 0) {
      decision = work.shard->DenyForRoom(checks[i].limit);
    }
    result.allowed = result.allowed && decision.allowed;
  }

  if (!result.allowed) {
    // Nothing is recorded; the checks that passed report what a peek sees.
    for (size_t i = 0; i < checks.size(); ++i) {
      if (result.decisions[i].allowed) {
        result.decisions[i] = Peek(checks[i].limit, keys[key_of[i]].slot, now_us);
      }
    }
    return result;
  }
  // Commit. Stored entries first: an insert may rehash its table and move every slot.
  for (KeyWork& work : keys) {
    if (work.dirty && work.slot != nullptr) {
      internal::StoreState(*work.slot, std::move(*work.state), work.expiry_us);
    }
  }
  for (KeyWork& work : keys) {
    if (!work.dirty || work.slot != nullptr) continue;
    Slot* slot = work.shard->Insert(work.probe, now_us, keep);
    // Reserve() made room for every new key, and only this call inserts while the locks are held.
    if (slot != nullptr) internal::StoreState(*slot, std::move(*work.state), work.expiry_us);
  }
  return result;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemoryStore>> MemoryStore::Create(
    const MemoryStoreOptions& options) {
  if (options.max_entries == 0) {
    return absl::InvalidArgumentError("max_entries: must be at least 1");
  }
  if (options.max_bytes < kEntryOverheadBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_bytes: must be at least ", kEntryOverheadBytes, ", got ", options.max_bytes));
  }
  if (options.shards == 0 || options.shards > kMaxShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shards: must be in [1, ", kMaxShards, "], got ", options.shards));
  }
  if (options.sweep_interval <= std::chrono::microseconds::zero()) {
    return absl::InvalidArgumentError(absl::StrCat("sweep_interval: must be positive, got ",
                                                   options.sweep_interval.count(), "us"));
  }
  const size_t shard_count =
      std::min({std::bit_ceil(options.shards),
                std::bit_floor(std::max<size_t>(1, options.max_entries / kMinEntriesPerShard)),
                std::bit_floor(std::max<size_t>(1, options.max_bytes / kMinBytesPerShard))});
  Clock& clock = options.clock != nullptr ? *options.clock : Clock::Real();
  return std::make_unique<MemoryStoreImpl>(options, clock, shard_count);
}

}  // namespace sluice
