#include "src/util/sha256.h"

#include <cstdlib>

#include <openssl/evp.h>

namespace sluice {

std::array<uint8_t, kSha256Bytes> Sha256(std::string_view bytes) {
  std::array<uint8_t, kSha256Bytes> digest{};
  unsigned int length = 0;
  // EVP_Digest fails only when OpenSSL cannot allocate. Any digest returned instead would make
  // distinct keys share a state, so the process stops rather than mis-count.
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != kSha256Bytes) {
    std::abort();
  }
  return digest;
}

std::string Sha256Hex(std::string_view bytes) {
  constexpr std::string_view kLowerHexDigits = "0123456789abcdef";
  const std::array<uint8_t, kSha256Bytes> digest = Sha256(bytes);
  std::string hex;
  hex.reserve(2 * kSha256Bytes);
  for (const uint8_t b : digest) {
    hex.push_back(kLowerHexDigits[b >> 4]);
    hex.push_back(kLowerHexDigits[b & 0xF]);
  }
  return hex;
}

}  // namespace sluice
