// StoreWrapper: the base of a store decorator (a failure policy, a per-second split, a cache in
// front of a store). It forwards everything to the store it wraps, so a decorator overrides only
// what it changes, usually Decide() alone, and inherits the validated conveniences of Store.
//
// Example (a decorator that counts the checks it forwards):
//   class CountingStore final : public StoreWrapper {
//    public:
//     using StoreWrapper::StoreWrapper;
//     std::atomic<uint64_t> checks{0};
//    protected:
//     void Decide(std::span<const LimitCheck> batch, MultiDecisionCallback done) override {
//       checks.fetch_add(batch.size(), std::memory_order_relaxed);
//       DecideOn(inner(), batch, std::move(done));
//     }
//   };
//
// Thread safety: as the wrapped store.
#ifndef SLUICE_STORE_WRAPPER_H_
#define SLUICE_STORE_WRAPPER_H_

#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "sluice/store.h"

namespace sluice {

class StoreWrapper : public Store {
 public:
  // Wraps `inner`, which must outlive the wrapper.
  explicit StoreWrapper(Store& inner) : inner_(&inner) {}
  // Wraps and owns `inner`. REQUIRES: inner != nullptr. The wrapped store is destroyed after the
  // decorator's own members: a decorator whose callbacks use its members (a late answer may
  // complete while the store shuts down) owns the store in a member declared last instead, and
  // wraps it by reference.
  explicit StoreWrapper(std::unique_ptr<Store> inner)
      : owned_(std::move(inner)), inner_(owned_.get()) {}

  std::string_view Name() const override { return inner_->Name(); }
  bool AnswersInline() const override { return inner_->AnswersInline(); }

  // The wrapped store.
  Store& inner() const { return *inner_; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    DecideOn(*inner_, checks, std::move(done));
  }

  // StoreWrapper::DecideOn()
  //
  // Calls `store`'s primitive directly: the checks were validated when they entered this store,
  // and need not be again on their way down the chain.
  static void DecideOn(Store& store, std::span<const LimitCheck> checks,
                       MultiDecisionCallback done) {
    store.Decide(checks, std::move(done));
  }

  std::optional<MultiDecision> DecideLocally(std::span<const LimitCheck> checks) override {
    return DecideLocallyOn(*inner_, checks);
  }

  std::optional<int64_t> SharingInstances() const override { return SharingInstancesOn(*inner_); }

  // StoreWrapper::SharingInstancesOn()
  //
  // Calls `store`'s SharingInstances().
  static std::optional<int64_t> SharingInstancesOn(const Store& store) {
    return store.SharingInstances();
  }

  // StoreWrapper::DecideLocallyOn()
  //
  // Calls `store`'s DecideLocally() (the checks were validated on their way in).
  static std::optional<MultiDecision> DecideLocallyOn(Store& store,
                                                      std::span<const LimitCheck> checks) {
    return store.DecideLocally(checks);
  }

 private:
  std::unique_ptr<Store> owned_;
  Store* inner_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_WRAPPER_H_
