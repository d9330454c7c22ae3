#include "src/store/lease/lease_store.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <random>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "src/util/strings.h"

namespace sluice::internal {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;

// A lease's units are sized by at least this much measured time, so that one burst of a few
// requests does not look like a huge rate.
constexpr microseconds kMinRateWindow = std::chrono::milliseconds(10);
// The smallest lease asked for.
constexpr int64_t kMinWant = 2;
// A lease asks for at most this share of the capacity (1 / kCapacityShare).
constexpr int64_t kCapacityShare = 8;

microseconds Until(std::chrono::steady_clock::time_point at,
                   std::chrono::steady_clock::time_point now) {
  return at > now ? duration_cast<microseconds>(at - now) : microseconds::zero();
}

// A random id for this instance's record among the leaseholders: 32 hex digits, so that two
// instances never share one.
std::string NewHolderId() {
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) absl::StrAppend(&id, absl::Hex(random(), absl::kZeroPad8));
  return id;
}

bool IsWindow(Algorithm algorithm) {
  return algorithm == Algorithm::kFixedWindow || algorithm == Algorithm::kSlidingWindow;
}

// True when a check counts rejected hits or is a credit (LimitCheck::count_rejected, refund):
// neither can be decided from a lease.
bool NeedsExactCall(std::span<const LimitCheck> checks) {
  return std::any_of(checks.begin(), checks.end(),
                     [](const LimitCheck& c) { return c.count_rejected || c.refund; });
}

bool HasRepeatedKey(std::span<const LimitCheck> checks) {
  for (size_t i = 1; i < checks.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (checks[i].key == checks[j].key) return true;
    }
  }
  return false;
}

}  // namespace

// A leasing call in flight: the checks it was made for, kept until the store answers.
struct LeaseStore::Pending {
  std::vector<LimitCheck> checks;
  std::vector<LeaseWant> wants;
  Time sent;
};

LeaseStore::LeaseStore(Store& inner, LeaseSource& source, const LeaseOptions& options)
    : LeaseStore(&inner, nullptr, source, options) {}

LeaseStore::LeaseStore(std::unique_ptr<Store> owned, LeaseSource& source,
                       const LeaseOptions& options)
    : LeaseStore(nullptr, std::move(owned), source, options) {}

LeaseStore::LeaseStore(Store* inner, std::unique_ptr<Store> owned, LeaseSource& source,
                       const LeaseOptions& options)
    : StoreWrapper(inner != nullptr ? *inner : *owned),
      source_(source),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : Clock::Real()),
      holder_id_(NewHolderId()),
      instances_seen_(std::make_shared<std::atomic<int64_t>>(0)),
      owned_(std::move(owned)) {
  if (options_.maintain_every > std::chrono::milliseconds::zero()) {
    maintainer_ = std::thread([this] {
      std::unique_lock<Mutex> lock(maintain_mu_);
      while (!maintain_cv_.wait_for(lock, options_.maintain_every, [this] { return stopping_; })) {
        lock.unlock();
        Maintain();
        lock.lock();
      }
    });
  }
}

LeaseStore::~LeaseStore() {
  if (maintainer_.joinable()) {
    {
      MutexLock lock(&maintain_mu_);
      stopping_ = true;
    }
    maintain_cv_.notify_all();
    maintainer_.join();
  }
  RefundAll(std::chrono::seconds(1));
}

size_t LeaseStore::ShardOf(std::string_view key) const {
  return absl::HashOf(AbslView(key)) % kShards;
}

int64_t LeaseStore::Units(Entry& e, Time now) {
  int64_t units = 0;
  for (Slot& s : e.slots) {
    if (s.units == 0) continue;
    if (s.until <= now) {
      units_expired_.fetch_add(static_cast<uint64_t>(s.units), std::memory_order_relaxed);
      s = Slot{};
      continue;
    }
    units += s.units;
  }
  return units;
}

