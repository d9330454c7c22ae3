// SHA-256 of a byte string (OpenSSL), for Redis keys too long to keep (docs/keys.md) and API-key
// identities. Library sluice_sha256, built with the Redis store or the HTTP middleware.
//
// Thread safety: pure functions.
#ifndef SLUICE_UTIL_SHA256_H_
#define SLUICE_UTIL_SHA256_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice {

inline constexpr size_t kSha256Bytes = 32;

// Sha256()
//
// Returns the SHA-256 digest of `bytes`. Aborts if OpenSSL cannot allocate: any other digest
// would make distinct keys share a state.
std::array<uint8_t, kSha256Bytes> Sha256(std::string_view bytes);

// Sha256Hex()
//
// Returns the SHA-256 of `bytes` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view bytes);

}  // namespace sluice

#endif  // SLUICE_UTIL_SHA256_H_
