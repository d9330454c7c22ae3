#include "src/store/redis/slot_groups.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "src/store/redis/client/cluster/cluster_slot.h"

namespace sluice {

std::vector<SlotGroup> GroupBySlot(std::span<const std::string> redis_keys) {
  std::vector<SlotGroup> groups;
  for (size_t i = 0; i < redis_keys.size(); ++i) {
    const uint16_t slot = ClusterHashSlot(redis_keys[i]);
    // A call has at most kMaxChecksPerScript checks: a linear search beats a map here.
    SlotGroup* group = nullptr;
    for (SlotGroup& g : groups) {
      if (g.slot == slot) {
        group = &g;
        break;
      }
    }
    if (group == nullptr) group = &groups.emplace_back(SlotGroup{.slot = slot, .checks = {}});
    group->checks.push_back(i);
  }
  return groups;
}

SplitJoin::SplitJoin(size_t checks, size_t groups, Store::MultiDecisionCallback done)
    : decisions_(checks), pending_(groups), done_(std::move(done)) {}

void SplitJoin::Record(std::span<const size_t> indices, MultiDecision group) {
  if (group.decisions.size() != indices.size()) {
    Fail(absl::InternalError(absl::StrCat("redis store: a slot group of ", indices.size(),
                                          " checks answered ", group.decisions.size(),
                                          " decisions")));
    return;
  }
  Store::MultiDecisionCallback done;
  MultiDecision result;
  absl::Status status;
  {
    internal::MutexLock lock(&mu_);
    for (size_t k = 0; k < indices.size(); ++k) decisions_[indices[k]] = group.decisions[k];
    allowed_ = allowed_ && group.allowed;
    if (!Arrive()) return;
    done = std::move(done_);
    status = status_;
    result = MultiDecision{.allowed = allowed_, .decisions = std::move(decisions_)};
  }
  if (!status.ok()) {
    Finish(std::move(done), std::move(status));
  } else {
    Finish(std::move(done), std::move(result));
  }
}

void SplitJoin::Fail(absl::Status status) {
  Store::MultiDecisionCallback done;
  absl::Status first;
  {
    internal::MutexLock lock(&mu_);
    if (status_.ok()) status_ = std::move(status);
    if (!Arrive()) return;
    done = std::move(done_);
    first = status_;
  }
  Finish(std::move(done), std::move(first));
}

bool SplitJoin::Arrive() { return --pending_ == 0; }

void SplitJoin::Finish(Store::MultiDecisionCallback done, absl::StatusOr<MultiDecision> result) {
  // Outside the lock: `done` may start the next call on this thread.
  std::move(done)(std::move(result));
}

}  // namespace sluice