void LeaseStore::Spend(Entry& e, int64_t cost, Time now) {
  while (cost > 0) {
    Slot* first = nullptr;
    for (Slot& s : e.slots) {
      if (s.units > 0 && s.until > now && (first == nullptr || s.until < first->until)) first = &s;
    }
    if (first == nullptr) return;  // Unreachable when the caller checked Units().
    const int64_t take = std::min(cost, first->units);
    first->units -= take;
    cost -= take;
  }
}

microseconds LeaseStore::TtlOf(const Limit& limit) const {
  const microseconds ttl = std::min<microseconds>(options_.ttl, limit.period);
  if (limit.algorithm != Algorithm::kSlidingLog) return ttl;
  // A leased log entry sits at the lease's end, so it counts for ttl + P where an exact one
  // counts for P: under steady load the log admits L per P + ttl. At most P / 50 keeps that
  // within 2 % of the limit.
  return std::max<microseconds>(std::chrono::milliseconds(1), std::min(ttl, limit.period / 50));
}

int64_t LeaseStore::WantOf(const Entry& e, const Limit& limit, Time now) const {
  const microseconds measured = std::max(Until(now, e.since), kMinRateWindow);
  // A lease that ends after a fixed time asks for what the key uses in part of it, so that the
  // arrivals' ups and downs seldom leave units unspent at its end: half of it for the token
  // bucket and GCRA (what is left when it nears its end goes back, Maintain(); at 100 decisions a
  // second and the default 1 s, 50 units a call); a quarter for the sliding log: its leases are
  // too short (at most P / 50) for a maintenance round to catch, and what one leaves unspent
  // stays in the log for a whole period.
  const microseconds target =
      IsWindow(limit.algorithm)
          ? microseconds(options_.refresh_target)
          : std::min<microseconds>(
                options_.refresh_target,
                TtlOf(limit) / (limit.algorithm == Algorithm::kSlidingLog ? 4 : 2));
  // Units used over the measured time, scaled to the refresh target, rounded up.
  const int64_t want = (e.demand * target.count() + measured.count() - 1) / measured.count();
  // A key too quiet for 2 units per refresh stays exact: a lease of one unit would save one call
  // and could leave that unit idle here while another instance is denied (the error harness saw
  // it at half the limit).
  // And no lease is more than an eighth of the capacity: a small limit (under 16) is never
  // leased, where a few units idle at one instance would be a large share of it.
  const int64_t most = std::min(options_.max_want, limit.Capacity() / kCapacityShare);
  if (std::min(want, most) < kMinWant) return 0;
  return std::min(want, most);
}

LeaseStore::Entry* LeaseStore::Find(Shard& s, std::string_view key, const Limit& limit, Time now,
                                    bool create, bool* inserted) {
  auto it = s.entries.find(AbslView(key));
  if (it == s.entries.end()) {
    if (!create) return nullptr;
    SweepIfFull(s, now);
    if (s.entries.size() >= std::max<size_t>(1, options_.max_keys / kShards)) return nullptr;
    it = s.entries.emplace(std::string(key), Entry{.limit = limit, .since = now}).first;
    keys_.fetch_add(1, std::memory_order_relaxed);
    if (inserted != nullptr) *inserted = true;
  }
  Entry& e = it->second;
  if (!(e.limit == limit)) {
    // The key is decided under another limit now: what was leased under the old one is not
    // spent under the new one (stranded), and the new one starts from nothing.
    if (e.leasing) return nullptr;
    for (Slot& slot : e.slots) {
      units_expired_.fetch_add(static_cast<uint64_t>(slot.units), std::memory_order_relaxed);
    }
    e = Entry{.limit = limit, .since = now};
  }
  e.last_used = now;
  return &e;
}

