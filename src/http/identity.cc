#include "src/http/identity.h"

#include "absl/strings/str_cat.h"

#include "src/util/sha256.h"
#include "src/util/strings.h"

namespace sluice::http::internal {
namespace {

using ::sluice::internal::AbslView;

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when `text` is dotted-quad IPv4 as IpAddress::ToString() writes it: four decimal octets
// of at most 255 without leading zeros (ParseIpAddress() accepts it and prints it back the same).
bool IsCanonicalIpv4(std::string_view text) {
  int octets = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    const size_t digits = i - start;
    if (digits == 0 || digits > 3 || (digits > 1 && text[start] == '0')) return false;
    if (digits == 3 && text.substr(start, 3) > "255") return false;
    ++octets;
    if (i == text.size()) break;
    if (text[i] != '.' || octets == 4) return false;
    ++i;
    if (i == text.size()) return false;
  }
  return octets == 4;
}

}  // namespace

std::string ApiKeyIdentity(std::string_view api_key) {
  return absl::StrCat("key:", Sha256Hex(api_key).substr(0, 32));
}

namespace {

// The identity of the client address: the peer, or the client a trusted proxy names.
std::string AddressIdentity(const IdentitySpec& spec, const ClientIpOptions& client_ip,
                            const RequestView& request) {
  if (client_ip.trusted_proxies.empty() && IsCanonicalIpv4(request.peer_address)) {
    // The common case, no proxy trusted: the client is the peer, whose text (as adapters write
    // it) is already the canonical form, so it need not be parsed and printed again.
    return absl::StrCat("ip:", AbslView(request.peer_address));
  }
  if (std::optional<IpAddress> ip =
          ResolveClientIp(client_ip, request.peer_address, request.headers)) {
    if (ip->v6 && spec.ipv6_prefix_bits < 128) {
      return absl::StrCat("ip:", ip->Masked(spec.ipv6_prefix_bits).ToString(), "/",
                          spec.ipv6_prefix_bits);
    }
    return absl::StrCat("ip:", ip->ToString());
  }
  return "ip:unknown";
}

}  // namespace

ResolvedIdentity ResolveIdentity(const IdentitySpec& spec, const ClientIpOptions& client_ip,
                                 const MiddlewareOptions& options, const RequestView& request) {
  // An identity the application verified already (RequestView::principal) stands in for the
  // authentication callback: asking it again would verify the same credentials twice.
  std::optional<Principal> authenticated;
  const Principal* principal = request.principal;
  if (principal == nullptr && options.authenticate) {
    authenticated = options.authenticate(request);
    if (authenticated) principal = &*authenticated;
  }
  if (principal != nullptr && !principal->id.empty()) {
    return {.kind = IdentityKind::kUser,
            .key = absl::StrCat("user:", principal->id),
            .tier = principal->tier.empty() ? spec.authenticated_tier : principal->tier,
            .address_key = {}};
  }
  // An API key is an identity only if someone vouches for it: the verifier, or the operator who
  // set api_key_unverified. Otherwise a client would pick a fresh bucket by sending a fresh key.
  if (!spec.api_key_header.empty() && (options.verify_api_key || spec.api_key_unverified)) {
    const std::string_view key = TrimSpaces(request.Header(spec.api_key_header).value_or(""));
    if (!key.empty()) {
      if (options.verify_api_key) {
        if (std::optional<std::string> tier = options.verify_api_key(key)) {
          return {.kind = IdentityKind::kApiKey,
                  .key = ApiKeyIdentity(key),
                  .tier = tier->empty() ? spec.api_key_tier : *std::move(tier),
                  .address_key = {}};
        }
      } else {
        return {.kind = IdentityKind::kApiKey,
                .key = ApiKeyIdentity(key),
                .tier = spec.api_key_tier,
                .address_key = AddressIdentity(spec, client_ip, request)};
      }
    }
  }
  return {.kind = IdentityKind::kIp,
          .key = AddressIdentity(spec, client_ip, request),
          .tier = spec.anonymous_tier,
          .address_key = {}};
}

}  // namespace sluice::http::internal
