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
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/decision.h"
#include "sluice/limit.h"

namespace sluice::testing {

struct VectorStep {
  int64_t now_us;
  int64_t cost;
  // The expected decision; `expect.limit` is the limit's capacity and `from_fallback` is false.
  Decision expect;
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

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_TEST_VECTORS_H_