void LeaseStore::SweepIfFull(Shard& s, Time now) {
  if (s.entries.size() < std::max<size_t>(1, options_.max_keys / kShards)) return;
  if (now < s.next_sweep) return;
  s.next_sweep = now + std::chrono::milliseconds(100);
  for (auto it = s.entries.begin(); it != s.entries.end();) {
    Entry& e = it->second;
    if (!e.leasing && Units(e, now) == 0 && e.denied_until <= now &&
        now - e.last_used > options_.refresh_target) {
      s.entries.erase(it++);
      keys_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++it;
    }
  }
}

bool LeaseStore::KnownOver(const Entry& e, int64_t cost, int64_t units, Time now) {
  // Units held are spent before a remembered denial is believed: they were granted for this.
  return units < cost && e.denied_until > now && cost >= e.denied_cost;
}

LeaseStore::LocalPass LeaseStore::Pass(std::span<const LimitCheck> checks, bool plan_call) {
  LocalPass pass;
  const Time now = clock_.Now();
  // The shards of the checks, locked in ascending order (a multi-limit check holds them all, so
  // that it spends from every lease or from none).
  // Small buffers (absl::InlinedVector): no allocation for a request of up to 8 limits.
  absl::InlinedVector<size_t, 8> order;
  for (const LimitCheck& c : checks) order.push_back(ShardOf(c.key));
  absl::InlinedVector<size_t, 8> sorted(order.begin(), order.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (size_t shard : sorted) shards_[shard].mu.Lock();

  absl::InlinedVector<Entry*, 8> entries(checks.size(), nullptr);
  bool all_units = true;
  bool any_denied = false;
  bool inserted = false;
  for (size_t i = 0; i < checks.size(); ++i) {
    Shard& shard = shards_[order[i]];
    Entry* e = Find(shard, checks[i].key, checks[i].limit, now, plan_call, &inserted);
    entries[i] = e;
    if (e == nullptr) {
      all_units = false;
      continue;
    }
    // A peek is answered here only while a lease is live: then what it reports is at least
    // this instance's own units; otherwise the store's state is not known here.
    const int64_t units = Units(*e, now);
    if (units < checks[i].cost || (checks[i].cost == 0 && units == 0)) all_units = false;
    any_denied = any_denied || KnownOver(*e, checks[i].cost, units, now);
  }
  if (inserted && checks.size() > 1) {
    // A key added to a shard may have grown its table, which moves every entry of the shard
    // (absl::flat_hash_map keeps no pointer stable across a rehash): an earlier check's entry is
    // found again. (A sweep erases none of them: each was used just now.)
    for (size_t i = 0; i < checks.size(); ++i) {
      if (entries[i] == nullptr) continue;
      entries[i] = &shards_[order[i]].entries.find(AbslView(checks[i].key))->second;
    }
  }

  // Rare (a remembered denial): whether check i is known to be over, as the first loop found.
  auto over = [&](size_t i) {
    return entries[i] != nullptr &&
           KnownOver(*entries[i], checks[i].cost, Units(*entries[i], now), now);
  };
  auto local_decision = [&](size_t i, bool allowed) {
    const Entry* e = entries[i];
    const Limit& limit = checks[i].limit;
    if (e == nullptr) {
      return Decision{.allowed = allowed, .limit = limit.Capacity(), .answered_locally = true};
    }
    int64_t units = 0;
    for (const Slot& s : e->slots) units += s.units;
    Decision d{.allowed = allowed,
               .limit = limit.Capacity(),
               .remaining = std::clamp<int64_t>(e->store_remaining + units, 0, limit.Capacity()),
               .reset_after = Until(e->reset_at, now),
               .retry_after = microseconds::zero(),
               .answered_locally = true};
    if (!allowed && over(i)) {
      d.remaining = 0;
      d.reset_after = std::max(d.reset_after, Until(e->denied_reset_at, now));
      d.retry_after = Until(e->denied_retry_at, now);
    }
    return d;
  };

  if (any_denied) {
    // Known over: nothing can pass before the retry_after the store gave, whatever others do.
    MultiDecision m{.allowed = false, .decisions = {}};
    m.decisions.reserve(checks.size());
    for (size_t i = 0; i < checks.size(); ++i) {
      const bool known_over = over(i);
      m.decisions.push_back(local_decision(i, !known_over));
      if (!known_over && m.decisions.back().remaining < checks[i].cost) {
        m.decisions.back().allowed = false;
      }
    }
    local_denials_.fetch_add(1, std::memory_order_relaxed);
    pass.answer = std::move(m);
  } else if (all_units) {
    MultiDecision m{.allowed = true, .decisions = {}};
    m.decisions.reserve(checks.size());
    for (size_t i = 0; i < checks.size(); ++i) {
      Entry& e = *entries[i];
      Spend(e, checks[i].cost, now);
      e.demand += checks[i].cost;
      m.decisions.push_back(local_decision(i, true));
      // Refill before the lease runs out: when under half of the last grant's worth is left.
      // (Not of a slot's: a window's grants are merged into one, whose total would call ever
      // earlier and pile up units here.)
      int64_t units = 0;
      for (const Slot& s : e.slots) units += s.units;
      if (plan_call && !e.leasing && units * 2 <= e.last_grant && now >= e.refill_after) {
        e.leasing = true;
        pass.refill.push_back(i);
      }
    }
    local_admits_.fetch_add(1, std::memory_order_relaxed);
    pass.answer = std::move(m);
  } else if (plan_call) {
    // Every miss goes to the store through the leasing call, asking for units or not, so that
    // what the store answers (a denial, its reset) is learnt. A key the table has no room for is
    // an exact call (no wants).
    bool held = true;
    for (Entry* e : entries) held = held && e != nullptr;
    if (held) {
      pass.wants.resize(checks.size());
      for (size_t i = 0; i < checks.size(); ++i) {
        Entry& e = *entries[i];
        // Sized by what was asked before this request: a key's first request leases nothing.
        const int64_t want = WantOf(e, checks[i].limit, now);
        e.demand += checks[i].cost;
        // One leasing call per key at a time: a concurrent miss asks for no units.
        if (e.leasing || want == 0) continue;
        e.leasing = true;
        pass.wants[i] = LeaseWant{.units = want, .ttl = TtlOf(checks[i].limit)};
      }
    }
  }
  for (size_t shard : sorted) shards_[shard].mu.Unlock();
  return pass;
}

void LeaseStore::Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) {
  // A check counting rejected hits records even when denied, which a lease cannot promise, and a
  // credit gives units back to the store's state: both take the exact path.
  if (HasRepeatedKey(checks) || NeedsExactCall(checks)) {
    exact_calls_.fetch_add(1, std::memory_order_relaxed);
    if (std::none_of(checks.begin(), checks.end(), [](const LimitCheck& c) { return c.refund; })) {
      DecideOn(inner(), checks, std::move(done));
      return;
    }
    DecideOn(inner(), checks,
             [this, kept = std::vector<LimitCheck>(checks.begin(), checks.end()),
              done = std::move(done)](absl::StatusOr<MultiDecision> m) mutable {
               if (m.ok() && m->allowed) ForgetDenials(kept);
               std::move(done)(std::move(m));
             });
    return;
  }
  LocalPass pass = Pass(checks, /*plan_call=*/true);
  for (size_t i : pass.refill) Refill(checks[i]);
  if (pass.answer.has_value()) {
    std::move(done)(*std::move(pass.answer));
    return;
  }
  if (pass.wants.empty()) {
    exact_calls_.fetch_add(1, std::memory_order_relaxed);
    DecideOn(inner(), checks, std::move(done));
    return;
  }
  lease_calls_.fetch_add(1, std::memory_order_relaxed);
  auto pending = std::make_shared<Pending>(
      Pending{.checks = std::vector<LimitCheck>(checks.begin(), checks.end()),
              .wants = std::move(pass.wants),
              .sent = clock_.Now()});
  source_.DecideAndLease(
      pending->checks, pending->wants,
      [this, pending, done = std::move(done)](absl::StatusOr<LeasedDecision> answer) mutable {
        Apply(pending->checks, pending->wants, pending->sent, answer);
        if (absl::IsInvalidArgument(answer.status()) && pending->checks.size() > 1) {
          // The checks were valid, so the source refused to lease them together: keys in
          // several Redis Cluster slots. They are decided as the store decides such checks
          // (refused or split, as its cross_slot says), with no lease.
          exact_calls_.fetch_add(1, std::memory_order_relaxed);
          DecideOn(inner(), pending->checks, std::move(done));
          return;
        }
        if (!answer.ok()) {
          std::move(done)(std::move(answer).status());
          return;
        }
        std::move(done)(std::move(answer->decision));
      });
}

