// Redis key scheme: how a caller's key and an algorithm become one Redis key (docs/keys.md).
//
//   <prefix>{<tag>}:<suffix>         e.g. "sluice:{user:42}:gcra"
//
// - <prefix> is configurable (default "sluice:"), at most kMaxKeyPrefixBytes, with no '{' or '}',
//   so the first '{' of every key is ours and opens the Cluster hash tag.
// - <tag> is the caller's key, percent-escaped (EscapeKeyBytes) so that it contains no '{', '}',
//   '%', '#', space, control or non-ASCII byte: the tag cannot be closed early, no caller can
//   choose the slot, and the key is printable. When the escaped form would make the key longer than
//   kMaxRedisKeyBytes (or when it would be empty), the tag is '#' followed by the hex SHA-256 of
//   the caller's key instead ('#' never appears in an escaped tag, so the forms cannot collide).
// - <suffix> names the algorithm ("fw", "sw", "sl", "tb", "gcra"), so one caller key under two
//   algorithms is two states; every algorithm of one caller key shares the tag and so the slot.
//
// Distinct caller keys always map to distinct Redis keys, except for a SHA-256 collision between
// two over-long keys.
//
// Example:
//   absl::StatusOr<RedisKeyScheme> keys = RedisKeyScheme::Create("sluice:");
//   std::string k = keys->StateKey("user:42", Algorithm::kGcra);  // "sluice:{user:42}:gcra"
//
// Thread safety: a value type; const methods are safe to call concurrently.
#ifndef SLUICE_STORE_REDIS_REDIS_KEYS_H_
#define SLUICE_STORE_REDIS_REDIS_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

#include "sluice/limit.h"

#include "src/store/redis/client/cluster_slot.h"

namespace sluice {

// The longest Redis key the scheme produces, in bytes.
inline constexpr size_t kMaxRedisKeyBytes = 200;
// The longest key prefix accepted, in bytes; leaves room for a hashed tag within kMaxRedisKeyBytes.
inline constexpr size_t kMaxKeyPrefixBytes = 64;
inline constexpr std::string_view kDefaultKeyPrefix = "sluice:";

class RedisKeyScheme {
 public:
  // RedisKeyScheme::Create()
  //
  // Returns a scheme for `prefix`, or InvalidArgument when the prefix is longer than
  // kMaxKeyPrefixBytes or contains '{', '}' or a byte outside printable ASCII.
  static absl::StatusOr<RedisKeyScheme> Create(std::string_view prefix);

  // RedisKeyScheme::StateKey()
  //
  // Returns the Redis key holding the state of `algorithm` for `caller_key` (any bytes).
  std::string StateKey(std::string_view caller_key, Algorithm algorithm) const;

  // RedisKeyScheme::HashTag()
  //
  // Returns the tag of `caller_key`: the text between the braces of its state keys.
  std::string HashTag(std::string_view caller_key) const;

  const std::string& prefix() const { return prefix_; }

 private:
  explicit RedisKeyScheme(std::string prefix);

  std::string prefix_;
  // The longest escaped tag kept as is; longer ones are hashed.
  size_t max_escaped_tag_bytes_;
};

// AlgorithmKeySuffix()
//
// Returns the key suffix of `algorithm`: "fw", "sw", "sl", "tb" or "gcra".
std::string_view AlgorithmKeySuffix(Algorithm algorithm);

// EscapeKeyBytes()
//
// Returns `bytes` with every byte outside printable ASCII (0x21-0x7E) and every '%', '{', '}' and
// '#' replaced by '%' and two uppercase hex digits. Injective; the output has none of those bytes.
std::string EscapeKeyBytes(std::string_view bytes);

// JoinKeyComponents()
//
// Returns a caller key made of `components` (e.g. area, route, tier, identity) joined by ':', each
// with '\' written as "\\" and ':' as "\:", so that no two distinct component lists give the same
// key (("a:b") and ("a", "b") differ). The result is an ordinary caller key: the store escapes it
// like any other. REQUIRES: !components.empty().
std::string JoinKeyComponents(std::span<const std::string_view> components);

// Sha256Hex()
//
// Returns the SHA-256 of `bytes` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view bytes);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_REDIS_KEYS_H_
