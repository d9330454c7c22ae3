#include "src/store/memory/entry_state.h"

#include <memory>
#include <utility>

namespace sluice::internal {

EntryState FreshState(Algorithm algorithm) {
  EntryState state;
  state.algorithm = algorithm;
  if (algorithm == Algorithm::kSlidingLog) {
    state.log = std::make_unique<algorithm::SlidingLogState>();
  }
  return state;
}

EntryState CopyState(const Slot& slot) {
  EntryState state;
  state.algorithm = SlotAlgorithm(slot);
  if (state.algorithm == Algorithm::kSlidingLog) {
    state.log = std::make_unique<algorithm::SlidingLogState>(*SlotLog(slot));
  } else {
    state.word0 = slot.state0;
    state.word1 = slot.state1;
  }
  return state;
}

Decision DecideOnState(const Limit& limit, EntryState& state, int64_t now_us, int64_t cost,
                       CheckMode mode) {
  if (limit.algorithm == Algorithm::kSlidingLog) {
    return DecideOnLog(limit, *state.log, now_us, cost, mode);
  }
  return DecideOnWords(limit, state.word0, state.word1, now_us, cost, mode);
}

void StoreState(Slot& slot, EntryState state, int64_t expiry_us) {
  ReleaseState(slot);
  if (state.algorithm == Algorithm::kSlidingLog) {
    slot.state0 = reinterpret_cast<int64_t>(state.log.release());
  } else {
    slot.state0 = state.word0;
    slot.state1 = state.word1;
  }
  SetMeta(slot, state.algorithm, expiry_us);
}

}  // namespace sluice::internal
