// Fuzz target: the store key rule (sluice/key.h) and the Redis key scheme (RedisKeyScheme,
// EscapeKeyBytes) over both key forms.
//
// Input, consumed front to back (fuzz/fuzz_support.h): one byte choosing the key prefix, then two
// requests, each one head byte followed by length-prefixed components. The head's low nibble
// picks the algorithm (value % 5) and the form (value / 5 % 3): 0 the components joined into a
// plain key, 1 a tagged key whose tag is the first component and whose name joins the rest (at
// least one), 2 the first component as raw bytes (a key of either form). The high nibble is the
// component count (1 + value % 6).
//
// Properties, for the two requests A and B:
// - the key rule: different component lists join to different keys; TaggedKey() splits back into
//   its tag and name; a raw key is either exactly "{" + tag + "}" + name or plain;
// - injectivity: different (key, algorithm) pairs give different Redis keys, whatever the forms;
// - every Redis key is at most kMaxRedisKeyBytes, printable, and has the shape
//   <prefix>{<T>}:<suffix> (plain) or <prefix>{<T>}:<N>:<suffix> (tagged), where T is the escape
//   of the tag or '#' + its hex SHA-256 and N the escape of the name or '#' + its base64url
//   SHA-256; EscapeKeyBytes() output holds only the bytes it promises;
// - every algorithm of one key, and every key of one tag, lands in the same Redis Cluster slot.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_support.h"

#include "sluice/key.h"
#include "sluice/limit.h"

#include "src/store/redis/redis_keys.h"

namespace sluice::fuzz {
namespace {

constexpr std::array<Algorithm, 5> kAlgorithms = {Algorithm::kFixedWindow,
                                                  Algorithm::kSlidingWindow, Algorithm::kSlidingLog,
                                                  Algorithm::kTokenBucket, Algorithm::kGcra};
constexpr size_t kMaxComponents = 6;
// Up to 255 bytes a component, so that a few components pass the hashing thresholds.
constexpr size_t kMaxComponentBytes = 255;

enum class Form : uint8_t { kJoined, kTagged, kRaw };

struct Request {
  std::vector<std::string_view> components;
  Algorithm algorithm = Algorithm::kFixedWindow;
  Form form = Form::kJoined;
  std::string key;  // the store key built from the above

