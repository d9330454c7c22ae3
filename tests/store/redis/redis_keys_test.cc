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

#include "sluice/key.h"
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

TEST(RedisKeyScheme, TaggedKeysPutTheTagInTheHashTagAndTheNameAfterIt) {
  const RedisKeyScheme keys = DefaultScheme();
  EXPECT_EQ(keys.StateKey("{user:42}burst", Algorithm::kGcra), "sluice:{user:42}:burst:gcra");
  EXPECT_EQ(
      keys.StateKey(TaggedKey("ip:2001:db8::/64", "shop:GET /x:*:burst"), Algorithm::kFixedWindow),
      "sluice:{ip:2001:db8::/64}:shop:GET%20/x:*:burst:fw");
  // The tag is written in its escaped form, then percent-escaped like any tag.
  EXPECT_EQ(keys.StateKey(TaggedKey("a}b", "n"), Algorithm::kFixedWindow), "sluice:{a\\%7Db}:n:fw");
  EXPECT_EQ(keys.StateKey("{a}{b}#%", Algorithm::kTokenBucket), "sluice:{a}:%7Bb%7D%23%25:tb");
  EXPECT_EQ(keys.StateKey("{a}", Algorithm::kSlidingLog), "sluice:{a}::sl");
  // The empty tag is hashed: "{}" is no hash tag on a Cluster.
  EXPECT_EQ(keys.StateKey("{}n", Algorithm::kSlidingWindow),
            absl::StrCat("sluice:{#", Sha256Hex(""), "}:n:sw"));
  EXPECT_EQ(keys.HashTag("{user:42}anything"), "user:42");
  // Keys that are not tagged keep today's form exactly.
  EXPECT_EQ(keys.StateKey("{unclosed", Algorithm::kGcra), "sluice:{%7Bunclosed}:gcra");
  EXPECT_EQ(keys.StateKey("x{a}", Algorithm::kGcra), "sluice:{x%7Ba%7D}:gcra");
}

// Verifies the examples of docs/keys.md.
TEST(RedisKeyScheme, DocumentedExamples) {
  const RedisKeyScheme keys = DefaultScheme();
  EXPECT_EQ(keys.StateKey("user:42", Algorithm::kGcra), "sluice:{user:42}:gcra");
  EXPECT_EQ(keys.StateKey("{ip:192.0.2.7}shop:GET /api/orders/{id}:anonymous:burst",
                          Algorithm::kFixedWindow),
            "sluice:{ip:192.0.2.7}:shop:GET%20/api/orders/%7Bid%7D:anonymous:burst:fw");
  EXPECT_EQ(keys.StateKey("{ip:2001:db8:1:2::/64}shop:*:*:global", Algorithm::kGcra),
            "sluice:{ip:2001:db8:1:2::/64}:shop:*:*:global:gcra");
  EXPECT_EQ(
      keys.StateKey("{edge:remote_address:10.0.0.1}fixed_window:60000", Algorithm::kFixedWindow),
      "sluice:{edge:remote_address:10.0.0.1}:fixed_window:60000:fw");
  EXPECT_EQ(keys.StateKey(TaggedKey("a}b", "n"), Algorithm::kFixedWindow), "sluice:{a\\%7Db}:n:fw");
  EXPECT_EQ(keys.StateKey("{tenant 7}100%", Algorithm::kTokenBucket),
            "sluice:{tenant%207}:100%25:tb");
  EXPECT_EQ(keys.max_plain_tag_bytes(), 186u);
  EXPECT_EQ(keys.max_tagged_tag_bytes(), 141u);
}

