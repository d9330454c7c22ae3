// EntryState: the limit state of one memory store entry, and the decisions made on it.
//
// Four algorithms keep their state in two 64-bit words of the slot:
//   fixed_window    (window_start_us, count)
//   sliding_window  (window_start_us, current | previous << 32)  both counts are <= limit < 2^32
//   token_bucket    (deficit, updated_us)
//   gcra            (tat_us, tat_frac)
// All zero is "no state" for each. The sliding log keeps a SlidingLogState on the heap instead,
// owned by the slot. The algorithms themselves are the pure functions of src/algorithm/.
//
// Thread safety: none; the shard's lock guards slots, and an EntryState belongs to one call.
#ifndef SLUICE_STORE_MEMORY_ENTRY_STATE_H_
#define SLUICE_STORE_MEMORY_ENTRY_STATE_H_

#include <cstdint>
#include <memory>

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/store.h"

#include "src/algorithm/algorithm.h"
#include "src/store/memory/slot.h"

namespace sluice::internal {

// A copy of an entry's state, detached from its slot: what a check decides on before it knows
// whether the result will be kept (CheckAll, or a key that is not stored yet).
struct EntryState {
  Algorithm algorithm = Algorithm::kFixedWindow;
  int64_t word0 = 0;
  int64_t word1 = 0;
  // kSlidingLog only.
  std::unique_ptr<algorithm::SlidingLogState> log;
};

// FreshState()
//
// Returns "no state" for `algorithm`.
EntryState FreshState(Algorithm algorithm);

// CopyState()
//
// Returns a copy of the state in `slot` (deep, for a sliding log).
EntryState CopyState(const Slot& slot);

// How a check acts on its state: LimitCheck's count_rejected and refund.
enum class CheckMode : uint8_t { kCharge, kCountRejected, kCredit };

inline CheckMode ModeOf(const LimitCheck& check) {
  if (check.refund) return CheckMode::kCredit;
  return check.count_rejected ? CheckMode::kCountRejected : CheckMode::kCharge;
}

// DecideOnWords()
//
// Decides on a two-word state, unpacking it into the algorithm's struct and packing it back. The
// algorithms leave the struct untouched unless they record, so writing back is always safe.
// `mode` picks DecideFixedWindowCounting() (kCountRejected) or the Credit functions (kCredit).
// REQUIRES: limit.algorithm != kSlidingLog; kCountRejected only for a fixed window.
inline Decision DecideOnWords(const Limit& limit, int64_t& word0, int64_t& word1, int64_t now_us,
                              int64_t cost, CheckMode mode = CheckMode::kCharge) {
  const bool credit = mode == CheckMode::kCredit;
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow: {
      algorithm::FixedWindowState s{.window_start_us = word0, .count = word1};
      const Decision d = mode == CheckMode::kCharge
                             ? algorithm::DecideFixedWindow(limit, s, now_us, cost)
                         : mode == CheckMode::kCountRejected
                             ? algorithm::DecideFixedWindowCounting(limit, s, now_us, cost)
                             : algorithm::CreditFixedWindow(limit, s, now_us, cost);
      word0 = s.window_start_us;
      word1 = s.count;
      return d;
    }
    case Algorithm::kSlidingWindow: {
      constexpr int64_t kLow32 = 0xffffffff;
      algorithm::SlidingWindowState s{
          .window_start_us = word0, .current = word1 & kLow32, .previous = (word1 >> 32) & kLow32};
      const Decision d = credit ? algorithm::CreditSlidingWindow(limit, s, now_us, cost)
                                : algorithm::DecideSlidingWindow(limit, s, now_us, cost);
      word0 = s.window_start_us;
      // Both counts are at most the limit, which ValidateLimit() bounds by 2^32 - 1.
      word1 = (s.current & kLow32) | ((s.previous & kLow32) << 32);
      return d;
    }
    case Algorithm::kTokenBucket: {
      algorithm::TokenBucketState s{.deficit = word0, .updated_us = word1};
      const Decision d = credit ? algorithm::CreditTokenBucket(limit, s, now_us, cost)
                                : algorithm::DecideTokenBucket(limit, s, now_us, cost);
      word0 = s.deficit;
      word1 = s.updated_us;
      return d;
    }
    case Algorithm::kGcra: {
      algorithm::GcraState s{.tat_us = word0, .tat_frac = word1};
      const Decision d = credit ? algorithm::CreditGcra(limit, s, now_us, cost)
                                : algorithm::DecideGcra(limit, s, now_us, cost);
      word0 = s.tat_us;
      word1 = s.tat_frac;
      return d;
    }
    case Algorithm::kSlidingLog:
      break;
  }
  // Unreachable: callers route the sliding log to its SlidingLogState.
  return Decision{};
}

// DecideOnLog()
//
// As DecideOnWords(), for the sliding log.
inline Decision DecideOnLog(const Limit& limit, algorithm::SlidingLogState& log, int64_t now_us,
                            int64_t cost, CheckMode mode) {
  return mode == CheckMode::kCredit ? algorithm::CreditSlidingLog(limit, log, now_us, cost)
                                    : algorithm::DecideSlidingLog(limit, log, now_us, cost);
}

// DecideOnSlot()
//
// Decides `cost` units of `limit` on the state stored in `slot`, updating it in place when the
// request is recorded. REQUIRES: SlotAlgorithm(slot) == limit.algorithm. Inline, with
// DecideOnWords(), because it is on every check's path.
inline Decision DecideOnSlot(const Limit& limit, Slot& slot, int64_t now_us, int64_t cost,
                             CheckMode mode = CheckMode::kCharge) {
  if (limit.algorithm == Algorithm::kSlidingLog) {
    return DecideOnLog(limit, *SlotLog(slot), now_us, cost, mode);
  }
  return DecideOnWords(limit, slot.state0, slot.state1, now_us, cost, mode);
}

// Records()
//
// Returns whether a check of `cost` decided as `decision` on a stored state wrote it: a cost > 0
// admitted (a credit always is), or any cost > 0 when it counts rejected hits. A credit never
// writes a state that was not stored (the callers do not store it).
inline bool Records(const Decision& decision, int64_t cost, CheckMode mode) {
  return cost > 0 && (decision.allowed || mode == CheckMode::kCountRejected);
}

// DecideOnState()
//
// As DecideOnSlot(), on a detached state. REQUIRES: state.algorithm == limit.algorithm.
Decision DecideOnState(const Limit& limit, EntryState& state, int64_t now_us, int64_t cost,
                       CheckMode mode = CheckMode::kCharge);

// StoreState()
//
// Moves `state` into `slot` with its expiry, freeing the slot's previous sliding log if any.
void StoreState(Slot& slot, EntryState state, int64_t expiry_us);

}  // namespace sluice::internal

#endif  // SLUICE_STORE_MEMORY_ENTRY_STATE_H_
