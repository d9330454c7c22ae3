// PerSecondStore: a Store that keeps the limits of one second in a store of their own, as the
// reference's REDIS_PERSECOND does (a busy per-second counter then never shares a server with the
// long-lived counters).
//
// A check of a limit whose period is exactly one second goes to `per_second`, every other to
// `main`. CheckAll() over limits of both kinds is all-or-nothing within each store but not across
// them: the per-second limits are decided first, and only when they pass are the others decided;
// if those then reject the request, the per-second limits keep its hits (as the reference, which
// counts every hit, does). Without a mix, CheckAll() is one call to one store.
//
// Example:
//   PerSecondStore store(*main_store, *per_second_store);
//
// Thread safety: thread-safe; both stores must outlive it. Async calls complete on the thread of
// the last store answer, inline when both stores answer inline.
#ifndef SLUICE_STORE_SPLIT_PER_SECOND_STORE_H_
#define SLUICE_STORE_SPLIT_PER_SECOND_STORE_H_

#include <span>
#include <string_view>

#include "sluice/store.h"
#include "sluice/store_wrapper.h"

namespace sluice {

class PerSecondStore final : public StoreWrapper {
 public:
  PerSecondStore(Store& main, Store& per_second) : StoreWrapper(main), per_second_(per_second) {}

  std::string_view Name() const override { return "per-second split"; }
  bool AnswersInline() const override {
    return inner().AnswersInline() && per_second_.AnswersInline();
  }

  // True for the limits that go to the per-second store.
  static bool IsPerSecond(const Limit& limit) { return limit.period == std::chrono::seconds(1); }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override;

 private:
  Store& per_second_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_SPLIT_PER_SECOND_STORE_H_
