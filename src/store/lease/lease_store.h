// LeaseStore: decisions at memory speed with limits still exact across instances (docs/redis.md,
// "Leases").
//
// A decorator in front of the Redis store. The first decision on a key is an ordinary atomic
// script call that also withdraws units for this instance (a lease, lease_source.h); later
// decisions on the key spend them in memory, with no Redis call. Units are recorded in Redis
// before they are spent, so no instance admits what Redis did not grant: over-admission is
// impossible by construction. A refill starts in the background before a busy key's lease runs
// out (at most one leasing call in flight per key), and a denial is answered from memory until
// the retry_after Redis gave (nothing can pass before then), but for at most `remember_denial`:
// a credit (LimitCheck::refund) through another instance can give units back before then, and is
// seen here within that bound. A credit is always an exact call; through this instance it also
// drops its key's remembered denial at once. Held leases are not touched by credits: their units
// were granted, and stay this instance's to spend.
//
// Sizing: a lease asks for the units the key used locally over the last `refresh_target`, at most
// `max_want`; the script grants at most half of what remains, so as a window fills every instance
// gets less, and with little left each decision is an exact script call as without leases.
//
// Multi-limit checks spend from the leases of all their limits or from none. A check whose key
// repeats in the same call, or whose key's lease was granted under another limit, goes to the
// wrapped store as an exact call.
//
// Outage: a live lease keeps deciding while Redis is away; a failure policy in front of this store
// asks DecideLocally() while its breaker is open. When the lease is spent or ended, the failure
// policy answers, and may cut each limit to one share of the instances this store last saw
// announce themselves as leaseholders (SharingInstances()).
//
// Maintenance (Maintain(), on a thread of this store every `maintain_every`): the unspent units of
// a sliding-log, token-bucket or GCRA lease about to end go back to the store (a window's units
// end with their window anyway), and the instance announces itself as a leaseholder every
// `announce_every`.
//
// Thread safety: thread-safe. Hot path: one lock of the key's shard (of kShards), no allocation
// beyond what Store's conveniences make.
#ifndef SLUICE_STORE_LEASE_LEASE_STORE_H_
#define SLUICE_STORE_LEASE_LEASE_STORE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "sluice/clock.h"
#include "sluice/lease_stats.h"
#include "sluice/store_wrapper.h"

#include "src/store/lease/lease_source.h"
#include "src/util/mutex.h"

namespace sluice::internal {

struct LeaseOptions {
  // A lease asks for the units its key used locally in this much time: at 100 decisions a
  // second, 50 units, so one script call per 50 decisions. Default: 500 ms.
  std::chrono::milliseconds refresh_target{500};
  // Most units one leasing call asks for per check: enough that a key decided millions of times a
  // second refills every few tens of ms. Default: 100,000.
  int64_t max_want = 100'000;
  // How long a lease lasts for token_bucket and gcra (at most the limit's period) and for
  // sliding_log (at most a 50th of the period: a leased entry counts that much longer than an
  // exact one); window leases end with their window. Default: 1 s.
  std::chrono::milliseconds ttl{1000};
  // The longest a denial is answered from memory, however long its retry_after: how long a credit
  // through another instance can go unseen here. Default: 1 s.
  std::chrono::milliseconds remember_denial{1000};
  // Taken off every lease's end on the local clock, for clock rate differences. Default: 2 ms.
  std::chrono::microseconds end_margin{2000};
  // Keys held (with a lease, a denial, or a rate being measured); a full table leases no new key
  // (its decisions are exact calls) until idle keys are swept. The bound is per shard,
  // max_keys / kShards keys each but at least one, so a table holds at least kShards (64) keys
  // and a key can find its shard full before the table is. Default: 100,000.
  size_t max_keys = 100'000;
  // How often a thread of the store runs Maintain(); 0 starts no thread (the owner calls
  // Maintain(), as tests on a manual clock do). Default: 100 ms.
  std::chrono::milliseconds maintain_every{100};
  // How often the instance announces itself as a leaseholder; its record lasts three times as
  // long, so an instance that stops counts for at most that. Default: 1 s.
  std::chrono::milliseconds announce_every{1000};
  // Steady time for lease ends and rates. Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
};

using ::sluice::LeaseStats;

class LeaseStore final : public StoreWrapper {
 public:
  static constexpr size_t kShards = 64;

