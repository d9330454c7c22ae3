// Test vectors: worked examples of docs/algorithms.md, stored as data in tests/vectors/*.json, so
// that one table drives both the C++ algorithms and the Redis Lua scripts.
//
// File format (one file per algorithm; unknown keys are errors, so a typo cannot pass silently):
//   {"algorithm": "gcra",
//    "cases": [{"name": "redis_cell_example",
//               "limit": {"limit": 30, "period_ms": 60000, "burst": 16},   // burst optional
//               "steps": [{"now_us": 1700000000000000, "cost": 1, "allowed": true,
//                          "remaining": 15, "reset_after_us": 2000000, "retry_after_us": 0,
//                          "note": "how the values follow from the spec"}]}]}   // note optional
// Each case starts from no state; its steps apply in order to one key. `now_us` is absolute epoch
// microseconds (windows align to epoch multiples of the period).
//
// A step with "credit": true is a credit (docs/algorithms.md, "Credits"; LimitCheck::refund): its
// "cost" is the units given back (0 .. 2^32, even above the capacity) and its expected decision
// that of the state after it (always allowed, retry_after_us 0). Credits are allowed in both kinds
// of files ("refund" is a lease refund's, below).
//
// Lease vectors (tests/vectors/lease/*.json, docs/algorithms.md "Leases") have the same format,
// and their steps may also be
//   a leasing check: a check step with "want", "ttl_us" and the expected "granted" and "ends_us"
//     (the decision is then the one after the grant);
//   a refund: {"now_us": ..., "refund": {"ends_us": ..., "granted": ..., "unspent": ...},
//              "refunded": <units the store gives back>, "note": ...}.
// A check step without "want" is an exact check (which, on a state with a lease record, applies
// its floors). Lease steps are refused in the main files, which every store replays as checks
// (credits through the call that decides them), and a leasing check is never a credit.
//
// Example:
//   for (const VectorCase& c : LoadAllVectors()) {
//     SCOPED_TRACE(c.name);
//     for (const VectorStep& step : c.steps) EXPECT_EQ(Decide(c.limit, step), step.expect);
//   }
//
// Thread safety: thread-compatible functions without shared state.
#ifndef SLUICE_TESTS_TESTING_TEST_VECTORS_H_
#define SLUICE_TESTS_TESTING_TEST_VECTORS_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

namespace sluice::testing {

// A leasing check's want and its expected grant.
struct VectorLease {
  int64_t want;
  int64_t ttl_us;
  int64_t granted;
  int64_t ends_us;
};

// A refund: the lease as the store records it, the units given back, and how many the store
// reports it gave back.
struct VectorRefund {
  int64_t ends_us;
  int64_t granted;
  int64_t unspent;
  int64_t refunded;
};

struct VectorStep {
  int64_t now_us;
  // The units charged, or given back by a credit.
  int64_t cost;
  // A credit (LimitCheck::refund): gives `cost` units back.
  bool credit = false;
  // The expected decision; `expect.limit` is the limit's capacity and `from_fallback` is false.
  Decision expect;
  // Set for a leasing check (lease files only).
  std::optional<VectorLease> lease{};
  // Set for a refund, which is not a check: `cost` and `expect` are unused (lease files only).
  std::optional<VectorRefund> refund{};
};

struct VectorCase {
  // "<algorithm>/<case name>", e.g. "gcra/redis_cell_example"; unique across all files.
  std::string name;
  Limit limit;
  std::vector<VectorStep> steps;
};

// LoadAllVectors()
//
// Loads tests/vectors/*.json under the directory named by env SLUICE_SOURCE_DIR (set by ctest; see
// cmake/SluiceHelpers.cmake), files in name order, cases in file order. A missing variable or
// directory, or any malformed file, is a broken test setup: it prints the reason to stderr and
// aborts, whether it is called from a test body or while registering parameterized tests.
std::vector<VectorCase> LoadAllVectors();

// LoadVectorsFromDirectory()
//
// As LoadAllVectors() for the *.json files directly in `dir`, but returns NotFound when `dir` does
// not exist or holds no such file and InvalidArgument (naming the file and the offending field) for
// a malformed file, instead of aborting.
absl::StatusOr<std::vector<VectorCase>> LoadVectorsFromDirectory(const std::filesystem::path& dir);

// LoadLeaseVectors()
//
// As LoadAllVectors() for the lease vectors, tests/vectors/lease/*.json; case names are
// "lease/<algorithm>/<case name>".
std::vector<VectorCase> LoadLeaseVectors();

// LoadLeaseVectorsFromDirectory()
//
// As LoadVectorsFromDirectory(), for lease vector files.
absl::StatusOr<std::vector<VectorCase>> LoadLeaseVectorsFromDirectory(
    const std::filesystem::path& dir);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_TEST_VECTORS_H_
