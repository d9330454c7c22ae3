#include "src/store/redis/redis_keys.h"

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

constexpr std::string_view kHexDigits = "0123456789ABCDEF";
constexpr std::string_view kBase64UrlDigits =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
// The longest suffix; every algorithm's keys get the same tag budget, so all algorithms of one
// key share the tag (and so the Cluster slot) whatever its length.
constexpr size_t kMaxSuffixBytes = 4;
// "{" + "}:" around the tag of a plain key.
constexpr size_t kPlainFramingBytes = 3;
// "{" + "}:" + ":" around the tag and name of a tagged key.
constexpr size_t kTaggedFramingBytes = 4;
// '#' and 64 hex digits.
constexpr size_t kHashedTagBytes = 65;
// '#' and 43 base64url digits.
constexpr size_t kHashedNameBytes = 44;

static_assert(kMaxRedisKeyBytes - kMaxKeyPrefixBytes - kPlainFramingBytes - kMaxSuffixBytes >=
              kHashedTagBytes);
// A tagged key keeps room for a hashed name whatever its tag, and the longest prefix still leaves
// room for a hashed tag beside it.
static_assert(kMaxRedisKeyBytes - kMaxKeyPrefixBytes - kTaggedFramingBytes - kMaxSuffixBytes -
                  kHashedNameBytes >=
              kHashedTagBytes);

bool KeptAsIs(unsigned char c) {
  return c >= 0x21 && c <= 0x7E && c != '%' && c != '{' && c != '}' && c != '#';
}

// Appends the escaped form of `bytes` to `out`; stops and returns false as soon as it would take
// more than `budget` bytes, so a megabyte key costs a hash, not a megabyte of escaping.
bool AppendEscaped(std::string_view bytes, size_t budget, std::string& out) {
  const size_t start = out.size();
  for (unsigned char c : bytes) {
    if (KeptAsIs(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHexDigits[c >> 4]);
      out.push_back(kHexDigits[c & 0xF]);
    }
    if (out.size() - start > budget) return false;
  }
  return true;
}

// Appends the rendered tag: escaped when non-empty and within `budget`, else '#' + hex SHA-256.
// An empty tag ("{}") would make Redis Cluster hash the whole key, suffix included, so the
// algorithms of one key would land in different slots; it is hashed like a long one.
void AppendTag(std::string_view tag, size_t budget, std::string& out) {
  const size_t start = out.size();
  if (!tag.empty() && AppendEscaped(tag, budget, out)) return;
  out.resize(start);
  out.push_back('#');
  out.append(Sha256Hex(tag));
}

// Appends the rendered name: escaped when within `budget`, else '#' + base64url SHA-256.
void AppendName(std::string_view name, size_t budget, std::string& out) {
  const size_t start = out.size();
  if (AppendEscaped(name, budget, out)) return;
  out.resize(start);
  out.push_back('#');
  out.append(Sha256Base64Url(name));
}

}  // namespace

absl::StatusOr<RedisKeyScheme> RedisKeyScheme::Create(std::string_view prefix) {
  if (prefix.size() > kMaxKeyPrefixBytes) {
    return absl::InvalidArgumentError(absl::StrCat("redis key prefix: at most ", kMaxKeyPrefixBytes,
                                                   " bytes, got ", prefix.size()));
  }
  for (unsigned char c : prefix) {
    // A brace in the prefix would open the hash tag before ours (Redis takes the first '{').
    if (c < 0x21 || c > 0x7E || c == '{' || c == '}') {
      return absl::InvalidArgumentError(
          "redis key prefix: only printable ASCII without '{' and '}' is allowed");
    }
  }
  return RedisKeyScheme(std::string(prefix));
}

