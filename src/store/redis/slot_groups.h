// Slot groups: how a CheckAll() on Redis Cluster is split when its keys are in several slots
// (RedisStoreOptions::cross_slot = kSplit; docs/redis.md, "Keys on Redis Cluster").
//
// GroupBySlot() groups the Redis keys of one call by Cluster slot; each group is then one atomic
// script. SplitJoin collects the groups' answers into the call's one MultiDecision: allowed only
// when every group allowed, decisions in the caller's order, the first error if any group failed.
//
// Example:
//   std::vector<SlotGroup> groups = GroupBySlot(redis_keys);
//   auto join = std::make_shared<SplitJoin>(redis_keys.size(), groups.size(), std::move(done));
//   // per group, on its answer: join->Record(group.checks, decision) or join->Fail(status)
//
// Thread safety: GroupBySlot() is pure; SplitJoin is thread-safe (groups may answer on different
// threads) and calls `done` exactly once, on the thread of the last answer, outside its lock.
#ifndef SLUICE_STORE_REDIS_SLOT_GROUPS_H_
#define SLUICE_STORE_REDIS_SLOT_GROUPS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"

#include "sluice/decision.h"
#include "sluice/store.h"

#include "src/util/mutex.h"

namespace sluice {

// The checks of one call that share a Cluster slot.
struct SlotGroup {
  uint16_t slot = 0;
  // Indices into the call's checks, in increasing order.
  std::vector<size_t> checks{};
};

// GroupBySlot()
//
// Returns the groups of `redis_keys` by ClusterHashSlot(), in the order of each group's first key
// (so the group of redis_keys[0] comes first). REQUIRES: !redis_keys.empty().
std::vector<SlotGroup> GroupBySlot(std::span<const std::string> redis_keys);

class SplitJoin {
 public:
  // `checks` decisions are expected from `groups` answers; `done` receives the joined result.
  SplitJoin(size_t checks, size_t groups, Store::MultiDecisionCallback done);
  SplitJoin(const SplitJoin&) = delete;
  SplitJoin& operator=(const SplitJoin&) = delete;
  ~SplitJoin() = default;

  // SplitJoin::Record()
  //
  // Records one group's answer: `group.decisions[k]` is the decision of check `indices[k]`. A
  // decision count other than indices.size() is recorded as an Internal error.
  void Record(std::span<const size_t> indices, MultiDecision group);

  // SplitJoin::Fail()
  //
  // Records a group that failed; the call then fails with the first such status.
  void Fail(absl::Status status);

 private:
  // Counts one answer in; returns true (and hands over `done_`) when it was the last.
  bool Arrive() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(Store::MultiDecisionCallback done, absl::StatusOr<MultiDecision> result);

  internal::Mutex mu_;
  std::vector<Decision> decisions_ ABSL_GUARDED_BY(mu_);
  bool allowed_ ABSL_GUARDED_BY(mu_) = true;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  size_t pending_ ABSL_GUARDED_BY(mu_);
  Store::MultiDecisionCallback done_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_SLOT_GROUPS_H_