std::optional<MultiDecision> LeaseStore::DecideLocally(std::span<const LimitCheck> checks) {
  if (HasRepeatedKey(checks) || NeedsExactCall(checks)) return std::nullopt;
  return Pass(checks, /*plan_call=*/false).answer;
}

void LeaseStore::ForgetDenials(std::span<const LimitCheck> checks) {
  for (const LimitCheck& check : checks) {
    if (!check.refund || check.cost == 0) continue;
    Shard& s = shards_[ShardOf(check.key)];
    MutexLock lock(&s.mu);
    if (auto it = s.entries.find(AbslView(check.key)); it != s.entries.end()) {
      it->second.denied_until = Time{};
    }
  }
}

void LeaseStore::Refill(const LimitCheck& check) {
  refills_.fetch_add(1, std::memory_order_relaxed);
  const Time now = clock_.Now();
  int64_t want = 0;
  {
    Shard& s = shards_[ShardOf(check.key)];
    MutexLock lock(&s.mu);
    if (Entry* e = Find(s, check.key, check.limit, now, false)) want = WantOf(*e, check.limit, now);
  }
  auto pending = std::make_shared<Pending>(Pending{
      .checks = {LimitCheck{.key = check.key, .limit = check.limit, .cost = 0}},
      .wants = {LeaseWant{.units = std::max<int64_t>(want, kMinWant), .ttl = TtlOf(check.limit)}},
      .sent = now});
  source_.DecideAndLease(pending->checks, pending->wants,
                         [this, pending](const absl::StatusOr<LeasedDecision>& answer) {
                           if (!answer.ok()) refill_errors_.fetch_add(1, std::memory_order_relaxed);
                           Apply(pending->checks, pending->wants, pending->sent, answer);
                         });
}