RedisKeyScheme::RedisKeyScheme(std::string prefix)
    : prefix_(std::move(prefix)),
      max_plain_tag_bytes_(kMaxRedisKeyBytes - prefix_.size() - kPlainFramingBytes -
                           kMaxSuffixBytes),
      max_tagged_tag_bytes_(kMaxRedisKeyBytes - prefix_.size() - kTaggedFramingBytes -
                            kMaxSuffixBytes - kHashedNameBytes),
      tagged_budget_(kMaxRedisKeyBytes - prefix_.size() - kTaggedFramingBytes - kMaxSuffixBytes) {}

std::string RedisKeyScheme::HashTag(std::string_view key) const {
  const KeyParts parts = SplitKey(key);
  std::string tag;
  AppendTag(parts.tag, parts.tagged ? max_tagged_tag_bytes_ : max_plain_tag_bytes_, tag);
  return tag;
}

// Why distinct (key, algorithm) pairs give distinct Redis keys (up to a SHA-256 collision):
//
// 1. Every Redis key is prefix + "{" + T + "}:" + R. The prefix holds no brace and T (escaped or
//    '#' + hex) holds none, so the first '{' and the first '}' after it find T and R again.
// 2. The form is read from R: a plain key's R is the suffix alone, which holds no ':'; a tagged
//    key's R is N + ":" + suffix, which holds at least one ':'.
// 3. The suffix is what follows the last ':' of the key (no suffix holds a ':'), and it names the
//    algorithm one-to-one. For a tagged key, N is what lies between "}:" and that last ':'.
// 4. T and N each come from one byte string: the escape is injective (each byte maps to itself or
//    to a '%' escape, and '%' itself is escaped), and a hashed form starts with '#', which no
//    escaped form contains; two hashed forms are equal only if SHA-256 collides.
// 5. A plain key is its own tag, so T gives the key back. A tagged key is "{" + tag + "}" + name
//    for the escaped tag and name SplitKey() returns, so (T, N) gives the key back.
// Hence the Redis key gives back the form, the key and the algorithm: the map is injective.
std::string RedisKeyScheme::StateKey(std::string_view key, Algorithm algorithm) const {
  const std::string_view suffix = AlgorithmKeySuffix(algorithm);
  const KeyParts parts = SplitKey(key);
  std::string out;
  out.reserve(kMaxRedisKeyBytes);
  out.append(prefix_);
  out.push_back('{');
  if (!parts.tagged) {
    AppendTag(parts.tag, max_plain_tag_bytes_, out);
    out.append("}:");
  } else {
    const size_t tag_start = out.size();
    AppendTag(parts.tag, max_tagged_tag_bytes_, out);
    const size_t tag_bytes = out.size() - tag_start;
    out.append("}:");
    // The name takes what the tag left; a hashed name always fits (max_tagged_tag_bytes_).
    AppendName(parts.name, tagged_budget_ - tag_bytes, out);
    out.push_back(':');
  }
  out.append(suffix);
  return out;
}

std::string_view AlgorithmKeySuffix(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kFixedWindow:
      return "fw";
    case Algorithm::kSlidingWindow:
      return "sw";
    case Algorithm::kSlidingLog:
      return "sl";
    case Algorithm::kTokenBucket:
      return "tb";
    case Algorithm::kGcra:
      return "gcra";
  }
  return "unknown";
}

std::string EscapeKeyBytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  AppendEscaped(bytes, std::string::npos, out);
  return out;
}

std::string Sha256Base64Url(std::string_view bytes) {
  const std::array<uint8_t, kSha256Bytes> digest = Sha256(bytes);
  std::string out;
  out.reserve(kHashedNameBytes - 1);
  // Three bytes give four digits; the last two bytes give three (unpadded).
  uint32_t bits = 0;
  int bit_count = 0;
  for (const uint8_t b : digest) {
    bits = (bits << 8) | b;
    bit_count += 8;
    while (bit_count >= 6) {
      bit_count -= 6;
      out.push_back(kBase64UrlDigits[(bits >> bit_count) & 0x3F]);
    }
  }
  if (bit_count > 0) out.push_back(kBase64UrlDigits[(bits << (6 - bit_count)) & 0x3F]);
  return out;
}

}  // namespace sluice
