// Identity: who a request is counted as, and its tier, through the resolver chain of
// MiddlewareOptions (authentication callback, API key header, client IP).
//
// Thread safety: pure functions of their arguments (the callbacks must be thread-safe).
#ifndef SLUICE_HTTP_IDENTITY_H_
#define SLUICE_HTTP_IDENTITY_H_

#include <string>

#include "sluice/http/middleware.h"
#include "sluice/http/request.h"

#include "src/http/compiled_rules.h"

namespace sluice::http::internal {

enum class IdentityKind : uint8_t { kUser, kApiKey, kIp };

struct ResolvedIdentity {
  IdentityKind kind = IdentityKind::kIp;
  // The identity component of counter keys: "user:<id>", "key:<first 32 hex digits of the key's
  // SHA-256>" or "ip:<address>" ("ip:<network>/<bits>" for IPv6, "ip:unknown" without a peer).
  std::string key;
  std::string tier;
  // The identity of the client address, "ip:<address>" as above, when `key` is only claimed by
  // the request (an API key under IdentitySpec::api_key_unverified); empty otherwise. The global
  // rule counts such a request by this, not by its claim.
  std::string address_key;
};

// ResolveIdentity()
//
// Returns the identity and tier of `request` under `spec` and the resolvers of `options`.
ResolvedIdentity ResolveIdentity(const IdentitySpec& spec, const ClientIpOptions& client_ip,
                                 const MiddlewareOptions& options, const RequestView& request);

// ApiKeyIdentity()
//
// Returns "key:" and the first 32 hex digits of the SHA-256 of `api_key`: 128 bits, enough to keep
// keys apart, and the key itself never reaches the store or its logs.
std::string ApiKeyIdentity(std::string_view api_key);

}  // namespace sluice::http::internal

#endif  // SLUICE_HTTP_IDENTITY_H_
