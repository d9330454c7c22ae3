// The arithmetic of the lease record that the token bucket and GCRA keep (docs/algorithms.md,
// "The lease record"), shared by their decisions (token_bucket.cc, gcra.cc) and their leases
// (lease.cc).
//
// A record is at most kMaxLeaseEntries entries sorted by ends_us, so every helper is a short
// loop. Units are summed with the cap at the burst applied at each step, which is the capped sum
// and keeps every product with a period below 2^50.
//
// Thread safety: pure functions.
#ifndef SLUICE_ALGORITHM_LEASE_RECORD_INTERNAL_H_
#define SLUICE_ALGORITHM_LEASE_RECORD_INTERNAL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/algorithm/algorithm.h"
#include "src/algorithm/math_internal.h"

namespace sluice::algorithm::internal {

// RunningUnits()
//
// Returns G(now): min(burst, the units of the entries with ends_us > now_us).
inline int64_t RunningUnits(const std::vector<LeaseEntry>& leases, int64_t burst, int64_t now_us) {
  int64_t units = 0;
  for (const LeaseEntry& entry : leases) {
    if (entry.ends_us > now_us) units = std::min(burst, units + entry.granted);
  }
  return units;
}

// RunningEntries()
//
// Returns how many entries have ends_us > now_us.
inline size_t RunningEntries(const std::vector<LeaseEntry>& leases, int64_t now_us) {
  return static_cast<size_t>(std::count_if(
      leases.begin(), leases.end(), [now_us](const LeaseEntry& e) { return e.ends_us > now_us; }));
}

// ForEachWithUnits()
//
// Calls fn(entry, units) for each entry, the last first, where `units` is min(burst, the units of
// this entry and every later one): G_k for the first of equal ends, and less for the others,
// whose terms the first's then dominate (every caller takes a maximum of terms growing with it).
template <typename Fn>
void ForEachWithUnits(const std::vector<LeaseEntry>& leases, int64_t burst, Fn fn) {
  int64_t units = 0;
  // By index, from the end (std::views::reverse does not build with clang-14 and libstdc++ 12).
  for (size_t i = leases.size(); i-- > 0;) {
    units = std::min(burst, units + leases[i].granted);
    fn(leases[i], units);
  }
}

// Refill()
//
// Returns max(0, x - elapsed * rate), without forming a product that could overflow: below
// ceil(x / rate) the product is smaller than x. REQUIRES: x >= 0, elapsed >= 0, rate > 0.
constexpr int64_t Refill(int64_t x, int64_t elapsed, int64_t rate) {
  return elapsed >= CeilDiv(x, rate) ? 0 : x - elapsed * rate;
}

// PruneEnded()
//
// Drops the entries with ends_us <= now_us, which every write of a state does.
inline void PruneEnded(std::vector<LeaseEntry>& leases, int64_t now_us) {
  std::erase_if(leases, [now_us](const LeaseEntry& e) { return e.ends_us <= now_us; });
}

// CreditedScaled()
//
// A credit of `units` (docs/algorithms.md, "Credits") on the scaled amount `floored` that a
// decision at `now_us` reads (a token bucket's deficit, GCRA's debt D): returns the amount to
// write, max(0, floored - min(units, burst) * period), and takes the units that amount falls short
// of the running leases' floor G(now) * P off those leases, the earliest ending first (holders
// spend their earliest-ending units first, so those are the likeliest spent), so that the next
// read does not floor it back (the credited units were spent, from a lease or not).
// REQUIRES: floored <= 2^51.
inline int64_t CreditedScaled(std::vector<LeaseEntry>& leases, int64_t floored, int64_t units,
                              int64_t burst, int64_t period, int64_t now_us) {
  const int64_t after = std::max<int64_t>(0, floored - std::min(units, burst) * period);
  const int64_t running = RunningUnits(leases, burst, now_us) * period;
  int64_t shortfall = after < running ? CeilDiv(running - after, period) : 0;
  for (auto it = leases.begin(); it != leases.end() && shortfall > 0; ++it) {
    if (it->ends_us <= now_us) continue;
    const int64_t taken = std::min(shortfall, it->granted);
    it->granted -= taken;
    shortfall -= taken;
  }
  std::erase_if(leases, [](const LeaseEntry& e) { return e.granted == 0; });
  return after;
}

// A token bucket's state as a decision at `now` reads it.
struct TokenBucketReading {
  int64_t t;    // max(now, updated): refill stops while the clock is behind `updated`
  int64_t lag;  // t - now
  // d_r: the stored deficit refilled to t, raised by the floors of the leases that have ended.
  int64_t deficit;
  // d_f = max(d_r, G(now) * P): what the decision is made on.
  int64_t floored;
  // The latest time a running lease's floor has refilled, minus now (0 without one).
  int64_t leases_reset_after;
};

// ReadTokenBucket()
//
// Returns the reading of docs/algorithms.md ("The lease record") of `state` at `now_us`.
TokenBucketReading ReadTokenBucket(const Limit& limit, const TokenBucketState& state,
                                   int64_t now_us);

// A TAT relative to now: tat - now = dt + frac / rate, with dt >= 0 and 0 <= frac < rate.
struct TatOffset {
  int64_t dt;
  int64_t frac;

  // Ordered as times: by dt, then by frac.
  friend bool operator<(const TatOffset& a, const TatOffset& b) {
    return a.dt < b.dt || (a.dt == b.dt && a.frac < b.frac);
  }
};

// A GCRA state as a decision at `now` reads it.
struct GcraReading {
  // tat_r: max(TAT, now), raised by the floors of the leases that have ended.
  TatOffset tat;
  // tat_f = max(tat_r, now + G(now) * T): what the decision is made on.
  TatOffset floored;
  // As TokenBucketReading's.
  int64_t leases_reset_after;
};

// ReadGcra()
//
// Returns the reading of `state` at `now_us`.
GcraReading ReadGcra(const Limit& limit, const GcraState& state, int64_t now_us);

// PlusUnits()
//
// Returns x + units * T (T = period / rate) as an offset. REQUIRES: units * period <= 2^50.
TatOffset PlusUnits(TatOffset x, int64_t units, int64_t period, int64_t rate);

// MinusScaled()
//
// Returns x - scaled / rate as an offset (`scaled` units * period, e.g.), borrowing a
// microsecond for the fraction, and never before now: {0, 0} when it would be. What a lease refund
// and a credit take off a TAT. REQUIRES: 0 <= scaled <= 2^50.
TatOffset MinusScaled(TatOffset x, int64_t scaled, int64_t rate);

}  // namespace sluice::algorithm::internal

#endif  // SLUICE_ALGORITHM_LEASE_RECORD_INTERNAL_H_