  // Decorates `inner` (exact calls) with leases from `source`; both must outlive this store and
  // every call in flight (normally they are one Redis store).
  LeaseStore(Store& inner, LeaseSource& source, const LeaseOptions& options);
  // As above, owning `owned` (the Redis store), which is destroyed before this store's own
  // members, so that its late answers still find them.
  LeaseStore(std::unique_ptr<Store> owned, LeaseSource& source, const LeaseOptions& options);
  // Gives back the unspent units of live leases (RefundAll(1 s)).
  ~LeaseStore() override;

  LeaseStore(const LeaseStore&) = delete;
  LeaseStore& operator=(const LeaseStore&) = delete;
  LeaseStore(LeaseStore&&) = delete;
  LeaseStore& operator=(LeaseStore&&) = delete;

  std::string_view Name() const override { return inner().Name(); }
  bool AnswersInline() const override { return false; }

  LeaseStats Stats() const;

  // LeaseStore::Maintain()
  //
  // One round of maintenance at the clock's now: gives back the unspent units of every
  // sliding-log, token-bucket and GCRA lease that ends before the round after next would run
  // (within 2 x maintain_every, or a quarter of the lease's length when that is longer; a round
  // every 100 ms cannot catch a lease that lasts less), one refund call per 64 leases; and
  // announces this instance when `announce_every` has passed since its last announcement.
  void Maintain();

  // The instances the last announcement counted (this one included), or nullopt before one was
  // answered.
  std::optional<int64_t> SharingInstances() const override;

  // LeaseStore::RefundAll()
  //
  // Gives back every unspent unit of the leases that have not ended, and waits up to `wait` for
  // the store to take them. Later decisions lease anew.
  void RefundAll(std::chrono::milliseconds wait);

  // The primitives, public for a store that owns a lease store as its front (the Redis store
  // with `lease=true`). REQUIRES: as Store::Decide().
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override;
  std::optional<MultiDecision> DecideLocally(std::span<const LimitCheck> checks) override;

 private:
  using Time = std::chrono::steady_clock::time_point;
  // One grant: its units left and when they may no longer be spent (local clock).
  struct Slot {
    int64_t units = 0;
    Time until{};
    LeaseGrant grant{};
  };
  struct Entry {
    Limit limit{};
    // Grants not yet spent or ended; spent earliest-ending first.
    std::array<Slot, 4> slots{};
    // A denial of at least `denied_cost` is answered locally before `denied_until` (at most
    // remember_denial after it was learnt), with the retry_after `denied_retry_at` the store gave.
    Time denied_until{};
    Time denied_retry_at{};
    Time denied_reset_at{};
    int64_t denied_cost = 0;
    // What the store said at its last answer: what it had left, and when its state resets.
    int64_t store_remaining = 0;
    Time reset_at{};
    // Units asked for on this key since `since`: the local rate the next lease is sized by.
    int64_t demand = 0;
    Time since{};
    // Units of the latest grant: a refill starts when less than half of it is left.
    int64_t last_grant = 0;
    // A leasing call is in flight (at most one per key).
    bool leasing = false;
    // No background refill before this: the last leasing call was granted nothing.
    Time refill_after{};
    Time last_used{};
  };
  struct Shard {
    mutable Mutex mu;
    absl::flat_hash_map<std::string, Entry> entries ABSL_GUARDED_BY(mu);
    Time next_sweep ABSL_GUARDED_BY(mu){};
    // Some entry may hold a sliding-log, token-bucket or GCRA lease: only such shards are
    // scanned by Maintain() (a deployment of windows alone never scans).
    bool timed_leases ABSL_GUARDED_BY(mu) = false;
  };
  // What the local pass decided for a call.
  struct LocalPass {
    std::optional<MultiDecision> answer;
    // Otherwise: the units to ask for per check (all 0: an exact call).
    std::vector<LeaseWant> wants;
    // A check's lease is running low: refill it in the background (index into checks).
    std::vector<size_t> refill;
  };
  struct Pending;

