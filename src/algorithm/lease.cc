// Leases: docs/algorithms.md, "Leases".
#include "src/algorithm/lease.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "sluice/decision.h"
#include "sluice/limit.h"

#include "src/algorithm/algorithm.h"
#include "src/algorithm/lease_record_internal.h"

namespace sluice::algorithm {
namespace {

constexpr int64_t kMinLeaseTtlUs = 1000;

// g = min(want, R div 2) for an admitted request; 0 otherwise.
int64_t GrantSize(const Decision& d, int64_t want) {
  return d.allowed && want > 0 ? std::min(want, d.remaining / 2) : 0;
}

// The windows and the bucket grant by admitting g more units at the same `now` (which passes:
// g <= R), and report a peek of the state after the grant.
template <typename State, typename DecideFn>
LeaseDecision GrantByAdmission(const Limit& limit, State& state, int64_t now_us, int64_t cost,
                               int64_t want, DecideFn decide) {
  const Decision d = decide(limit, state, now_us, cost);
  const int64_t g = GrantSize(d, want);
  if (g == 0) return LeaseDecision{.decision = d, .granted = 0, .ends_us = 0};
  // Admitted: g <= R.
  static_cast<void>(decide(limit, state, now_us, g));
  return LeaseDecision{.decision = decide(limit, state, now_us, 0), .granted = g, .ends_us = 0};
}

// Token bucket and GCRA: the grant, then its entry in the record (when there is room).
template <typename State, typename DecideFn>
LeaseDecision GrantWithRecord(const Limit& limit, State& state, int64_t now_us, int64_t cost,
                              int64_t want, int64_t ttl_us, DecideFn decide) {
  const Decision d = decide(limit, state, now_us, cost);
  const int64_t g = GrantSize(d, want);
  if (g == 0 || internal::RunningEntries(state.leases, now_us) >= kMaxLeaseEntries) {
    return LeaseDecision{.decision = d, .granted = 0, .ends_us = 0};
  }
  // Admitting g (which passes: g <= R) writes the state, which drops the ended entries.
  static_cast<void>(decide(limit, state, now_us, g));
  const int64_t ends_us = now_us + ClampLeaseTtl(ttl_us, limit.period.count());
  const auto at =
      std::upper_bound(state.leases.begin(), state.leases.end(), ends_us,
                       [](int64_t ends, const LeaseEntry& entry) { return ends < entry.ends_us; });
  state.leases.insert(at, LeaseEntry{.ends_us = ends_us, .granted = g});
  return LeaseDecision{
      .decision = decide(limit, state, now_us, 0), .granted = g, .ends_us = ends_us};
}

// The record's entry naming `lease`, or end().
template <typename State>
auto FindLease(State& state, GrantedLease lease) {
  return std::find(state.leases.begin(), state.leases.end(),
                   LeaseEntry{.ends_us = lease.ends_us, .granted = lease.granted});
}

// The units a refund of `unspent` gives back on `entry`: never more than the entry holds, nor
// than a full bucket (so that units * P <= 2^50).
int64_t RefundUnits(const Limit& limit, const LeaseEntry& entry, int64_t unspent) {
  return std::min({unspent, entry.granted, limit.Capacity()});
}

// The entry keeps the units not given back, which its holder may still spend (removed at 0); the
// write drops the ended entries.
void KeepTheRest(std::vector<LeaseEntry>& leases, std::vector<LeaseEntry>::iterator entry,
                 int64_t units, int64_t now_us) {
  entry->granted -= units;
  if (entry->granted == 0) leases.erase(entry);
  internal::PruneEnded(leases, now_us);
}

}  // namespace

int64_t ClampLeaseTtl(int64_t ttl_us, int64_t period_us) {
  return std::min(std::max(ttl_us, kMinLeaseTtlUs), period_us);
}

LeaseDecision LeaseFixedWindow(const Limit& limit, FixedWindowState& state, int64_t now_us,
                               int64_t cost, int64_t want, int64_t /*ttl_us*/) {
  LeaseDecision d = GrantByAdmission(limit, state, now_us, cost, want, &DecideFixedWindow);
  // The lease ends with the window its units were counted in.
  if (d.granted > 0) d.ends_us = state.window_start_us + limit.period.count();
  return d;
}

LeaseDecision LeaseSlidingWindow(const Limit& limit, SlidingWindowState& state, int64_t now_us,
                                 int64_t cost, int64_t want, int64_t /*ttl_us*/) {
  LeaseDecision d = GrantByAdmission(limit, state, now_us, cost, want, &DecideSlidingWindow);
  if (d.granted > 0) d.ends_us = state.window_start_us + limit.period.count();
  return d;
}

LeaseDecision LeaseSlidingLog(const Limit& limit, SlidingLogState& state, int64_t now_us,
                              int64_t cost, int64_t want, int64_t ttl_us) {
  const Decision d = DecideSlidingLog(limit, state, now_us, cost);
  const int64_t g = GrantSize(d, want);
  if (g == 0) return LeaseDecision{.decision = d, .granted = 0, .ends_us = 0};
  const int64_t period = limit.period.count();
  // The g entries are made at the latest instant their units may be spent; the grant is a write,
  // so it drops the entries that no longer count, as an admission does.
  const int64_t ends_us = now_us + ClampLeaseTtl(ttl_us, period);
  auto& entries = state.entries_us;
  entries.erase(entries.begin(), std::upper_bound(entries.begin(), entries.end(), now_us - period));
  entries.insert(std::upper_bound(entries.begin(), entries.end(), ends_us), static_cast<size_t>(g),
                 ends_us);
  return LeaseDecision{
      .decision = DecideSlidingLog(limit, state, now_us, 0), .granted = g, .ends_us = ends_us};
}

LeaseDecision LeaseTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                               int64_t cost, int64_t want, int64_t ttl_us) {
  return GrantWithRecord(limit, state, now_us, cost, want, ttl_us, &DecideTokenBucket);
}

