// Locating tests/config/fixtures from a test binary.
#ifndef SLUICE_TESTS_CONFIG_FIXTURE_PATH_H_
#define SLUICE_TESTS_CONFIG_FIXTURE_PATH_H_

#include <cstdlib>
#include <string>

namespace sluice::testing {

// Returns the path of `name` under tests/config/fixtures. sluice_add_test() sets SLUICE_SOURCE_DIR;
// without it the path is relative to the source tree root.
inline std::string FixturePath(const std::string& name) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/tests/config/fixtures/" + name;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_CONFIG_FIXTURE_PATH_H_
