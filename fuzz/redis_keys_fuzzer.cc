// Fuzz target: the Redis key scheme (RedisKeyScheme, EscapeKeyBytes, JoinKeyComponents).
//
// Input, consumed front to back (fuzz/fuzz_support.h): one byte choosing the key prefix, then two
// requests, each one byte of algorithm and component count followed by length-prefixed components.
//
// Properties, for the two requests A and B:
// - injectivity: A != B (components or algorithm) implies different Redis keys, and different
//   component lists give different joined caller keys;
// - every key is at most kMaxRedisKeyBytes and has the shape <prefix>{<tag>}:<suffix>, where the
//   tag holds no '{' or '}' and is either the printable escape of the caller key or '#' and its
//   SHA-256; EscapeKeyBytes() output holds only the bytes it promises;
// - every algorithm of one caller key lands in the same Redis Cluster slot.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_support.h"

#include "sluice/limit.h"

#include "src/store/redis/redis_keys.h"

namespace sluice::fuzz {
namespace {

constexpr std::array<Algorithm, 5> kAlgorithms = {Algorithm::kFixedWindow,
                                                  Algorithm::kSlidingWindow, Algorithm::kSlidingLog,
                                                  Algorithm::kTokenBucket, Algorithm::kGcra};
constexpr size_t kMaxComponents = 6;
// Up to 255 bytes a component, so that a few components pass the hashing threshold.
constexpr size_t kMaxComponentBytes = 255;

struct Request {
  std::vector<std::string_view> components;
  Algorithm algorithm = Algorithm::kFixedWindow;

  friend bool operator==(const Request&, const Request&) = default;
};

Request ReadRequest(FuzzInput& in) {
  Request r;
  const uint8_t head = in.Byte();
  r.algorithm = kAlgorithms[(head & 0x0F) % kAlgorithms.size()];
  const size_t count = 1 + (head >> 4) % kMaxComponents;
  for (size_t i = 0; i < count; ++i) r.components.push_back(in.LengthPrefixed(kMaxComponentBytes));
  return r;
}

std::string DescribeRequest(const Request& r) {
  std::string out = "[";
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

void CheckKeyShape(const RedisKeyScheme& scheme, std::string_view caller_key, std::string_view key,
                   Algorithm algorithm) {
  SLUICE_FUZZ_CHECK(key.size() <= kMaxRedisKeyBytes,
                    key.size() << "-byte key for a " << caller_key.size() << "-byte caller key");
  const std::string tag = scheme.HashTag(caller_key);
  const std::string expected =
      scheme.prefix() + "{" + tag + "}:" + std::string(AlgorithmKeySuffix(algorithm));
  SLUICE_FUZZ_CHECK(key == expected, Printable(key) << " != " << Printable(expected));
  SLUICE_FUZZ_CHECK(tag.find_first_of("{}") == std::string::npos, "tag " << Printable(tag));
  if (!tag.empty() && tag[0] == '#') {
    SLUICE_FUZZ_CHECK(tag == "#" + Sha256Hex(caller_key), "hashed tag " << tag);
  } else {
    SLUICE_FUZZ_CHECK(!caller_key.empty() && tag == EscapeKeyBytes(caller_key),
                      "tag " << Printable(tag) << " for " << Printable(caller_key));
  }
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

}  // namespace
}  // namespace sluice::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::fuzz;  // NOLINT(google-build-using-namespace): a C entry point.
  using sluice::Algorithm;
  FuzzInput in(data, size);
  const sluice::RedisKeyScheme scheme = PickScheme(in.Byte());
  const Request a = ReadRequest(in);
  const Request b = ReadRequest(in);

  const std::string caller_a = sluice::JoinKeyComponents(a.components);
  const std::string caller_b = sluice::JoinKeyComponents(b.components);
  SLUICE_FUZZ_CHECK((a.components == b.components) == (caller_a == caller_b),
                    "joined keys collide: " << DescribeRequest(a) << " and " << DescribeRequest(b)
                                            << " -> " << Printable(caller_a));
  const std::string key_a = scheme.StateKey(caller_a, a.algorithm);
  const std::string key_b = scheme.StateKey(caller_b, b.algorithm);
  SLUICE_FUZZ_CHECK((a == b) == (key_a == key_b),
                    "Redis keys collide: " << DescribeRequest(a) << " and " << DescribeRequest(b)
                                           << " -> " << Printable(key_a));
  CheckKeyShape(scheme, caller_a, key_a, a.algorithm);
  CheckKeyShape(scheme, caller_b, key_b, b.algorithm);
  CheckEscape(caller_a);
  for (std::string_view component : b.components) CheckEscape(component);

  // One caller key, every algorithm: one slot.
  const uint16_t slot = sluice::ClusterHashSlot(key_a);
  for (Algorithm algorithm : kAlgorithms) {
    const std::string key = scheme.StateKey(caller_a, algorithm);
    SLUICE_FUZZ_CHECK(sluice::ClusterHashSlot(key) == slot,
                      Printable(key) << " is in another slot than " << Printable(key_a));
  }
  // Raw caller keys (not joined) must stay distinct too: the store accepts any bytes.
  const std::string_view raw_a = a.components.front();
  const std::string_view raw_b = b.components.front();
  SLUICE_FUZZ_CHECK(
      (raw_a == raw_b) ==
          (scheme.StateKey(raw_a, Algorithm::kGcra) == scheme.StateKey(raw_b, Algorithm::kGcra)),
      "raw keys collide: \"" << Printable(raw_a) << "\" and \"" << Printable(raw_b) << "\"");
  return 0;
}