LeaseDecision LeaseGcra(const Limit& limit, GcraState& state, int64_t now_us, int64_t cost,
                        int64_t want, int64_t ttl_us) {
  return GrantWithRecord(limit, state, now_us, cost, want, ttl_us, &DecideGcra);
}

int64_t RefundFixedWindow(const Limit& limit, FixedWindowState& state, int64_t now_us,
                          GrantedLease lease, int64_t unspent) {
  if (now_us >= lease.ends_us || state.window_start_us != lease.ends_us - limit.period.count()) {
    return 0;
  }
  const int64_t units = std::min(unspent, state.count);
  state.count -= units;
  return units;
}

int64_t RefundSlidingWindow(const Limit& limit, SlidingWindowState& state, int64_t now_us,
                            GrantedLease lease, int64_t unspent) {
  if (now_us >= lease.ends_us || state.window_start_us != lease.ends_us - limit.period.count()) {
    return 0;
  }
  const int64_t units = std::min(unspent, state.current);
  state.current -= units;
  return units;
}

int64_t RefundSlidingLog(const Limit& /*limit*/, SlidingLogState& state, int64_t now_us,
                         GrantedLease lease, int64_t unspent) {
  if (now_us >= lease.ends_us) return 0;
  auto& entries = state.entries_us;
  const auto [first, last] = std::equal_range(entries.begin(), entries.end(), lease.ends_us);
  const int64_t units = std::min<int64_t>(unspent, std::distance(first, last));
  entries.erase(last - units, last);
  return units;
}

int64_t RefundTokenBucket(const Limit& limit, TokenBucketState& state, int64_t now_us,
                          GrantedLease lease, int64_t unspent) {
  const auto entry = FindLease(state, lease);
  if (now_us >= lease.ends_us || entry == state.leases.end()) return 0;
  const int64_t period = limit.period.count();
  // The deficit a check would decide on now, with this lease still counted, gives the units back.
  // Capped at the burst: no refund can give back more than a full bucket, and u * P stays <= 2^50.
  const internal::TokenBucketReading r = internal::ReadTokenBucket(limit, state, now_us);
  const int64_t units = RefundUnits(limit, *entry, unspent);
  state.deficit = std::max<int64_t>(0, r.floored - units * period);
  state.updated_us = r.t;
  KeepTheRest(state.leases, entry, units, now_us);
  return units;
}

int64_t RefundGcra(const Limit& limit, GcraState& state, int64_t now_us, GrantedLease lease,
                   int64_t unspent) {
  const auto entry = FindLease(state, lease);
  if (now_us >= lease.ends_us || entry == state.leases.end()) return 0;
  const int64_t rate = limit.limit;
  const internal::GcraReading r = internal::ReadGcra(limit, state, now_us);
  const int64_t units = RefundUnits(limit, *entry, unspent);
  // tat - units * T, as pairs; never before now.
  const internal::TatOffset tat =
      internal::MinusScaled(r.floored, units * limit.period.count(), rate);
  state.tat_us = now_us + tat.dt;
  state.tat_frac = tat.frac;
  KeepTheRest(state.leases, entry, units, now_us);
  return units;
}

}  // namespace sluice::algorithm
