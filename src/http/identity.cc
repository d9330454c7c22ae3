#include "src/http/identity.h"

#include "absl/strings/str_cat.h"

#include "src/store/redis/redis_keys.h"

namespace sluice::http::internal {
namespace {

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string ApiKeyIdentity(std::string_view api_key) {
  return absl::StrCat("key:", Sha256Hex(api_key).substr(0, 32));
}

ResolvedIdentity ResolveIdentity(const IdentitySpec& spec, const ClientIpOptions& client_ip,
                                 const MiddlewareOptions& options, const RequestView& request) {
  if (options.authenticate) {
    std::optional<Principal> principal = options.authenticate(request);
    if (principal && !principal->id.empty()) {
      return {.kind = IdentityKind::kUser,
              .key = absl::StrCat("user:", principal->id),
              .tier = principal->tier.empty() ? spec.authenticated_tier : principal->tier};
    }
  }
  if (!spec.api_key_header.empty()) {
    const std::string_view key = TrimSpaces(request.Header(spec.api_key_header).value_or(""));
    if (!key.empty()) {
      std::optional<std::string> tier = spec.api_key_tier;
      if (options.verify_api_key) tier = options.verify_api_key(key);
      if (tier) {
        return {.kind = IdentityKind::kApiKey,
                .key = ApiKeyIdentity(key),
                .tier = tier->empty() ? spec.api_key_tier : *std::move(tier)};
      }
    }
  }
  ResolvedIdentity out{.kind = IdentityKind::kIp, .key = "ip:unknown", .tier = spec.anonymous_tier};
  if (std::optional<IpAddress> ip =
          ResolveClientIp(client_ip, request.peer_address, request.headers)) {
    if (ip->v6 && spec.ipv6_prefix_bits < 128) {
      out.key = absl::StrCat("ip:", ip->Masked(spec.ipv6_prefix_bits).ToString(), "/",
                             spec.ipv6_prefix_bits);
    } else {
      out.key = absl::StrCat("ip:", ip->ToString());
    }
  }
  return out;
}

}  // namespace sluice::http::internal
