// SLUICE_SKIP_OR_FAIL(reason): a test that needs something outside the build (a server, a
// browser, a tool) skips, saying why, on a developer's machine that lacks it, and fails in CI
// (the CI environment variable set), where scripts/install-deps.sh installs everything: there a
// skip would hide a missing install step. Returns from the test function either way.
//
// Example:
//   if (chromium.empty()) SLUICE_SKIP_OR_FAIL("chromium is not installed");
#ifndef SLUICE_TESTS_TESTING_SKIP_OR_FAIL_H_
#define SLUICE_TESTS_TESTING_SKIP_OR_FAIL_H_

#include <cstdlib>
#include <string_view>

#include "gtest/gtest.h"

namespace sluice::testing {

// True when the CI environment variable is set (and not "false").
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' && std::string_view(ci) != "false";
}

}  // namespace sluice::testing

#define SLUICE_SKIP_OR_FAIL(reason)                                        \
  do {                                                                     \
    if (::sluice::testing::InCi()) GTEST_FAIL() << (reason) << " (in CI)"; \
    GTEST_SKIP() << (reason);                                              \
  } while (false)

#endif  // SLUICE_TESTS_TESTING_SKIP_OR_FAIL_H_