  // The constructors' common part: wraps `inner`, or when it is null `owned`, which it owns.
  LeaseStore(Store* inner, std::unique_ptr<Store> owned, LeaseSource& source,
             const LeaseOptions& options);

  // Tries to decide `checks` from memory; with `plan_call`, says what to ask the store for when
  // it cannot (and marks the keys as leasing).
  LocalPass Pass(std::span<const LimitCheck> checks, bool plan_call);
  // Drops the remembered denials of the keys `checks` credited (the call passed).
  void ForgetDenials(std::span<const LimitCheck> checks);
  // Starts a background refill of `check`'s key.
  void Refill(const LimitCheck& check);
  // Applies the store's answer to a leasing call made at `sent`.
  void Apply(std::span<const LimitCheck> checks, std::span<const LeaseWant> wants, Time sent,
             const absl::StatusOr<LeasedDecision>& answer);
  size_t ShardOf(std::string_view key) const;
  int64_t WantOf(const Entry& e, const Limit& limit, Time now) const;
  // How long a lease of `limit` is asked to last (LeaseWant::ttl).
  std::chrono::microseconds TtlOf(const Limit& limit) const;
  // True when a check of `cost` on `e`, which holds `units`, is known to be denied at `now`: the
  // store denied at least that cost, and its retry_after has not passed.
  static bool KnownOver(const Entry& e, int64_t cost, int64_t units, Time now);
  // Spends `cost` from `e`'s live slots. REQUIRES: Units(e, now) >= cost.
  void Spend(Entry& e, int64_t cost, Time now);
  // Units of `e` spendable at `now`; counts and clears slots that ended.
  int64_t Units(Entry& e, Time now);
  // The entry of `key`, made when absent and `create` (then `*inserted` is set, when given: the
  // insertion may have moved the shard's other entries), or nullptr (absent, table full, or
  // leasing under another limit).
  Entry* Find(Shard& s, std::string_view key, const Limit& limit, Time now, bool create,
              bool* inserted = nullptr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  void SweepIfFull(Shard& s, Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Sends `refunds` in calls of at most 64; with `wait`, waits up to it for the answers.
  void SendRefunds(std::span<const LeaseRefund> refunds, std::chrono::milliseconds wait);
  // The unspent units of non-window leases ending within their refund horizon at `now`, taken
  // out of their slots.
  std::vector<LeaseRefund> TakeEnding(Time now);

  LeaseSource& source_;
  const LeaseOptions options_;
  Clock& clock_;
  std::array<Shard, kShards> shards_;
  std::atomic<uint64_t> local_admits_{0}, local_denials_{0}, lease_calls_{0}, refills_{0},
      refill_errors_{0}, exact_calls_{0}, grants_{0}, units_granted_{0}, units_expired_{0},
      refunds_{0}, units_refunded_{0};
  std::atomic<int64_t> keys_{0};
  // This instance's id in the leaseholders' records, and what the last announcement counted
  // (0: none answered yet); shared with announcements in flight, which may outlive the store.
  const std::string holder_id_;
  std::shared_ptr<std::atomic<int64_t>> instances_seen_;
  std::atomic<uint64_t> units_refunded_ending_{0};
  // The maintenance thread (maintain_every > 0) and how it is told to stop.
  Mutex maintain_mu_;
  Time next_announce_ ABSL_GUARDED_BY(maintain_mu_){};
  std::condition_variable_any maintain_cv_;
  bool stopping_ ABSL_GUARDED_BY(maintain_mu_) = false;
  std::thread maintainer_;
  // Declared last: destroyed first (see the constructor).
  std::unique_ptr<Store> owned_;
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_LEASE_LEASE_STORE_H_
