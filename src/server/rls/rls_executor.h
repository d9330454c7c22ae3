// PlanExecutor: decides a Plan's limits on a Store, in at most two rounds of store calls, and
// completes in exactly one place.
//
// Round 1, all at once: the shadow-mode limits (one all-or-nothing call of their own, never
// denying the request); each quota-mode limit on its own (it counts the request whenever it admits
// it, as the reference's do); and, when the request mixes 0-hit checks with hits, a peek at the
// 0-hit limits; the refunds (is_negative_hits), in one call of their own that always passes,
// whatever the other limits decide; and each limit of a `debt` rule on its own, counting its hits
// whether or not it passes (over, it makes round 2 peek). Round 2: the enforced limits, all-or-nothing in one call, so a
// request rejected by one limit consumes none of the others. Round 2 only peeks (cost 0) when the
// request is already known to be over: a `requests_per_unit: 0` limit, an exhausted 0-hit check, or
// every quota-mode descriptor over.
//
// In exact-reference mode (Plan::reference_semantics) the rounds are envoyproxy/ratelimit's
// DoLimit instead (src/redis/fixed_cache_impl.go): every limit is its own store call, the fixed
// windows counting rejected hits (LimitCheck::count_rejected), in one round. With
// stop_increment_when_over_limit, round 1 peeks at every fixed window (the reference's GET) and
// decides the other limits; round 2 then counts every fixed window when none would go past its
// limit, else only those that would (the reference increments those), the others keeping their
// peek. Limits of sluice's other algorithms keep sluice's counting, each on its own. Refunds are
// each their own call there too.
//
// Each store answer writes only its own limits' results; a counter of outstanding calls (acquire
// and release) orders those writes before the round that reads them, so answers may arrive on any
// thread in any order. The callback runs inline when no store call is needed or the store answers
// inline (the memory store), else on the thread of the last store answer.
//
// Example:
//   PlanExecutor executor(store, Clock::Real());
//   executor.Execute(std::make_shared<const Plan>(std::move(plan)),
//                    [](absl::StatusOr<std::vector<LimitResult>> results) { ... });
//
// Errors: the first store error of the request, as the store gave it; the results are then lost.
//
// An over-limit cache, when sluiced has one, is a store decorator (OverLimitStore) in front of the
// store: its answers carry Decision::answered_locally, which the results report as from_cache.
//
// Thread safety: thread-safe; the store and clock must outlive every execution.
#ifndef SLUICE_SERVER_RLS_RLS_EXECUTOR_H_
#define SLUICE_SERVER_RLS_RLS_EXECUTOR_H_

#include <memory>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"

#include "sluice/clock.h"
#include "sluice/store.h"

#include "src/server/rls/rls_plan.h"

namespace sluice::server {

class PlanExecutor {
 public:
  // Receives one result per plan.limits, in order.
  using Done = absl::AnyInvocable<void(absl::StatusOr<std::vector<LimitResult>>) &&>;

  PlanExecutor(Store& store, Clock& clock) : store_(store), clock_(clock) {}

  // PlanExecutor::Execute()
  //
  // Decides every limit of `plan` and completes `done` exactly once.
  void Execute(std::shared_ptr<const Plan> plan, Done done);

 private:
  struct Run;
  // Starts round 1; the round's last answer starts round 2.
  void StartRoundOne(const std::shared_ptr<Run>& run);
  void StartRoundTwo(const std::shared_ptr<Run>& run);
  // Marks one store call (or the launching of a round) done; the last one moves on.
  void Release(const std::shared_ptr<Run>& run);
  // The one place a run completes.
  void Complete(const std::shared_ptr<Run>& run);
  // Decides `indexes` (limits of run->plan) with `costs` in one all-or-nothing call.
  void CheckTogether(const std::shared_ptr<Run>& run, std::vector<size_t> indexes, bool peek);
  // Exact-reference mode's two rounds.
  void StartReferenceRoundOne(const std::shared_ptr<Run>& run);
  void StartReferenceRoundTwo(const std::shared_ptr<Run>& run);
  // Decides limit `i` on its own, with its hits or (`peek`) 0, counting rejected hits when the
  // plan says so. A peek's result is marked peeked and not counted.
  void CheckAlone(const std::shared_ptr<Run>& run, size_t i, bool peek);

  Store& store_;
  Clock& clock_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RLS_EXECUTOR_H_
