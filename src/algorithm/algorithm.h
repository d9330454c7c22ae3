// The five limit algorithms as pure functions of (limit, state, now, cost).
//
// Each Decide*() reads `state`, decides, and updates `state` in place only when the request is
// admitted with a cost > 0 (or, for a fixed window counting rejected hits, for any cost > 0),
// exactly as docs/algorithms.md specifies. None reads a clock: `now_us`
// is integer microseconds since the Unix epoch, passed in. A default-constructed state is "no
// state". The state after any call is equivalent to no state from `now_us + decision.reset_after`
// on, so stores expire it then.
//
// `now_us` may go backwards between calls (Redis time can step back); no state then moves
// backwards and every reported wait is measured from the earlier `now_us` (docs/algorithms.md,
// "Time going backwards"). A state may also have been written under another valid limit of the same
// algorithm; it is then read under the new one (docs/algorithms.md, "State written under another
// limit").
//
// Example:
//   GcraState state;
//   Decision d = DecideGcra(limit, state, clock.EpochNow().count(), 1);
//
// REQUIRES: ValidateLimit(limit).ok() and ValidateCost(cost).ok() (the functions do not re-check);
// 0 <= now_us < 2^52; `state` is default-constructed or was last written by the same function or
// by its lease twin in lease.h (a lease record holds at most kMaxLeaseEntries entries, sorted).
//
// Thread safety: pure functions; the caller serialises access to one state.
#ifndef SLUICE_ALGORITHM_ALGORITHM_H_
#define SLUICE_ALGORITHM_ALGORITHM_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "sluice/decision.h"
#include "sluice/limit.h"

namespace sluice::algorithm {

struct FixedWindowState {
  // Start of the period-aligned window that `count` belongs to.
  int64_t window_start_us = 0;
  int64_t count = 0;

  friend bool operator==(const FixedWindowState&, const FixedWindowState&) = default;
};

struct SlidingWindowState {
  // Start of the period-aligned window that `current` belongs to; `previous` is the window before.
  int64_t window_start_us = 0;
  int64_t current = 0;
  int64_t previous = 0;

  friend bool operator==(const SlidingWindowState&, const SlidingWindowState&) = default;
};

struct SlidingLogState {
  // Entry times in microseconds, sorted oldest first; one entry per admitted unit of cost. Entries
  // that no longer count are dropped by the next admission, not by denials or peeks.
  std::deque<int64_t> entries_us;

  friend bool operator==(const SlidingLogState&, const SlidingLogState&) = default;
};

// One lease recorded in a token bucket's or GCRA's state (docs/algorithms.md, "The lease record"):
// `granted` units that may be spent until `ends_us`.
struct LeaseEntry {
  int64_t ends_us = 0;
  int64_t granted = 0;

  friend bool operator==(const LeaseEntry&, const LeaseEntry&) = default;
};

// Entries a lease record keeps at most; a grant that finds this many running grants nothing.
inline constexpr size_t kMaxLeaseEntries = 32;

struct TokenBucketState {
  // Tokens missing from a full bucket, scaled by the period in microseconds.
  int64_t deficit = 0;
  int64_t updated_us = 0;
  // The lease record, sorted by ends_us (src/algorithm/lease.h grants and refunds); empty (the
  // memory store's states, and every state no lease was granted on) means no floor.
  std::vector<LeaseEntry> leases{};

  friend bool operator==(const TokenBucketState&, const TokenBucketState&) = default;
};

struct GcraState {
  // The theoretical arrival time is tat_us + tat_frac / limit, with 0 <= tat_frac < limit.
  int64_t tat_us = 0;
  int64_t tat_frac = 0;
  // The lease record, as TokenBucketState's.
  std::vector<LeaseEntry> leases{};

  friend bool operator==(const GcraState&, const GcraState&) = default;
};

// The most a fixed window's count reaches when it counts rejected hits: far above any limit
// (kMaxLimit = 2^32 - 1), far below 2^53.
inline constexpr int64_t kFixedWindowCountCap = int64_t{1} << 50;

// DecideFixedWindow()
//
// Fixed windows aligned to multiples of the period since the epoch.
Decision DecideFixedWindow(const Limit& limit, FixedWindowState& state, int64_t now_us,
                           int64_t cost);

// DecideFixedWindowCounting()
//
// The fixed window counting rejected hits, as envoyproxy/ratelimit does (docs/algorithms.md,
// "Counting rejected hits"; LimitCheck::count_rejected): every cost > 0 is recorded, admitted or
// not (the count stops at kFixedWindowCountCap), and a check is admitted iff the count after it is
// at most the limit, so a 0-cost check is admitted iff the count is at most the limit. An
// admission reports what remains after it, a denial what remained before it (as every denial
// does). Same state, windows and reset as DecideFixedWindow().
Decision DecideFixedWindowCounting(const Limit& limit, FixedWindowState& state, int64_t now_us,
                                   int64_t cost);

// DecideSlidingWindow()
//
// Two-window weighted counter; the previous window weighs by the whole milliseconds of it still
// inside the sliding window.
Decision DecideSlidingWindow(const Limit& limit, SlidingWindowState& state, int64_t now_us,
                             int64_t cost);

// DecideSlidingLog()
//
// Exact log of admitted units over the last period. O(log n) per decision, plus O(cost) and the
// dropped entries on admission (O(n) when an admission lands before newer entries after a backward
// time step).
Decision DecideSlidingLog(const Limit& limit, SlidingLogState& state, int64_t now_us, int64_t cost);

// DecideTokenBucket()
//
// A bucket of `limit.Capacity()` tokens refilled at `limit.limit` per period, in exact integers.
// A lease record in `state` floors the deficit as docs/algorithms.md says; an admission also drops
// the record's ended entries.
Decision DecideTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                           int64_t cost);

// DecideGcra()
//
// The generic cell rate algorithm. Same decisions as DecideTokenBucket() while time never goes
// backwards, lease records included.
Decision DecideGcra(const Limit& limit, GcraState& state, int64_t now_us, int64_t cost);

// Credit<Algorithm>()
//
// Gives back `units` units charged earlier (docs/algorithms.md, "Credits"): never below empty,
// and `state` is written only when something is given back (so no state stays no state). Always
// allowed; the decision is a peek (cost 0) of the state after the credit. REQUIRES: as the
// Decide functions, with 0 <= units <= kMaxCost.
Decision CreditFixedWindow(const Limit& limit, FixedWindowState& state, int64_t now_us,
                           int64_t units);
Decision CreditSlidingWindow(const Limit& limit, SlidingWindowState& state, int64_t now_us,
                             int64_t units);
Decision CreditSlidingLog(const Limit& limit, SlidingLogState& state, int64_t now_us,
                          int64_t units);
Decision CreditTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                           int64_t units);
Decision CreditGcra(const Limit& limit, GcraState& state, int64_t now_us, int64_t units);

}  // namespace sluice::algorithm

#endif  // SLUICE_ALGORITHM_ALGORITHM_H_
