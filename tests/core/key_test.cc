// Tests of the store key rule (include/sluice/key.h): component joining, hash tags, splitting.
#include "sluice/key.h"

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

using Parts = std::vector<std::string_view>;

TEST(JoinKeyComponents, EscapesSeparatorsAndBackslashes) {
  EXPECT_EQ(JoinKeyComponents(Parts{"api", "GET /x", "free", "10.0.0.1"}),
            "api:GET /x:free:10.0.0.1");
  EXPECT_EQ(JoinKeyComponents(Parts{"2001:db8::1"}), "2001\\:db8\\:\\:1");
  EXPECT_EQ(JoinKeyComponents(Parts{"a\\b", ""}), "a\\\\b:");
  EXPECT_EQ(JoinKeyComponents(Parts{""}), "");
  EXPECT_NE(JoinKeyComponents(Parts{"a:b"}), JoinKeyComponents(Parts{"a", "b"}));
  EXPECT_NE(JoinKeyComponents(Parts{"a\\", "b"}), JoinKeyComponents(Parts{"a", "\\b"}));
  EXPECT_NE(JoinKeyComponents(Parts{"a", ""}), JoinKeyComponents(Parts{"a"}));
}

TEST(JoinKeyComponents, AgreesWithTheOneComponentEscapes) {
  for (const std::string_view c : {"", ":", "\\", "a", "::1", "a\\:b", "\\\\::", "x\\"}) {
    EXPECT_EQ(EscapeKeyComponent(c), JoinKeyComponents(Parts{c})) << c;
    std::string appended = "pre:";
    AppendKeyComponent(appended, c);
    EXPECT_EQ(appended, "pre:" + EscapeKeyComponent(c)) << c;
    EXPECT_EQ(JoinKeyComponents(Parts{"a", c, "b"}), "a:" + EscapeKeyComponent(c) + ":b") << c;
  }
}

TEST(TaggedKey, EscapesTheTagOnly) {
  EXPECT_EQ(TaggedKey("user:42", "GET /x:burst"), "{user:42}GET /x:burst");
  EXPECT_EQ(TaggedKey("a}b", "n"), "{a\\}b}n");
  EXPECT_EQ(TaggedKey("a\\", "}"), "{a\\\\}}");
  EXPECT_EQ(TaggedKey("{", "{}"), "{{}{}");
  EXPECT_EQ(TaggedKey("", ""), "{}");
  std::string out = "x";
  AppendKeyTag(out, "a}");
  EXPECT_EQ(out, "x{a\\}}");
}

TEST(SplitKey, ReadsTaggedKeys) {
  EXPECT_EQ(SplitKey("{user:42}burst"),
            (KeyParts{.tag = "user:42", .name = "burst", .tagged = true}));
  EXPECT_EQ(SplitKey("{}"), (KeyParts{.tag = "", .name = "", .tagged = true}));
  EXPECT_EQ(SplitKey("{a\\}b}n}"), (KeyParts{.tag = "a\\}b", .name = "n}", .tagged = true}));
  EXPECT_EQ(SplitKey("{a\\\\}n"), (KeyParts{.tag = "a\\\\", .name = "n", .tagged = true}));
  // The first unescaped '}' closes the tag; later braces belong to the name.
  EXPECT_EQ(SplitKey("{a}{b}c"), (KeyParts{.tag = "a", .name = "{b}c", .tagged = true}));
  // Any escaped byte is skipped, also one TaggedKey() would not escape.
  EXPECT_EQ(SplitKey("{a\\x}y"), (KeyParts{.tag = "a\\x", .name = "y", .tagged = true}));
}

TEST(SplitKey, KeysWithoutAClosedTagArePlain) {
  for (const std::string_view key :
       {"", "user:42", "a{b}c", " {a}b", "{", "{abc", "{a\\}", "{a\\", "}{a", "{\\}"}) {
    EXPECT_EQ(SplitKey(key), (KeyParts{.tag = key, .name = "", .tagged = false})) << key;
  }
}

TEST(UnescapeKeyTag, InvertsTheTagEscape) {
  EXPECT_EQ(UnescapeKeyTag("a\\}b\\\\"), "a}b\\");
  EXPECT_EQ(UnescapeKeyTag(""), "");
  EXPECT_EQ(UnescapeKeyTag("x\\"), "x\\");  // a trailing '\' is kept (SplitKey never gives one)
}

// A random string biased towards the bytes the rule treats specially.
std::string RandomBytes(std::mt19937_64& rng, size_t max_length) {
  static constexpr std::string_view kSpecial = "{}\\:";
  std::string s(rng() % (max_length + 1), '\0');
  for (char& c : s) {
    const uint64_t r = rng();
    if (r % 4 != 0) {
      c = kSpecial[(r >> 8) % kSpecial.size()];
    } else if (r % 8 == 0) {
      c = static_cast<char>((r >> 8) & 0xFF);
    } else {
      c = 'a';
    }
  }
  return s;
}

// Verifies on hostile random input: TaggedKey() and SplitKey() round-trip; distinct (tag, name)
// pairs and distinct component lists never give the same key; any key at all is either exactly
// "{" + tag + "}" + name or plain.
TEST(KeyRule, IsInjectiveOnHostileInput) {
  std::mt19937_64 rng(9);
  std::unordered_map<std::string, std::pair<std::string, std::string>> tagged_owner;
  std::unordered_map<std::string, std::vector<std::string>> joined_owner;
  for (int i = 0; i < 100'000; ++i) {
    const std::string tag = RandomBytes(rng, 6);
    const std::string name = RandomBytes(rng, 6);
    const std::string key = TaggedKey(tag, name);
    const KeyParts parts = SplitKey(key);
    ASSERT_TRUE(parts.tagged) << key;
    ASSERT_EQ(UnescapeKeyTag(parts.tag), tag) << key;
    ASSERT_EQ(parts.name, name) << key;
    auto [it, inserted] = tagged_owner.emplace(key, std::make_pair(tag, name));
    ASSERT_TRUE(inserted || it->second == std::make_pair(tag, name)) << "collision on " << key;

    const std::string raw = RandomBytes(rng, 8);
    const KeyParts raw_parts = SplitKey(raw);
    if (raw_parts.tagged) {
      ASSERT_EQ("{" + std::string(raw_parts.tag) + "}" + std::string(raw_parts.name), raw);
    } else {
      ASSERT_EQ(raw_parts.tag, raw);
      ASSERT_TRUE(raw_parts.name.empty());
    }

    std::vector<std::string> components(1 + rng() % 4);
    for (std::string& c : components) c = RandomBytes(rng, 3);
    const std::vector<std::string_view> views(components.begin(), components.end());
    const std::string joined = JoinKeyComponents(views);
    auto [jt, joined_inserted] = joined_owner.emplace(joined, components);
    ASSERT_TRUE(joined_inserted || jt->second == components) << "collision on " << joined;
  }
}

}  // namespace
}  // namespace sluice
