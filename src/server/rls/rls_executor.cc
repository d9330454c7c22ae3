#include "src/server/rls/rls_executor.h"

#include <atomic>
#include <deque>
#include <utility>

#include "src/util/mutex.h"

namespace sluice::server {
namespace {

// Records a peek's answer for `l`. A peek stands in for the check of a request that another limit
// already rejected: the store admits its cost of 0 and records nothing, so the decision is turned
// into a denial when the limit's own hits would not have fit. The request's statuses and stats then
// report every limit it would have exceeded, as the reference reports each descriptor (with
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT, whose all-or-nothing counting sluice always has).
void RecordPeek(const PlannedLimit& l, Decision d, LimitResult& r) {
  if (l.hits > 0 && d.allowed && d.remaining < l.hits) d.allowed = false;
  r.decision = d;
  r.counted = false;
  r.peeked = true;
}

}  // namespace

struct PlanExecutor::Run {
  std::shared_ptr<const Plan> plan;
  // One per plan->limits. Each store answer writes only its own entries.
  std::vector<LimitResult> results;
  Done done;
  // The inputs of calls in flight: a store may read them until it answers. A deque, so that adding
  // one never moves another.
  std::deque<std::vector<LimitCheck>> checks;
  // Set before round 1: an enforced limit is already over (requests_per_unit 0, cached).
  bool known_over = false;
  // The 0-hit limits peeked at in round 1.
  std::vector<size_t> gated;
  // The limits counting rejected hits (a rule's `debt`), each decided on its own in round 1.
  std::vector<size_t> alone;
  // Touched only by the thread that ends a round.
  bool in_round_two = false;
  // Store calls in flight, plus one while a round is being launched.
  std::atomic<int> pending{0};
  internal::Mutex mu;
  absl::Status error ABSL_GUARDED_BY(mu);

  void Fail(absl::Status status) {
    internal::MutexLock lock(&mu);
    if (error.ok()) error = std::move(status);
  }
};

void PlanExecutor::Execute(std::shared_ptr<const Plan> plan, Done done) {
  auto run = std::make_shared<Run>();
  run->results.resize(plan->limits.size());
  run->plan = std::move(plan);
  run->done = std::move(done);
  StartRoundOne(run);
}

void PlanExecutor::StartRoundOne(const std::shared_ptr<Run>& run) {
  const std::vector<PlannedLimit>& limits = run->plan->limits;
  for (size_t i = 0; i < limits.size(); ++i) {
    const PlannedLimit& l = limits[i];
    LimitResult& r = run->results[i];
    if (!l.limit.has_value()) r.decision = DeniedWithoutStore(l, clock_.EpochNow());
  }
  for (size_t i = 0; i < limits.size(); ++i) {
    const PlannedLimit& l = limits[i];
    const LimitResult& r = run->results[i];
    if (l.Enforced() && r.decision.has_value() && IsOver(l, *r.decision)) run->known_over = true;
  }
  if (run->plan->reference_semantics) {
    StartReferenceRoundOne(run);
    return;
  }
  std::vector<size_t> refunds;
  std::vector<size_t> shadow;
  std::vector<size_t> quota;
  std::vector<size_t> zero_hit;
  bool costed = false;
  for (size_t i = 0; i < limits.size(); ++i) {
    const PlannedLimit& l = limits[i];
    if (run->results[i].decision.has_value()) continue;
    if (l.refund) {
      refunds.push_back(i);
    } else if (l.count_rejected) {
      // It records its hits whether or not it passes: no all-or-nothing call can hold it.
      run->alone.push_back(i);
    } else if (l.shadow) {
      shadow.push_back(i);
    } else if (l.quota) {
      quota.push_back(i);
    } else if (l.hits == 0) {
      zero_hit.push_back(i);
    } else {
      costed = true;
    }
  }
  // A 0-hit check beside limits that count: learn first whether it is exhausted, so that a request
  // it rejects counts nothing anywhere.
  if (!run->known_over && costed && !zero_hit.empty()) run->gated = std::move(zero_hit);

  run->pending.store(1 + (refunds.empty() ? 0 : 1) + static_cast<int>(run->alone.size()) +
                     (shadow.empty() ? 0 : 1) + static_cast<int>(quota.size()) +
                     (run->gated.empty() ? 0 : 1));
  // Refunds are given back whatever the request's other limits decide (the reference's): one call
  // of their own, which always passes.
  if (!refunds.empty()) CheckTogether(run, std::move(refunds), /*peek=*/false);
  for (size_t i : run->alone) CheckAlone(run, i, /*peek=*/false);
  if (!shadow.empty()) CheckTogether(run, std::move(shadow), /*peek=*/false);
  for (size_t i : quota) {
    const PlannedLimit& l = limits[i];
    store_.CheckAsync(l.key, *l.limit, l.hits, [this, run, i](absl::StatusOr<Decision> d) {
      if (d.ok()) {
        run->results[i].decision = *d;
        run->results[i].counted = d->allowed;
        run->results[i].from_cache = d->answered_locally;
      } else {
        run->Fail(d.status());
      }
      Release(run);
    });
  }
  if (!run->gated.empty()) CheckTogether(run, run->gated, /*peek=*/true);
  Release(run);
}