  friend bool operator==(const Request&, const Request&) = default;
};

std::string BuildKey(const Request& r) {
  switch (r.form) {
    case Form::kJoined:
      return JoinKeyComponents(r.components);
    case Form::kTagged:
      return TaggedKey(r.components.front(), JoinKeyComponents(std::span(r.components).subspan(1)));
    case Form::kRaw:
      break;
  }
  return std::string(r.components.front());
}

Request ReadRequest(FuzzInput& in) {
  Request r;
  const uint8_t head = in.Byte();
  r.algorithm = kAlgorithms[(head & 0x0F) % kAlgorithms.size()];
  r.form = static_cast<Form>((head & 0x0F) / kAlgorithms.size() % 3);
  size_t count = 1 + (head >> 4) % kMaxComponents;
  // A tagged key's name joins at least one component (the join of none is undefined).
  if (r.form == Form::kTagged && count < 2) count = 2;
  for (size_t i = 0; i < count; ++i) r.components.push_back(in.LengthPrefixed(kMaxComponentBytes));
  r.key = BuildKey(r);
  return r;
}

std::string DescribeRequest(const Request& r) {
  std::string out = "form " + std::to_string(static_cast<int>(r.form)) + " [";
  for (std::string_view c : r.components) out += "\"" + Printable(c, 80) + "\" ";
  return out + "] " + std::string(AlgorithmKeySuffix(r.algorithm));
}

// The prefixes tried: the default, none, and the longest allowed.
RedisKeyScheme PickScheme(uint8_t choice) {
  const std::string longest(kMaxKeyPrefixBytes, 'p');
  const std::array<std::string_view, 4> prefixes = {kDefaultKeyPrefix, "", "app:", longest};
  absl::StatusOr<RedisKeyScheme> scheme =
      RedisKeyScheme::Create(prefixes[choice % prefixes.size()]);
  SLUICE_FUZZ_CHECK(scheme.ok(), scheme.status());
  return *std::move(scheme);
}

bool IsEscapeOutputByte(unsigned char c) {
  return c >= 0x21 && c <= 0x7E && c != '{' && c != '}' && c != '#';
}

bool IsUpperHex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

// Checks that `rendered` is `bytes` escaped or `hashed` (the form's hash of `bytes`).
void CheckRendered(std::string_view what, std::string_view rendered, std::string_view bytes,
                   const std::string& hashed) {
  if (rendered.starts_with('#')) {
    SLUICE_FUZZ_CHECK(rendered == hashed, what << " " << Printable(rendered));
  } else {
    SLUICE_FUZZ_CHECK(rendered == EscapeKeyBytes(bytes),
                      what << " " << Printable(rendered) << " for " << Printable(bytes));
  }
}

void CheckKeyShape(const RedisKeyScheme& scheme, std::string_view key, std::string_view redis_key,
                   Algorithm algorithm) {
  SLUICE_FUZZ_CHECK(redis_key.size() <= kMaxRedisKeyBytes,
                    redis_key.size() << "-byte Redis key for a " << key.size() << "-byte key");
  for (const char ch : redis_key) {
    const auto c = static_cast<unsigned char>(ch);
    SLUICE_FUZZ_CHECK(c >= 0x21 && c <= 0x7E, "unprintable byte in " << Printable(redis_key));
  }
  const std::string tag = scheme.HashTag(key);
  SLUICE_FUZZ_CHECK(!tag.empty() && tag.find_first_of("{}") == std::string::npos,
                    "tag " << Printable(tag));
  const std::string head = scheme.prefix() + "{" + tag + "}:";
  const std::string tail = ":" + std::string(AlgorithmKeySuffix(algorithm));
  const KeyParts parts = SplitKey(key);
  CheckRendered("tag", tag, parts.tag, "#" + Sha256Hex(parts.tag));
  if (!parts.tagged) {
    SLUICE_FUZZ_CHECK(redis_key == head + std::string(AlgorithmKeySuffix(algorithm)),
                      Printable(redis_key) << " is not the plain form of " << Printable(key));
    return;
  }
  SLUICE_FUZZ_CHECK(redis_key.starts_with(head) && redis_key.ends_with(tail) &&
                        redis_key.size() >= head.size() + tail.size(),
                    Printable(redis_key) << " is not the tagged form of " << Printable(key));
  const std::string_view name =
      redis_key.substr(head.size(), redis_key.size() - head.size() - tail.size());
  CheckRendered("name", name, parts.name, "#" + Sha256Base64Url(parts.name));
}

void CheckEscape(std::string_view bytes) {
  const std::string escaped = EscapeKeyBytes(bytes);
  for (size_t i = 0; i < escaped.size(); ++i) {
    const auto c = static_cast<unsigned char>(escaped[i]);
    SLUICE_FUZZ_CHECK(IsEscapeOutputByte(c), "escaped form holds byte " << int{c});
    if (c == '%') {
      SLUICE_FUZZ_CHECK(
          i + 2 < escaped.size() && IsUpperHex(escaped[i + 1]) && IsUpperHex(escaped[i + 2]),
          "bad escape in " << Printable(escaped));
    }
  }
}

void CheckKeyRule(const Request& r) {
  const KeyParts parts = SplitKey(r.key);
  if (parts.tagged) {
    SLUICE_FUZZ_CHECK(r.key == "{" + std::string(parts.tag) + "}" + std::string(parts.name),
                      "split does not give back " << Printable(r.key));
  } else {
    SLUICE_FUZZ_CHECK(parts.tag == r.key && parts.name.empty(), "plain " << Printable(r.key));
  }
  if (r.form == Form::kTagged) {
    SLUICE_FUZZ_CHECK(parts.tagged && UnescapeKeyTag(parts.tag) == r.components.front(),
                      "tag of " << Printable(r.key));
  }
}

}  // namespace
}  // namespace sluice::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::fuzz;  // NOLINT(google-build-using-namespace): a C entry point.
  using sluice::Algorithm;
  FuzzInput in(data, size);
  const sluice::RedisKeyScheme scheme = PickScheme(in.Byte());
  const Request a = ReadRequest(in);
  const Request b = ReadRequest(in);
  CheckKeyRule(a);
  CheckKeyRule(b);

  // Within one form other than raw, the key gives back the components.
  if (a.form == b.form && a.form != Form::kRaw) {
    SLUICE_FUZZ_CHECK((a.components == b.components) == (a.key == b.key),
                      "keys collide: " << DescribeRequest(a) << " and " << DescribeRequest(b)
                                       << " -> " << Printable(a.key));
  }
  const std::string redis_a = scheme.StateKey(a.key, a.algorithm);
  const std::string redis_b = scheme.StateKey(b.key, b.algorithm);
  SLUICE_FUZZ_CHECK((a.key == b.key && a.algorithm == b.algorithm) == (redis_a == redis_b),
                    "Redis keys collide: " << DescribeRequest(a) << " and " << DescribeRequest(b)
                                           << " -> " << Printable(redis_a));
  CheckKeyShape(scheme, a.key, redis_a, a.algorithm);
  CheckKeyShape(scheme, b.key, redis_b, b.algorithm);
  CheckEscape(a.key);
  for (std::string_view component : b.components) CheckEscape(component);

  // One key, every algorithm: one slot. One tag, any name (b's key as the name): one slot.
  const uint16_t slot = sluice::ClusterHashSlot(redis_a);
  const sluice::KeyParts parts = sluice::SplitKey(a.key);
  for (Algorithm algorithm : kAlgorithms) {
    const std::string key = scheme.StateKey(a.key, algorithm);
    SLUICE_FUZZ_CHECK(sluice::ClusterHashSlot(key) == slot,
                      Printable(key) << " is in another slot than " << Printable(redis_a));
    if (parts.tagged) {
      const std::string sibling = "{" + std::string(parts.tag) + "}" + b.key;
      const std::string sibling_key = scheme.StateKey(sibling, algorithm);
      SLUICE_FUZZ_CHECK(sluice::ClusterHashSlot(sibling_key) == slot,
                        Printable(sibling_key)
                            << " has the tag of " << Printable(redis_a) << " but another slot");
    }
  }
  return 0;
}
