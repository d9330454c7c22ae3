// The reference's configuration fixtures (envoyproxy/ratelimit's test/config, integration and
// example configs, unmodified), kept outside the repository in ../shared/envoy-peer-configs
// relative to the source root. Tests that use them skip, saying why, when they are not there.
//
// Example:
//   TEST(Compat, BasicConfig) {
//     SLUICE_REQUIRE_PEER_CONFIGS(dir);
//     auto config = LoadRateLimitConfig(dir / "test-config/basic_config.yaml");
//   }
//
// Thread safety: thread-safe (reads the environment and the file system).
#ifndef SLUICE_TESTS_TESTING_PEER_CONFIGS_H_
#define SLUICE_TESTS_TESTING_PEER_CONFIGS_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "sluice/config.h"

#include "tests/testing/skip_or_fail.h"

namespace sluice::testing {

// Returns the fixtures directory, or nullopt when it does not exist. The source root is
// SLUICE_SOURCE_DIR (set by sluice_add_test() for ctest), else the current directory.
inline std::optional<std::filesystem::path> PeerConfigsDir() {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  const std::filesystem::path dir =
      std::filesystem::path(root != nullptr ? root : ".") / ".." / "shared" / "envoy-peer-configs";
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return std::nullopt;
  return std::filesystem::canonical(dir, error);
}

// Returns `path` read as a ConfigSource (empty content when it cannot be read).
inline ConfigSource ReadConfigSource(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return ConfigSource{
      .name = path.filename().string(),
      .content = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>())};
}

}  // namespace sluice::testing

// Declares `const std::filesystem::path var` as the fixtures directory, or skips the test.
#define SLUICE_REQUIRE_PEER_CONFIGS(var)                                                     \
  const std::optional<std::filesystem::path> var##_or = ::sluice::testing::PeerConfigsDir(); \
  if (!var##_or.has_value()) {                                                               \
    SLUICE_SKIP_OR_FAIL(                                                                     \
        "envoyproxy/ratelimit fixtures not found at "                                        \
        "$SLUICE_SOURCE_DIR/../shared/envoy-peer-configs");                                  \
  }                                                                                          \
  const std::filesystem::path var = *var##_or

#endif  // SLUICE_TESTS_TESTING_PEER_CONFIGS_H_
