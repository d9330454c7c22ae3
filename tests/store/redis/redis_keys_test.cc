#include "src/store/redis/redis_keys.h"

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/limit.h"

#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisServer;
using ::testing::StartsWith;

const std::vector<Algorithm> kAllAlgorithms = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                               Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                               Algorithm::kGcra};

RedisKeyScheme DefaultScheme() { return *RedisKeyScheme::Create(kDefaultKeyPrefix); }

TEST(RedisKeyScheme, PlainKeysStayReadable) {
  const RedisKeyScheme keys = DefaultScheme();
  EXPECT_EQ(keys.StateKey("user:42", Algorithm::kGcra), "sluice:{user:42}:gcra");
  EXPECT_EQ(keys.StateKey("api/v1", Algorithm::kFixedWindow), "sluice:{api/v1}:fw");
  EXPECT_EQ(keys.StateKey("x", Algorithm::kSlidingWindow), "sluice:{x}:sw");
  EXPECT_EQ(keys.StateKey("x", Algorithm::kSlidingLog), "sluice:{x}:sl");
  EXPECT_EQ(keys.StateKey("x", Algorithm::kTokenBucket), "sluice:{x}:tb");
}

TEST(RedisKeyScheme, EscapesBytesThatCouldBreakOutOfTheTag) {
  const RedisKeyScheme keys = DefaultScheme();
  EXPECT_EQ(keys.StateKey("a{b}c", Algorithm::kFixedWindow), "sluice:{a%7Bb%7Dc}:fw");
  EXPECT_EQ(keys.StateKey("}{", Algorithm::kFixedWindow), "sluice:{%7D%7B}:fw");
  EXPECT_EQ(keys.StateKey("100%", Algorithm::kFixedWindow), "sluice:{100%25}:fw");
  EXPECT_EQ(keys.StateKey("#1", Algorithm::kFixedWindow), "sluice:{%231}:fw");
  EXPECT_EQ(keys.StateKey("a b\r\n", Algorithm::kFixedWindow), "sluice:{a%20b%0D%0A}:fw");
  EXPECT_EQ(keys.StateKey(std::string("a\0b", 3), Algorithm::kFixedWindow), "sluice:{a%00b}:fw");
  EXPECT_EQ(keys.StateKey("\x7f\xff", Algorithm::kFixedWindow), "sluice:{%7F%FF}:fw");
  // ':' needs no escape: the tag ends at the first '}', which the tag can never contain.
  EXPECT_EQ(keys.StateKey("a:b", Algorithm::kFixedWindow), "sluice:{a:b}:fw");
  // An escape sequence in the input is escaped too.
  EXPECT_EQ(EscapeKeyBytes("%41"), "%2541");
  // An empty tag would not be a hash tag at all in Cluster; the empty key is hashed instead.
  EXPECT_EQ(keys.HashTag(""), absl::StrCat("#", Sha256Hex("")));
}

TEST(RedisKeyScheme, OverlongKeysAreHashedWithinTheCap) {
  const RedisKeyScheme keys = DefaultScheme();
  const std::string megabyte(1 << 20, 'x');
  const std::string key = keys.StateKey(megabyte, Algorithm::kGcra);
  EXPECT_EQ(key, absl::StrCat("sluice:{#", Sha256Hex(megabyte), "}:gcra"));
  EXPECT_LE(key.size(), kMaxRedisKeyBytes);

  // The boundary: the longest tag kept as is, and one byte more.
  const size_t budget = kMaxRedisKeyBytes - keys.prefix().size() - 3 - 4;
  const std::string fits(budget, 'a');
  const std::string over(budget + 1, 'a');
  EXPECT_EQ(keys.HashTag(fits), fits);
  EXPECT_EQ(keys.HashTag(over), absl::StrCat("#", Sha256Hex(over)));
  EXPECT_EQ(keys.StateKey(fits, Algorithm::kGcra).size(), kMaxRedisKeyBytes);
  // Escaping counts: a third as many bytes that each need escaping overflow the budget too.
  EXPECT_THAT(keys.HashTag(std::string(budget / 3 + 1, '{')), StartsWith("#"));
}

TEST(RedisKeyScheme, ValidatesThePrefix) {
  EXPECT_TRUE(RedisKeyScheme::Create("").ok());
  EXPECT_TRUE(RedisKeyScheme::Create("rl:prod:").ok());
  EXPECT_TRUE(RedisKeyScheme::Create(std::string(kMaxKeyPrefixBytes, 'p')).ok());
  EXPECT_FALSE(RedisKeyScheme::Create(std::string(kMaxKeyPrefixBytes + 1, 'p')).ok());
  EXPECT_FALSE(RedisKeyScheme::Create("{tenant}:").ok());
  EXPECT_FALSE(RedisKeyScheme::Create("a}").ok());
  EXPECT_FALSE(RedisKeyScheme::Create("with space").ok());
  EXPECT_FALSE(RedisKeyScheme::Create("nl\n").ok());
  // The longest prefix still leaves room for a hashed tag.
  const RedisKeyScheme longest = *RedisKeyScheme::Create(std::string(kMaxKeyPrefixBytes, 'p'));
  EXPECT_LE(longest.StateKey(std::string(1000, 'k'), Algorithm::kGcra).size(), kMaxRedisKeyBytes);
}