void LeaseStore::Apply(std::span<const LimitCheck> checks, std::span<const LeaseWant> wants,
                       Time sent, const absl::StatusOr<LeasedDecision>& answer) {
  const Time now = clock_.Now();
  std::vector<LeaseRefund> giveback;
  for (size_t i = 0; i < checks.size(); ++i) {
    Shard& shard = shards_[ShardOf(checks[i].key)];
    MutexLock lock(&shard.mu);
    auto it = shard.entries.find(AbslView(checks[i].key));
    if (it == shard.entries.end()) continue;
    Entry& e = it->second;
    if (wants[i].units > 0) e.leasing = false;
    if (!answer.ok() || !(e.limit == checks[i].limit)) continue;
    if (i >= answer->decision.decisions.size() || i >= answer->grants.size()) continue;
    const Decision& d = answer->decision.decisions[i];
    const LeaseGrant& g = answer->grants[i];
    // Times the store gave are measured from when the call was sent: the store decided later,
    // so every end is met early, never late.
    e.store_remaining = d.remaining;
    e.reset_at = sent + d.reset_after;
    if (!d.allowed && checks[i].cost > 0 && d.retry_after > microseconds::zero()) {
      e.denied_until = sent + std::min<microseconds>(d.retry_after, options_.remember_denial);
      e.denied_retry_at = sent + d.retry_after;
      e.denied_reset_at = sent + d.reset_after;
      e.denied_cost = checks[i].cost;
    }
    if (wants[i].units > 0) {
      e.demand = 0;
      e.since = sent;
    }
    if (wants[i].units > 0 && g.granted <= 0) {
      // The store had nothing to grant (under 2 units left). Refilling again at the next local
      // decision would ask again for nothing, one script call per decision until the lease is
      // spent (most of a window's tail under load): wait a tenth of the refresh target first.
      e.refill_after = now + options_.refresh_target / 10;
    }
    if (g.granted <= 0) continue;
    e.last_grant = g.granted;
    grants_.fetch_add(1, std::memory_order_relaxed);
    units_granted_.fetch_add(static_cast<uint64_t>(g.granted), std::memory_order_relaxed);
    const Time until = sent + microseconds(g.ends_us - g.now_us) - options_.end_margin;
    Units(e, now);  // clears slots that ended
    if (until <= now) {
      // Ended already (the answer came late): the units are stranded.
      units_expired_.fetch_add(static_cast<uint64_t>(g.granted), std::memory_order_relaxed);
      continue;
    }
    // A window's grants all end with the window: one slot holds them. (They are given back by
    // count, so merging them loses nothing; the record of the other algorithms names each grant,
    // so theirs keep a slot each.)
    const bool window = IsWindow(checks[i].limit.algorithm);
    Slot* slot = nullptr;
    for (Slot& s : e.slots) {
      if (window && s.units > 0 && s.grant.ends_us == g.ends_us) {
        slot = &s;
        break;
      }
    }
    if (slot != nullptr) {
      slot->units += g.granted;
      slot->grant.granted += g.granted;
      continue;
    }
    for (Slot& s : e.slots) {
      if (s.units == 0) {
        slot = &s;
        break;
      }
    }
    if (slot == nullptr) {
      // No room: give the grant back rather than strand it.
      giveback.push_back(
          LeaseRefund{.check = {.key = checks[i].key, .limit = checks[i].limit, .cost = 0},
                      .grant = g,
                      .unspent = g.granted});
      continue;
    }
    *slot = Slot{.units = g.granted, .until = until, .grant = g};
    if (!window) shard.timed_leases = true;
  }
  if (giveback.empty()) return;
  refunds_.fetch_add(1, std::memory_order_relaxed);
  for (const LeaseRefund& r : giveback) {
    units_refunded_.fetch_add(static_cast<uint64_t>(r.unspent), std::memory_order_relaxed);
  }
  source_.Refund(giveback, [](const absl::Status&) {});
}

