// Helpers shared by the memory store tests: a store on a ManualClock and unwrapped checks.
//
// Example:
//   ManualClock clock;
//   std::unique_ptr<MemoryStore> store = NewStore(clock, {.max_entries = 10});
//   Decision d = CheckOk(*store, "k", Limit{.limit = 3});
//
// Thread safety: the helpers are as thread-safe as the store.
#ifndef SLUICE_TESTS_STORE_MEMORY_MEMORY_STORE_TEST_UTIL_H_
#define SLUICE_TESTS_STORE_MEMORY_MEMORY_STORE_TEST_UTIL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"
#include "sluice/store.h"

#include "tests/testing/decision_printer.h"
#include "tests/testing/manual_clock.h"

namespace sluice::testing {

// The ManualClock's default start, 1'700'000'000 s: a multiple of 100 s, so windows of 1 s, 10 s
// or 100 s start exactly there.
inline constexpr std::chrono::microseconds kStart = std::chrono::seconds(1'700'000'000);

// Returns a store on `clock` (options.clock is overwritten), failing the test if Create() fails.
inline std::unique_ptr<MemoryStore> NewStore(ManualClock& clock, MemoryStoreOptions options = {}) {
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<MemoryStore>> store = MemoryStore::Create(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

// Returns the decision of a check that must not fail.
inline Decision CheckOk(Store& store, std::string_view key, const Limit& limit, int64_t cost = 1) {
  absl::StatusOr<Decision> decision = store.Check(key, limit, cost);
  EXPECT_TRUE(decision.ok()) << decision.status();
  return decision.ok() ? *decision : Decision{};
}

// Returns the outcome of a CheckAll() that must not fail.
inline MultiDecision CheckAllOk(Store& store, std::span<const LimitCheck> checks) {
  absl::StatusOr<MultiDecision> result = store.CheckAll(checks);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *std::move(result) : MultiDecision{};
}

// Returns what a peek (cost 0) sees under `key`.
inline Decision Peek(Store& store, std::string_view key, const Limit& limit) {
  return CheckOk(store, key, limit, 0);
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_STORE_MEMORY_MEMORY_STORE_TEST_UTIL_H_
