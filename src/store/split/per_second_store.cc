#include "src/store/split/per_second_store.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

namespace sluice {
namespace {

// The checks of one request split by store, with each one's index in the request.
struct Split {
  std::vector<LimitCheck> per_second;
  std::vector<size_t> per_second_index;
  std::vector<LimitCheck> other;
  std::vector<size_t> other_index;
};

Split SplitChecks(std::span<const LimitCheck> checks) {
  Split s;
  for (size_t i = 0; i < checks.size(); ++i) {
    if (PerSecondStore::IsPerSecond(checks[i].limit)) {
      s.per_second.push_back(checks[i]);
      s.per_second_index.push_back(i);
    } else {
      s.other.push_back(checks[i]);
      s.other_index.push_back(i);
    }
  }
  return s;
}

// As a peek sees `checks`: every cost 0.
std::vector<LimitCheck> Peeks(std::vector<LimitCheck> checks) {
  for (LimitCheck& c : checks) c.cost = 0;
  return checks;
}

// Joins the two halves' decisions back into request order.
MultiDecision Join(const Split& s, size_t n, const MultiDecision& first,
                   const MultiDecision& second, bool allowed) {
  MultiDecision out{.allowed = allowed, .decisions = std::vector<Decision>(n)};
  for (size_t j = 0; j < s.per_second_index.size() && j < first.decisions.size(); ++j) {
    out.decisions[s.per_second_index[j]] = first.decisions[j];
  }
  for (size_t j = 0; j < s.other_index.size() && j < second.decisions.size(); ++j) {
    out.decisions[s.other_index[j]] = second.decisions[j];
  }
  return out;
}

}  // namespace

void PerSecondStore::Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) {
  const size_t per_second = static_cast<size_t>(std::count_if(
      checks.begin(), checks.end(), [](const LimitCheck& c) { return IsPerSecond(c.limit); }));
  // Without a mix, one call to one store.
  if (per_second == checks.size()) {
    DecideOn(per_second_, checks, std::move(done));
    return;
  }
  if (per_second == 0) {
    DecideOn(inner(), checks, std::move(done));
    return;
  }
  auto s = std::make_shared<Split>(SplitChecks(checks));
  const size_t n = checks.size();
  DecideOn(per_second_, s->per_second,
           [this, s, n, done = std::move(done)](absl::StatusOr<MultiDecision> first) mutable {
             if (!first.ok()) {
               std::move(done)(std::move(first).status());
               return;
             }
             if (!first->allowed) s->other = Peeks(std::move(s->other));
             DecideOn(
                 inner(), s->other,
                 [s, n, first = *std::move(first),
                  done = std::move(done)](absl::StatusOr<MultiDecision> second) mutable {
                   if (!second.ok()) {
                     std::move(done)(std::move(second).status());
                     return;
                   }
                   std::move(done)(Join(*s, n, first, *second, first.allowed && second->allowed));
                 });
           });
}

}  // namespace sluice