void LeaseStore::RefundAll(std::chrono::milliseconds wait) {
  const Time now = clock_.Now();
  std::vector<LeaseRefund> refunds;
  for (Shard& s : shards_) {
    MutexLock lock(&s.mu);
    for (auto& [key, e] : s.entries) {
      for (Slot& slot : e.slots) {
        if (slot.units > 0 && slot.until > now) {
          refunds.push_back(LeaseRefund{.check = {.key = key, .limit = e.limit, .cost = 0},
                                        .grant = slot.grant,
                                        .unspent = slot.units});
        }
        slot = Slot{};
      }
    }
  }
  SendRefunds(refunds, wait);
}

void LeaseStore::SendRefunds(std::span<const LeaseRefund> refunds, std::chrono::milliseconds wait) {
  if (refunds.empty()) return;
  struct Wait {
    Mutex mu;
    std::condition_variable_any cv;
    size_t outstanding = 0;
  };
  auto w = std::make_shared<Wait>();
  constexpr size_t kBatch = 64;
  for (size_t at = 0; at < refunds.size(); at += kBatch) {
    const size_t n = std::min(kBatch, refunds.size() - at);
    uint64_t units = 0;
    for (size_t i = at; i < at + n; ++i) units += static_cast<uint64_t>(refunds[i].unspent);
    refunds_.fetch_add(1, std::memory_order_relaxed);
    units_refunded_.fetch_add(units, std::memory_order_relaxed);
    {
      MutexLock lock(&w->mu);
      ++w->outstanding;
    }
    source_.Refund(refunds.subspan(at, n), [w](const absl::Status& status) {
      if (!status.ok()) spdlog::warn("lease refund failed: {}", status.ToString());
      MutexLock lock(&w->mu);
      --w->outstanding;
      w->cv.notify_all();
    });
  }
  if (wait <= std::chrono::milliseconds::zero()) return;
  std::unique_lock<Mutex> lock(w->mu);
  w->cv.wait_for(lock, wait, [&] { return w->outstanding == 0; });
}

