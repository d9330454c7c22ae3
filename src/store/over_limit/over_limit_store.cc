#include "src/store/over_limit/over_limit_store.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace sluice::internal {

OverLimitStore::OverLimitStore(Store& inner, const OverLimitStoreOptions& options)
    : StoreWrapper(inner),
      cache_(options.max_entries, options.max_bytes, options.max_entry_life),
      clock_(options.clock != nullptr ? *options.clock : Clock::Real()) {}

void OverLimitStore::Remember(std::span<const LimitCheck> checks, const MultiDecision& decision) {
  const auto now = clock_.Now();
  for (size_t i = 0; i < checks.size() && i < decision.decisions.size(); ++i) {
    const Decision& d = decision.decisions[i];
    if (checks[i].refund) {
      // Recorded only when the whole call passed.
      if (decision.allowed && checks[i].cost > 0) cache_.Forget(checks[i].key);
      continue;
    }
    // Not a 0-cost check: the cache answers requests of at least the denied cost.
    if (d.allowed || checks[i].cost == 0) continue;
    cache_.Add(checks[i].key, checks[i].limit.limit, checks[i].cost, now, d.retry_after,
               d.reset_after);
  }
}

void OverLimitStore::Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) {
  const auto now = clock_.Now();
  std::vector<std::optional<OverLimitCache::Over>> over(checks.size());
  size_t cached = 0;
  bool credits = false;
  for (size_t i = 0; i < checks.size(); ++i) {
    credits = credits || checks[i].refund;
    // A credit is never denied, and a peek never recorded.
    if (checks[i].cost == 0 || checks[i].refund) continue;
    over[i] = cache_.Lookup(checks[i].key, checks[i].limit.limit, checks[i].cost, now);
    cached += over[i].has_value() ? 1 : 0;
  }
  if (cached == 0) {
    // The checks are the caller's only until this returns; the answer may come later.
    DecideOn(inner(), checks,
             [this, kept = std::vector<LimitCheck>(checks.begin(), checks.end()), credits,
              done = std::move(done)](absl::StatusOr<MultiDecision> m) mutable {
               // An admission without credits leaves the cache as it is: no walk over it.
               if (m.ok() && (!m->allowed || credits)) Remember(kept, *m);
               std::move(done)(std::move(m));
             });
    return;
  }
  hits_.fetch_add(cached, std::memory_order_relaxed);
  MultiDecision answer{.allowed = false, .decisions = std::vector<Decision>(checks.size())};
  for (size_t i = 0; i < checks.size(); ++i) {
    if (!over[i].has_value()) continue;
    answer.decisions[i] = Decision{.allowed = false,
                                   .limit = checks[i].limit.Capacity(),
                                   .remaining = 0,
                                   .reset_after = over[i]->reset_after,
                                   .retry_after = over[i]->retry_after,
                                   .answered_locally = true};
  }
  if (cached == checks.size()) {
    std::move(done)(std::move(answer));
    return;
  }
  // The request is denied: the others are only peeked at, so that nothing is recorded.
  auto peeks = std::make_shared<std::vector<LimitCheck>>();
  std::vector<size_t> index;
  for (size_t i = 0; i < checks.size(); ++i) {
    if (over[i].has_value()) continue;
    peeks->push_back({.key = checks[i].key, .limit = checks[i].limit, .cost = 0});
    index.push_back(i);
  }
  std::vector<int64_t> costs;
  costs.reserve(index.size());
  for (size_t i : index) costs.push_back(checks[i].cost);
  DecideOn(inner(), *peeks,
           [peeks, index = std::move(index), costs = std::move(costs), answer = std::move(answer),
            done = std::move(done)](absl::StatusOr<MultiDecision> m) mutable {
             if (!m.ok()) {
               std::move(done)(m.status());
               return;
             }
             for (size_t j = 0; j < index.size() && j < m->decisions.size(); ++j) {
               Decision d = m->decisions[j];
               // Would its own cost have fit? A peek always passes.
               d.allowed = d.remaining >= costs[j];
               answer.decisions[index[j]] = d;
             }
             std::move(done)(std::move(answer));
           });
}

}  // namespace sluice::internal
