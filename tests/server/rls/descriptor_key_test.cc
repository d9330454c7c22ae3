#include "src/server/rls/descriptor_key.h"

#include <array>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/key.h"

namespace sluice::server {
namespace {

TEST(StoreKey, TagsByDomainAndEntriesAndNamesTheLimit) {
  const DescriptorEntry entries[] = {{"remote_address", "10.0.0.1"}, {"path", "/a"}};
  EXPECT_EQ(StoreKey("edge", entries, Limit{.limit = 3, .period = std::chrono::minutes(1)}),
            "{edge:remote_address:10.0.0.1:path:/a}fixed_window:60000");
  EXPECT_EQ(StoreKey("edge", {}, Limit{.algorithm = Algorithm::kGcra, .limit = 3}),
            "{edge}gcra:1000");
}

// Verifies the tag is the descriptor (domain and entries) whatever the limit, so the limits of
// one descriptor share a shard, and that two descriptors of one domain have different tags.
TEST(StoreKey, OneTagPerDescriptor) {
  const DescriptorEntry a[] = {{"user", "a"}};
  const DescriptorEntry b[] = {{"user", "b"}};
  const std::string per_second_key = StoreKey("d", a, Limit{.limit = 1});
  const std::string per_hour_key = StoreKey(
      "d", a,
      Limit{.algorithm = Algorithm::kTokenBucket, .limit = 1, .period = std::chrono::hours(1)});
  const std::string other_key = StoreKey("d", b, Limit{.limit = 1});
  const KeyParts per_second = SplitKey(per_second_key);
  const KeyParts per_hour = SplitKey(per_hour_key);
  ASSERT_TRUE(per_second.tagged);
  EXPECT_EQ(per_second.tag, per_hour.tag);
  EXPECT_NE(per_second.name, per_hour.name);
  EXPECT_NE(SplitKey(other_key).tag, per_second.tag);
}

// Verifies separators and tag delimiters are escaped, so a value holding one cannot pose as two
// entries or end the tag early.
TEST(StoreKey, EscapedSeparatorsNeverCollide) {
  const DescriptorEntry one[] = {{"a", "b:c"}};
  const DescriptorEntry two[] = {{"a", "b"}, {"c", ""}};
  const DescriptorEntry brace[] = {{"a", "}x\\"}};
  const Limit limit{.limit = 1};
  EXPECT_NE(StoreKey("x", one, limit), StoreKey("x", two, limit));
  EXPECT_EQ(StoreKey("x", one, limit), "{x:a:b\\\\:c}fixed_window:1000");
  const std::string brace_key = StoreKey("x", brace, limit);
  const KeyParts parts = SplitKey(brace_key);
  ASSERT_TRUE(parts.tagged);
  EXPECT_EQ(UnescapeKeyTag(parts.tag), "x:a:}x\\\\");
  EXPECT_EQ(parts.name, "fixed_window:1000");
  // The domain is a component too: ("a:b", {}) is not ("a", {"b": ...}).
  const DescriptorEntry b_entry[] = {{"b", ""}};
  EXPECT_NE(StoreKey("a:b", {}, limit), StoreKey("a", b_entry, limit));
}

// Verifies the key is the documented rule: a tag of joined components and a joined name.
TEST(StoreKey, IsTheCoreKeyRule) {
  const DescriptorEntry entries[] = {{"k:1", "v\\1"}, {"", "}"}};
  const Limit limit{
      .algorithm = Algorithm::kSlidingLog, .limit = 5, .period = std::chrono::seconds(90)};
  const std::vector<std::string_view> tag = {"dom", "k:1", "v\\1", "", "}"};
  const std::array<std::string_view, 2> name = {"sliding_log", "90000"};
  EXPECT_EQ(StoreKey("dom", entries, limit),
            TaggedKey(JoinKeyComponents(tag), JoinKeyComponents(name)));
}

TEST(StoreKey, QuotaIsNotPartOfTheKeyButPeriodIs) {
  const DescriptorEntry entries[] = {{"k", "v"}};
  EXPECT_EQ(StoreKey("d", entries, Limit{.limit = 1}), StoreKey("d", entries, Limit{.limit = 9}));
  EXPECT_NE(StoreKey("d", entries, Limit{.limit = 1}),
            StoreKey("d", entries, Limit{.limit = 1, .period = std::chrono::seconds(2)}));
}

}  // namespace
}  // namespace sluice::server