void PlanExecutor::StartRoundTwo(const std::shared_ptr<Run>& run) {
  bool failed = false;
  {
    internal::MutexLock lock(&run->mu);
    failed = !run->error.ok();
  }
  if (failed) {
    Complete(run);
    return;
  }
  if (run->plan->reference_semantics) {
    StartReferenceRoundTwo(run);
    return;
  }
  const Plan& plan = *run->plan;
  bool over = run->known_over || AllQuotaDescriptorsOver(plan, run->results);
  for (size_t i : run->gated) over = over || IsOver(plan.limits[i], *run->results[i].decision);
  for (size_t i : run->alone) {
    const PlannedLimit& l = plan.limits[i];
    over = over || (l.Enforced() && IsOver(l, *run->results[i].decision));
  }
  std::vector<size_t> enforced;
  for (size_t i = 0; i < plan.limits.size(); ++i) {
    if (plan.limits[i].Enforced() && !run->results[i].decision.has_value()) enforced.push_back(i);
  }
  if (enforced.empty()) {
    Complete(run);
    return;
  }
  run->pending.store(2);
  CheckTogether(run, std::move(enforced), /*peek=*/over);
  Release(run);
}

void PlanExecutor::CheckTogether(const std::shared_ptr<Run>& run, std::vector<size_t> indexes,
                                 bool peek) {
  std::vector<LimitCheck>& checks = run->checks.emplace_back();
  for (size_t i : indexes) {
    const PlannedLimit& l = run->plan->limits[i];
    checks.push_back(
        {.key = l.key, .limit = *l.limit, .cost = peek ? 0 : l.hits, .refund = l.refund});
  }
  // One call whatever the count: the store takes its cheaper path for a single check itself.
  store_.CheckAllAsync(
      checks, [this, run, indexes = std::move(indexes), peek](absl::StatusOr<MultiDecision> m) {
        if (m.ok()) {
          for (size_t j = 0; j < indexes.size() && j < m->decisions.size(); ++j) {
            LimitResult& r = run->results[indexes[j]];
            if (peek) {
              RecordPeek(run->plan->limits[indexes[j]], m->decisions[j], r);
            } else {
              r.decision = m->decisions[j];
              r.counted = m->allowed;
              r.from_cache = m->decisions[j].answered_locally;
            }
          }
        } else {
          run->Fail(m.status());
        }
        Release(run);
      });
}