std::vector<LeaseRefund> LeaseStore::TakeEnding(Time now) {
  // A round every maintain_every: a lease ending before the round after next is given back now.
  const microseconds horizon = 2 * duration_cast<microseconds>(options_.maintain_every);
  std::vector<LeaseRefund> refunds;
  for (Shard& s : shards_) {
    MutexLock lock(&s.mu);
    if (!s.timed_leases) continue;
    bool left = false;
    for (auto& [key, e] : s.entries) {
      if (IsWindow(e.limit.algorithm)) continue;
      for (Slot& slot : e.slots) {
        if (slot.units == 0 || slot.until <= now) continue;
        const microseconds length(slot.grant.ends_us - slot.grant.now_us);
        if (Until(slot.until, now) > std::max(horizon, length / 4)) {
          left = true;
          continue;
        }
        refunds.push_back(LeaseRefund{.check = {.key = key, .limit = e.limit, .cost = 0},
                                      .grant = slot.grant,
                                      .unspent = slot.units});
        slot = Slot{};
      }
    }
    s.timed_leases = left;
  }
  return refunds;
}

void LeaseStore::Maintain() {
  const Time now = clock_.Now();
  std::vector<LeaseRefund> ending = TakeEnding(now);
  uint64_t units = 0;
  for (const LeaseRefund& r : ending) units += static_cast<uint64_t>(r.unspent);
  units_refunded_ending_.fetch_add(units, std::memory_order_relaxed);
  SendRefunds(ending, std::chrono::milliseconds::zero());
  {
    MutexLock lock(&maintain_mu_);
    if (now < next_announce_) return;
    next_announce_ = now + options_.announce_every;
  }
  source_.Announce(holder_id_, 3 * duration_cast<microseconds>(options_.announce_every),
                   [seen = instances_seen_](absl::StatusOr<int64_t> count) {
                     // Unanswered: the last count stands (an outage is when it is needed).
                     if (count.ok()) seen->store(*count, std::memory_order_relaxed);
                   });
}

std::optional<int64_t> LeaseStore::SharingInstances() const {
  const int64_t seen = instances_seen_->load(std::memory_order_relaxed);
  if (seen <= 0) return std::nullopt;
  return seen;
}

LeaseStats LeaseStore::Stats() const {
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return LeaseStats{
      .local_admits = get(local_admits_),
      .local_denials = get(local_denials_),
      .lease_calls = get(lease_calls_),
      .refills = get(refills_),
      .refill_errors = get(refill_errors_),
      .exact_calls = get(exact_calls_),
      .grants = get(grants_),
      .units_granted = get(units_granted_),
      .units_expired = get(units_expired_),
      .refunds = get(refunds_),
      .units_refunded = get(units_refunded_),
      .units_refunded_ending = get(units_refunded_ending_),
      .instances_seen = static_cast<uint64_t>(
          std::max<int64_t>(0, instances_seen_->load(std::memory_order_relaxed))),
      .keys = static_cast<uint64_t>(std::max<int64_t>(0, keys_.load(std::memory_order_relaxed)))};
}

}  // namespace sluice::internal