TEST(RedisKeyScheme, Sha256Base64UrlIsTheUnpaddedUrlAlphabet) {
  EXPECT_EQ(Sha256Base64Url(""), "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  EXPECT_EQ(Sha256Base64Url("abc"), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
}

TEST(RedisKeyScheme, OverlongTagsAndNamesAreHashedWithinTheCap) {
  for (const std::string& prefix :
       {std::string(kDefaultKeyPrefix), std::string(), std::string(kMaxKeyPrefixBytes, 'p')}) {
    const RedisKeyScheme keys = *RedisKeyScheme::Create(prefix);
    const size_t tag_budget = keys.max_tagged_tag_bytes();
    // Tag + name share what the prefix, "{", "}:", ":" and the longest suffix leave.
    const size_t shared = kMaxRedisKeyBytes - prefix.size() - 4 - 4;
    EXPECT_EQ(tag_budget, shared - 44) << prefix;
    const std::string fits(tag_budget, 't');
    const std::string over(tag_budget + 1, 't');
    EXPECT_EQ(keys.HashTag(TaggedKey(fits, "n")), fits);
    EXPECT_EQ(keys.HashTag(TaggedKey(over, "n")), absl::StrCat("#", Sha256Hex(over)));
    // Beside the longest kept tag, the name has exactly room for a hashed one.
    const std::string a = keys.StateKey(TaggedKey(fits, ""), Algorithm::kGcra);
    EXPECT_EQ(a, absl::StrCat(prefix, "{", fits, "}::gcra"));
    const std::string long_name(shared, 'n');
    const std::string b = keys.StateKey(TaggedKey(fits, long_name), Algorithm::kGcra);
    EXPECT_EQ(b, absl::StrCat(prefix, "{", fits, "}:#", Sha256Base64Url(long_name), ":gcra"));
    EXPECT_EQ(b.size(), kMaxRedisKeyBytes);
    // A short tag leaves the name the rest: the longest kept name, and one byte more.
    const std::string name_fits(shared - 1, 'n');
    const std::string name_over(shared, 'n');
    EXPECT_EQ(keys.StateKey(TaggedKey("t", name_fits), Algorithm::kGcra),
              absl::StrCat(prefix, "{t}:", name_fits, ":gcra"));
    EXPECT_EQ(keys.StateKey(TaggedKey("t", name_fits), Algorithm::kGcra).size(), kMaxRedisKeyBytes);
    EXPECT_EQ(keys.StateKey(TaggedKey("t", name_over), Algorithm::kGcra),
              absl::StrCat(prefix, "{t}:#", Sha256Base64Url(name_over), ":gcra"));
    // Both hashed, a megabyte each.
    const std::string megabyte(1 << 20, '{');
    const std::string both = keys.StateKey(TaggedKey(megabyte, megabyte), Algorithm::kGcra);
    EXPECT_LE(both.size(), kMaxRedisKeyBytes);
    EXPECT_THAT(both, StartsWith(absl::StrCat(prefix, "{#")));
  }
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

// A random store key: plain (any bytes, at times starting with '{') or tagged, with parts biased
// like RandomIdentifier().
std::string RandomKey(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return RandomIdentifier(rng);
    case 1:
      return "{" + RandomIdentifier(rng);  // closed by chance or not
    default:
      return TaggedKey(RandomIdentifier(rng), RandomIdentifier(rng));
  }
}

// Checks the shape every Redis key has, whatever the form.
void ExpectWellFormed(const RedisKeyScheme& keys, std::string_view key,
                      const std::string& redis_key, Algorithm algorithm) {
  ASSERT_LE(redis_key.size(), kMaxRedisKeyBytes) << redis_key;
  ASSERT_TRUE(redis_key.starts_with(keys.prefix() + "{")) << redis_key;
  for (const char ch : redis_key) {
    const auto c = static_cast<unsigned char>(ch);
    ASSERT_TRUE(c >= 0x21 && c <= 0x7E) << "unprintable byte in " << redis_key;
  }
  const size_t open = keys.prefix().size();
  const size_t close = redis_key.find('}');
  ASSERT_EQ(redis_key.find('}', close + 1), std::string::npos) << redis_key;
  ASSERT_EQ(redis_key.find('{', open + 1), std::string::npos) << redis_key;
  ASSERT_EQ(redis_key.substr(open + 1, close - open - 1), keys.HashTag(key));
  const std::string rest = redis_key.substr(close);
  ASSERT_TRUE(rest.ends_with(":" + std::string(AlgorithmKeySuffix(algorithm)))) << redis_key;
  // The form can be read back: a plain key's rest is ":<suffix>", a tagged key's has two ':'.
  ASSERT_EQ(rest.find(':', 2) != std::string::npos, SplitKey(key).tagged) << redis_key;
}

// Reliability T18: distinct keys, plain or tagged, never share a Redis key under any algorithm;
// every Redis key is at most 200 bytes, printable, and has our tag first; every key of one tag
// shares the slot whatever its name and algorithm.
TEST(RedisKeyScheme, DistinctKeysNeverCollideAcrossBothForms) {
  for (const std::string& prefix : {std::string(kDefaultKeyPrefix), std::string()}) {
    const RedisKeyScheme keys = *RedisKeyScheme::Create(prefix);
    std::mt19937_64 rng(18);
    std::unordered_map<std::string, std::string> owner;  // Redis key -> key + algorithm suffix
    for (int i = 0; i < 100'000; ++i) {
      const std::string key = RandomKey(rng);
      const Algorithm algorithm = kAllAlgorithms[rng() % kAllAlgorithms.size()];
      const std::string redis_key = keys.StateKey(key, algorithm);
      ExpectWellFormed(keys, key, redis_key, algorithm);
      if (::testing::Test::HasFatalFailure()) return;
      const std::string origin = key + "/" + std::string(AlgorithmKeySuffix(algorithm));
      auto [it, inserted] = owner.emplace(redis_key, origin);
      ASSERT_TRUE(inserted || it->second == origin) << "collision on " << redis_key;
      if (i % 100 == 0) {
        // Every algorithm, and for a tagged key every other name of its tag, is in one slot.
        const uint16_t slot = ClusterHashSlot(redis_key);
        const KeyParts parts = SplitKey(key);
        for (Algorithm other : kAllAlgorithms) {
          ASSERT_EQ(ClusterHashSlot(keys.StateKey(key, other)), slot) << key;
          if (parts.tagged) {
            const std::string sibling = "{" + std::string(parts.tag) + "}" + RandomIdentifier(rng);
            ASSERT_EQ(ClusterHashSlot(keys.StateKey(sibling, other)), slot) << sibling;
          }
        }
      }
    }
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
    std::string id = RandomKey(rng);
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