void PlanExecutor::StartReferenceRoundOne(const std::shared_ptr<Run>& run) {
  const Plan& plan = *run->plan;
  std::vector<size_t> alone;
  std::vector<size_t> peeks;
  for (size_t i = 0; i < plan.limits.size(); ++i) {
    if (run->results[i].decision.has_value()) continue;
    // The reference's GET before its INCRBYs, for the fixed windows it would stop (a refund is
    // never stopped: it does not count rejected hits).
    const bool peek = plan.stop_increment_when_over_limit && plan.limits[i].count_rejected;
    (peek ? peeks : alone).push_back(i);
  }
  run->pending.store(1 + static_cast<int>(alone.size() + peeks.size()));
  for (size_t i : alone) CheckAlone(run, i, /*peek=*/false);
  for (size_t i : peeks) CheckAlone(run, i, /*peek=*/true);
  Release(run);
}

void PlanExecutor::StartReferenceRoundTwo(const std::shared_ptr<Run>& run) {
  const Plan& plan = *run->plan;
  if (!plan.stop_increment_when_over_limit) {
    Complete(run);
    return;
  }
  // Which peeked fixed windows these hits would take past their limit; a `requests_per_unit: 0`
  // limit is past it already (the reference counts it in Redis like any other).
  std::vector<bool> would_pass(plan.limits.size(), false);
  bool any = false;
  for (size_t i = 0; i < plan.limits.size(); ++i) {
    const PlannedLimit& l = plan.limits[i];
    const LimitResult& r = run->results[i];
    if (!r.decision.has_value()) continue;
    if (!l.limit.has_value()) {
      any = true;
    } else if (r.peeked) {
      would_pass[i] = !r.decision->allowed || r.decision->remaining < l.hits;
      any = any || would_pass[i];
    }
  }
  std::vector<size_t> counted;
  for (size_t i = 0; i < plan.limits.size(); ++i) {
    if (!run->results[i].peeked) continue;
    if (!any || would_pass[i]) {
      counted.push_back(i);
    } else {
      // Not incremented: the reference reads the counter as it stands as the counter after.
      run->results[i].stats_as_counted = true;
    }
  }
  if (counted.empty()) {
    Complete(run);
    return;
  }
  run->pending.store(1 + static_cast<int>(counted.size()));
  for (size_t i : counted) CheckAlone(run, i, /*peek=*/false);
  Release(run);
}

void PlanExecutor::CheckAlone(const std::shared_ptr<Run>& run, size_t i, bool peek) {
  const PlannedLimit& l = run->plan->limits[i];
  std::vector<LimitCheck>& checks = run->checks.emplace_back();
  checks.push_back({.key = l.key,
                    .limit = *l.limit,
                    .cost = peek ? 0 : l.hits,
                    .count_rejected = l.count_rejected,
                    .refund = l.refund});
  store_.CheckAllAsync(checks, [this, run, i, peek](absl::StatusOr<MultiDecision> m) {
    if (m.ok() && m->decisions.size() == 1) {
      LimitResult& r = run->results[i];
      const PlannedLimit& l = run->plan->limits[i];
      r.decision = m->decisions[0];
      r.from_cache = r.decision->answered_locally;
      // A check counting rejected hits records them also when denied (not when the over-limit
      // cache answered: the reference does not increment a key its local cache holds).
      r.counted = !peek && !r.from_cache && (r.decision->allowed || l.count_rejected);
      r.peeked = peek;
    } else {
      run->Fail(m.ok() ? absl::InternalError("store answered no decision") : m.status());
    }
    Release(run);
  });
}

void PlanExecutor::Release(const std::shared_ptr<Run>& run) {
  if (run->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (!run->in_round_two) {
    run->in_round_two = true;
    StartRoundTwo(run);
  } else {
    Complete(run);
  }
}

void PlanExecutor::Complete(const std::shared_ptr<Run>& run) {
  absl::Status error;
  {
    internal::MutexLock lock(&run->mu);
    error = run->error;
  }
  if (!error.ok()) {
    std::move(run->done)(std::move(error));
    return;
  }
  std::move(run->done)(std::move(run->results));
}

}  // namespace sluice::server