// A random identifier, biased towards the bytes the scheme treats specially and towards lengths
// around the escaping budget.
std::string RandomIdentifier(std::mt19937_64& rng) {
  static constexpr std::string_view kSpecial = "{}:%#\\ \r\n\t\x7f\xff\xc3\xa9";
  size_t length = 0;
  switch (rng() % 10) {
    case 0:
      length = 0;
      break;
    case 1:
      length = 120 + rng() % 80;  // around the budget once escaped
      break;
    case 2:
      // Now and then up to 64 KB; otherwise just past the budget.
      length = rng() % 50 == 0 ? rng() % 65536 : 190 + rng() % 200;
      break;
    default:
      length = 1 + rng() % 12;
  }
  std::string s;
  s.reserve(length);
  for (size_t i = 0; i < length; ++i) {
    const uint64_t r = rng();
    if (r % 3 == 0) {
      s.push_back(kSpecial[(r >> 8) % kSpecial.size()]);
    } else if (r % 3 == 1) {
      s.push_back(static_cast<char>((r >> 8) & 0xFF));
    } else {
      s.push_back(static_cast<char>('a' + (r >> 8) % 3));  // few letters: near-collisions
    }
  }
  return s;
}

// Reliability T18: distinct identifiers never share a key, every key is at most 200 bytes, every
// algorithm of one identifier shares the slot, and the tag is ours and comes first.
TEST(RedisKeyScheme, DistinctIdentifiersNeverCollide) {
  const RedisKeyScheme keys = DefaultScheme();
  std::mt19937_64 rng(18);
  std::unordered_map<std::string, std::string> owner;  // Redis key -> identifier
  for (int i = 0; i < 200'000; ++i) {
    const std::string id = RandomIdentifier(rng);
    const std::string key = keys.StateKey(id, Algorithm::kFixedWindow);
    ASSERT_LE(key.size(), kMaxRedisKeyBytes);
    ASSERT_TRUE(key.starts_with("sluice:{"));
    const size_t close = key.find('}');
    ASSERT_EQ(key.substr(close), "}:fw") << "the tag must close only before the suffix";
    for (size_t j = 0; j < key.size(); ++j) {
      const auto c = static_cast<unsigned char>(key[j]);
      ASSERT_TRUE(c >= 0x21 && c <= 0x7E) << "unprintable byte in " << key;
    }
    auto [it, inserted] = owner.emplace(key, id);
    ASSERT_TRUE(inserted || it->second == id) << "collision on " << key;
    if (i % 100 == 0) {
      const uint16_t slot = ClusterHashSlot(key);
      for (Algorithm algorithm : kAllAlgorithms) {
        ASSERT_EQ(ClusterHashSlot(keys.StateKey(id, algorithm)), slot);
      }
    }
  }
}

TEST(JoinKeyComponents, IsInjective) {
  using Parts = std::vector<std::string_view>;
  EXPECT_EQ(JoinKeyComponents(Parts{"api", "GET /x", "free", "10.0.0.1"}),
            "api:GET /x:free:10.0.0.1");
  EXPECT_EQ(JoinKeyComponents(Parts{"2001:db8::1"}), "2001\\:db8\\:\\:1");
  EXPECT_NE(JoinKeyComponents(Parts{"a:b"}), JoinKeyComponents(Parts{"a", "b"}));
  EXPECT_NE(JoinKeyComponents(Parts{"a\\", "b"}), JoinKeyComponents(Parts{"a", "\\b"}));
  EXPECT_NE(JoinKeyComponents(Parts{"a", ""}), JoinKeyComponents(Parts{"a"}));

  std::mt19937_64 rng(7);
  std::unordered_map<std::string, std::vector<std::string>> owner;
  for (int i = 0; i < 100'000; ++i) {
    std::vector<std::string> parts(1 + rng() % 4);
    for (std::string& part : parts) {
      const size_t length = rng() % 4;
      for (size_t j = 0; j < length; ++j) part.push_back(":\\a"[rng() % 3]);
    }
    const std::vector<std::string_view> views(parts.begin(), parts.end());
    const std::string joined = JoinKeyComponents(views);
    auto [it, inserted] = owner.emplace(joined, parts);
    ASSERT_TRUE(inserted || it->second == parts) << "collision on " << joined;
  }
}

TEST(ClusterHashSlot, MatchesRedisDefinition) {
  EXPECT_EQ(ClusterHashSlot("123456789"), 0x31C3);  // the CRC16-XMODEM check value
  EXPECT_EQ(ClusterHashSlot("foo"), 12182);
  EXPECT_EQ(ClusterHashSlot("{user1000}.following"), ClusterHashSlot("user1000"));
  EXPECT_NE(ClusterHashSlot("foo{}{bar}"), ClusterHashSlot("bar"));  // empty tag: whole key
  EXPECT_EQ(ClusterHashSlot("foo{{bar}}zap"), ClusterHashSlot("{bar"));
}

// Verifies the slot computation against a real server's CLUSTER KEYSLOT.
TEST(ClusterHashSlot, AgreesWithRedis) {
  absl::StatusOr<std::unique_ptr<RedisServer>> server =
      RedisServer::Start({.config = {{"cluster-enabled", "yes"}}});
  ASSERT_TRUE(server.ok()) << server.status();
  const RedisKeyScheme keys = DefaultScheme();
  std::mt19937_64 rng(16384);
  for (int i = 0; i < 300; ++i) {
    std::string id = RandomIdentifier(rng);
    if (id.size() > 300) id.resize(300);
    for (const std::string& key : {keys.StateKey(id, Algorithm::kGcra), id}) {
      absl::StatusOr<std::string> slot = (*server)->Command({"CLUSTER", "KEYSLOT", key});
      ASSERT_TRUE(slot.ok()) << slot.status();
      EXPECT_EQ(*slot, absl::StrCat(ClusterHashSlot(key))) << key;
    }
  }
}

}  // namespace
}  // namespace sluice
