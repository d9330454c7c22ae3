#include "src/store/redis/redis_keys.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include <openssl/evp.h>

namespace sluice {
namespace {

constexpr std::string_view kHexDigits = "0123456789ABCDEF";
constexpr std::string_view kLowerHexDigits = "0123456789abcdef";
// The longest suffix; every algorithm's keys get the same tag budget, so all algorithms of one
// caller key share the tag (and so the Cluster slot) whatever its length.
constexpr size_t kMaxSuffixBytes = 4;
// "{" + "}:" around the tag.
constexpr size_t kTagFramingBytes = 3;
// '#' and 64 hex digits.
constexpr size_t kHashedTagBytes = 65;

bool KeptAsIs(unsigned char c) {
  return c >= 0x21 && c <= 0x7E && c != '%' && c != '{' && c != '}' && c != '#';
}

// Appends the escaped form of `bytes` to `out`; stops and returns false as soon as `out` would
// exceed `limit` bytes, so a megabyte key costs a hash, not a megabyte of escaping.
bool AppendEscaped(std::string_view bytes, size_t limit, std::string& out) {
  for (unsigned char c : bytes) {
    if (KeptAsIs(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHexDigits[c >> 4]);
      out.push_back(kHexDigits[c & 0xF]);
    }
    if (out.size() > limit) return false;
  }
  return true;
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
      max_escaped_tag_bytes_(kMaxRedisKeyBytes - prefix_.size() - kTagFramingBytes -
                             kMaxSuffixBytes) {
  static_assert(kMaxRedisKeyBytes - kMaxKeyPrefixBytes - kTagFramingBytes - kMaxSuffixBytes >=
                kHashedTagBytes);
}

std::string RedisKeyScheme::HashTag(std::string_view caller_key) const {
  std::string tag;
  tag.reserve(std::min(caller_key.size(), max_escaped_tag_bytes_ + 3));
  // An empty tag ("{}") would make Redis Cluster hash the whole key, suffix included, so the
  // algorithms of the empty key would land in different slots; it is hashed like a long key.
  if (!caller_key.empty() && AppendEscaped(caller_key, max_escaped_tag_bytes_, tag)) return tag;
  return absl::StrCat("#", Sha256Hex(caller_key));
}

std::string RedisKeyScheme::StateKey(std::string_view caller_key, Algorithm algorithm) const {
  // Debian's Abseil has its own string_view, which StrCat needs; std::string converts to it.
  const std::string_view suffix = AlgorithmKeySuffix(algorithm);
  std::string key = absl::StrCat(prefix_, "{", HashTag(caller_key), "}:");
  key.append(suffix);
  return key;
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

std::string JoinKeyComponents(std::span<const std::string_view> components) {
  std::string out;
  for (size_t i = 0; i < components.size(); ++i) {
    if (i > 0) out.push_back(':');
    for (char c : components[i]) {
      if (c == '\\' || c == ':') out.push_back('\\');
      out.push_back(c);
    }
  }
  return out;
}

std::string Sha256Hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  // EVP_Digest fails only when OpenSSL cannot allocate. Any digest returned instead would make
  // distinct keys share a state, so the process stops rather than mis-count.
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    std::abort();
  }
  std::string hex;
  hex.reserve(size_t{2} * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kLowerHexDigits[digest[i] >> 4]);
    hex.push_back(kLowerHexDigits[digest[i] & 0xF]);
  }
  return hex;
}

}  // namespace sluice
