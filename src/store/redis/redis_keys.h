// Redis key scheme: how a store key (include/sluice/key.h) and an algorithm become one Redis key
// (docs/keys.md, "Redis form").
//
//   plain key          <prefix>{<tag>}:<suffix>            "user:42"        ->
//   sluice:{user:42}:gcra tagged key         <prefix>{<tag>}:<name>:<suffix>     "{user:42}burst"
//   -> sluice:{user:42}:burst:gcra
//
// - <prefix> is configurable (default "sluice:"), at most kMaxKeyPrefixBytes, with no '{' or '}',
//   so the first '{' of every key is ours and opens the Cluster hash tag.
// - <tag> is, for a plain key, the whole key; for a tagged key, its tag in escaped form
//   (SplitKey()). It is percent-escaped (EscapeKeyBytes) so that it holds no '{', '}', '%', '#',
//   space, control or non-ASCII byte: it cannot be closed early, no caller can choose the slot, and
//   the key is printable. When the escaped form is empty or longer than the form's tag budget,
//   the tag is '#' and the 64 hex digits of its SHA-256 instead ('#' never appears in an escaped
//   form). The rendering depends on the tag alone, so every key of one tag, under every
//   algorithm, is in one Cluster slot.
// - <name> is a tagged key's name, escaped the same way, or '#' and the unpadded base64url of its
//   SHA-256 (43 characters) when it does not fit beside the tag.
// - <suffix> names the algorithm ("fw", "sw", "sl", "tb", "gcra"), so one key under two algorithms
//   is two states.
//
// Every Redis key is printable and at most kMaxRedisKeyBytes long. Distinct (key, algorithm)
// pairs always map to distinct Redis keys, except for a SHA-256 collision (proof in
// redis_keys.cc).
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
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

#include "sluice/key.h"
#include "sluice/limit.h"

#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/util/sha256.h"

namespace sluice {

// The longest Redis key the scheme produces, in bytes.
inline constexpr size_t kMaxRedisKeyBytes = 200;
// The longest key prefix accepted, in bytes; leaves room for hashed parts within kMaxRedisKeyBytes.
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
  // Returns the Redis key holding the state of `algorithm` for the store key `key` (any bytes).
  std::string StateKey(std::string_view key, Algorithm algorithm) const;

  // RedisKeyScheme::HashTag()
  //
  // Returns the text between the braces of the Redis keys of `key`; it depends only on the key's
  // tag (SplitKey()), so keys with one tag share it.
  std::string HashTag(std::string_view key) const;

  // RedisKeyScheme::HoldersKey()
  //
  // Returns the key of the leaseholders' records (lease_holders): "<prefix>lease:holders". No
  // state key is shaped like it (each has a '{' right after the prefix).
  std::string HoldersKey() const { return prefix_ + "lease:holders"; }

  const std::string& prefix() const { return prefix_; }

  // The longest escaped tag kept as is in each form; longer ones are hashed.
  size_t max_plain_tag_bytes() const { return max_plain_tag_bytes_; }
  size_t max_tagged_tag_bytes() const { return max_tagged_tag_bytes_; }

 private:
  explicit RedisKeyScheme(std::string prefix);

  std::string prefix_;
  size_t max_plain_tag_bytes_;
  size_t max_tagged_tag_bytes_;
  // The bytes a tagged key's rendered tag and name share.
  size_t tagged_budget_;
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

// Sha256Base64Url()
//
// Returns the SHA-256 of `bytes` in unpadded base64url (43 characters of A-Z a-z 0-9 '-' '_'):
// the hashed form of an over-long name.
std::string Sha256Base64Url(std::string_view bytes);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_REDIS_KEYS_H_
