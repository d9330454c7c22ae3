// Loading from disk: single files, directories, dotfiles, symlinks and the Kubernetes ConfigMap
// layout, and that a bad file never yields a partial config.
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "sluice/config.h"

#include "tests/config/fixture_path.h"
#include "tests/testing/peer_configs.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using ::sluice::testing::FixturePath;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kAlpha =
    "domain: alpha\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: "
    "1}\n";
constexpr const char* kBeta =
    "domain: beta\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: "
    "2}\n";

// A fresh directory under the system temp dir, removed with everything in it.
class LoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sluice_config_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const fs::path& relative, const std::string& content) {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative) << content;
  }

  fs::path dir_;
};

TEST_F(LoadTest, TwoFilesTwoDomainsDotfilesAndOtherExtensionsSkipped) {
  const auto config = LoadRateLimitConfig(FixturePath("dir_two_domains"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT((*config)->Domains(), ElementsAre("alpha", "beta"));
}

TEST_F(LoadTest, DuplicateDomainAcrossFilesNamesBothFiles) {
  const std::string dir = FixturePath("dir_duplicate_domain");
  const auto config = LoadRateLimitConfig(dir);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(),
            dir +
                "/b.yaml:2:1: domain: duplicate domain 'shared' in config file (also defined at " +
                dir + "/a.yaml:1:1)");
}

TEST_F(LoadTest, SingleFile) {
  Write("only.yaml", kAlpha);
  const auto config = LoadRateLimitConfig(dir_ / "only.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT((*config)->Domains(), ElementsAre("alpha"));
}

// Verifies the Kubernetes ConfigMap volume layout: the real files sit in a timestamped dot
// directory, `..data` links to it, and each visible name links through `..data`. Each file must be
// loaded once, through its visible symlink.
TEST_F(LoadTest, KubernetesConfigMapLayout) {
  Write("..2024_01_01_00_00_00.123/alpha.yaml", kAlpha);
  Write("..2024_01_01_00_00_00.123/beta.yml", kBeta);
  fs::create_directory_symlink("..2024_01_01_00_00_00.123", dir_ / "..data");
  fs::create_symlink("..data/alpha.yaml", dir_ / "alpha.yaml");
  fs::create_symlink("..data/beta.yml", dir_ / "beta.yml");
  const auto config = LoadRateLimitConfig(dir_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT((*config)->Domains(), ElementsAre("alpha", "beta"));
}

TEST_F(LoadTest, SubdirectoriesAreNotSearched) {
  Write("alpha.yaml", kAlpha);
  Write("nested/beta.yaml", kBeta);
  Write("dir.yaml/beta.yaml", kBeta);
  const auto config = LoadRateLimitConfig(dir_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT((*config)->Domains(), ElementsAre("alpha"));
}

TEST_F(LoadTest, OneBadFileFailsTheWholeLoad) {
  Write("alpha.yaml", kAlpha);
  Write("broken.yaml",
        "domain: broken\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, "
        "requests_per_unit: 1}\n");
  const auto config = LoadRateLimitConfig(dir_);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(
      std::string(config.status().message()),
      AllOf(StartsWith((dir_ / "broken.yaml").string() + ":4:18: descriptors[0].rate_limit.unit: "),
            HasSubstr("invalid rate limit unit 'fortnight'")));
}

TEST_F(LoadTest, BrokenSymlinkIsAnError) {
  Write("alpha.yaml", kAlpha);
  fs::create_symlink("missing.yaml", dir_ / "gone.yaml");
  const auto config = LoadRateLimitConfig(dir_);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("gone.yaml"));
}

TEST_F(LoadTest, MissingPathAndEmptyDirectoryAreNotFound) {
  EXPECT_EQ(LoadRateLimitConfig(dir_ / "absent").status().code(), absl::StatusCode::kNotFound);
  Write(".hidden.yaml", kAlpha);
  Write("README.md", "not config");
  EXPECT_EQ(LoadRateLimitConfig(dir_).status().code(), absl::StatusCode::kNotFound);
}

TEST(ParseRateLimitConfig, DuplicateDomainInMemory) {
  const auto sources = std::to_array<ConfigSource>({{"one.yaml", kAlpha}, {"two.yaml", kAlpha}});
  const auto config = ParseRateLimitConfig(sources);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "two.yaml:1:1: domain: duplicate domain 'alpha' in config file (also defined at "
            "one.yaml:1:1)");
}

TEST(ParseRateLimitConfig, NoSourcesIsAnEmptyConfig) {
  const auto config = ParseRateLimitConfig({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE((*config)->Domains().empty());
}

// Verifies examples/config, which `make run` serves, loads and means what its comments say.
TEST(ExampleConfig, LoadsAndMatches) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  const auto config =
      LoadRateLimitConfig(std::string(root != nullptr ? root : ".") + "/examples/config");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT((*config)->Domains(), ElementsAre("sluice-demo"));
  const RateLimitConfig& c = **config;
  const auto login =
      std::to_array<DescriptorEntry>({{"path", "/login"}, {"remote_address", "10.0.0.1"}});
  EXPECT_EQ(c.Match("sluice-demo", login)->rule->limits[0].requests_per_unit, 3u);
  const auto internal = std::to_array<DescriptorEntry>({{"internal", "true"}});
  EXPECT_TRUE(c.Match("sluice-demo", internal)->rule->unlimited);
  const auto search = std::to_array<DescriptorEntry>({{"search_user", "u1"}});
  EXPECT_TRUE(c.Match("sluice-demo", search)->rule->shadow_mode);
  const auto api = std::to_array<DescriptorEntry>({{"api_key", "k1"}});
  EXPECT_EQ(c.Match("sluice-demo", api)->rule->limits[0].limit->algorithm, Algorithm::kGcra);
  const auto user = std::to_array<DescriptorEntry>({{"user", "alice"}});
  EXPECT_EQ(c.Match("sluice-demo", user)->rule->limits.size(), 2u);
}

}  // namespace
// Verifies the reference's MERGE_DOMAIN_CONFIG on its own fixtures: two files of one domain are
// one domain with both descriptors; without merging they are a duplicate domain.
TEST(LoadConfig, MergesTheReferenceFixturesOfOneDomain) {
  SLUICE_REQUIRE_PEER_CONFIGS(dir);
  const ConfigSource sources[] = {
      testing::ReadConfigSource(dir / "test-config/merge_domain_key1.yaml"),
      testing::ReadConfigSource(dir / "test-config/merge_domain_key2.yaml")};
  const auto merged = ParseRateLimitConfig(sources, ConfigLoadOptions{.merge_domains = true});
  ASSERT_TRUE(merged.ok()) << merged.status();
  const DescriptorEntry key1[] = {{"key1", "value1"}};
  const DescriptorEntry key2[] = {{"key2", "value2"}};
  const auto m1 = (*merged)->Match("test-domain", key1);
  const auto m2 = (*merged)->Match("test-domain", key2);
  ASSERT_TRUE(m1.has_value());
  ASSERT_TRUE(m2.has_value());
  EXPECT_EQ(m1->rule->limits[0].requests_per_unit, 10u);
  EXPECT_EQ(m2->rule->limits[0].requests_per_unit, 20u);
  const auto separate = ParseRateLimitConfig(sources);
  ASSERT_FALSE(separate.ok());
  EXPECT_THAT(std::string(separate.status().message()), HasSubstr("duplicate domain"));
  // Merging does not hide a key defined twice.
  const ConfigSource twice[] = {sources[0], sources[0]};
  const auto dup = ParseRateLimitConfig(twice, ConfigLoadOptions{.merge_domains = true});
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(std::string(dup.status().message()), HasSubstr("duplicate descriptor composite key"));
}

TEST(LoadConfig, DotfilesLoadWhenNotIgnored) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sluice-dotfiles-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / ".hidden.yaml") << "domain: hidden\ndescriptors: []\n";
  std::ofstream(dir / "shown.yaml") << "domain: shown\ndescriptors: []\n";
  const auto ignored = LoadRateLimitConfig(dir);
  const auto loaded = LoadRateLimitConfig(dir, ConfigLoadOptions{.ignore_dotfiles = false});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(ignored.ok()) << ignored.status();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE((*ignored)->HasDomain("hidden"));
  EXPECT_TRUE((*loaded)->HasDomain("hidden"));
}

}  // namespace sluice
