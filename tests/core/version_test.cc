// sluice/version.h carries the project version from CMakeLists.txt, in every form it offers.
#include "sluice/version.h"

#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(Version, StringIsMajorMinorPatchOfTheProjectVersion) {
  EXPECT_EQ(kVersion, SLUICE_TEST_PROJECT_VERSION);
  EXPECT_EQ(std::string(kVersion), std::to_string(SLUICE_VERSION_MAJOR) + "." +
                                       std::to_string(SLUICE_VERSION_MINOR) + "." +
                                       std::to_string(SLUICE_VERSION_PATCH));
}

TEST(Version, NumberOrdersVersions) {
  EXPECT_EQ(SLUICE_VERSION_NUMBER,
            SLUICE_VERSION_MAJOR * 10000 + SLUICE_VERSION_MINOR * 100 + SLUICE_VERSION_PATCH);
}

TEST(Version, BuildInfoNamesTheVersionAndCompiler) {
  EXPECT_EQ(kBuildInfo.version, kVersion);
  EXPECT_FALSE(kBuildInfo.compiler.empty());
}

}  // namespace
}  // namespace sluice
