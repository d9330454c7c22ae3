// Client IP: which address a request is counted against when it is keyed by IP.
//
// The TCP peer is the client unless it is one of our own proxies. Only when the peer is inside a
// configured `trusted_proxies` CIDR does the middleware read the forwarding header, and then it
// reads it from the right (the hop our proxy appended) to the left, skipping hops that are
// themselves trusted proxies, and takes the first untrusted hop. Anything left of that hop was
// written by the client and is never used: a forged left-most value changes nothing.
//
// An unparsable hop (garbage, "unknown", an obfuscated RFC 7239 identifier, a zone index) reached
// during the walk stops it, and the peer address is used; so does a walk longer than `max_hops`.
// A walk through trusted hops only (an internal client behind our proxy) ends at the left-most
// hop. The default, no trusted proxy, ignores forwarding headers entirely.
//
// Exactly one header is read, the one the proxies maintain: a proxy that appends to
// X-Forwarded-For passes a client's own `Forwarded` header through untouched, so reading both
// would let the client choose. All lines of that header are merged, in order.
//
// IPv4-mapped IPv6 addresses (::ffff:192.0.2.7, common on dual-stack sockets) are read as IPv4.
//
// Example:
//   absl::StatusOr<Cidr> proxies = ParseCidr("10.0.0.0/8");
//   if (!proxies.ok()) return proxies.status();
//   ClientIpOptions options{.trusted_proxies = {*proxies}};
//   std::optional<IpAddress> ip = ResolveClientIp(options, view.peer_address, view.headers);
//
// Thread safety: value types and pure functions.
#ifndef SLUICE_HTTP_CLIENT_IP_H_
#define SLUICE_HTTP_CLIENT_IP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/http/request.h"

namespace sluice::http {

struct IpAddress {
  // True for IPv6 (IPv4-mapped addresses are stored as IPv4).
  bool v6 = false;
  // Network byte order; IPv4 uses the first 4 bytes, the rest are zero.
  std::array<uint8_t, 16> bytes{};

  // Returns the canonical text: "192.0.2.7", "2001:db8::1" (RFC 5952).
  std::string ToString() const;
  // Returns the address with every bit past the first `bits` cleared.
  IpAddress Masked(int bits) const;
  int BitLength() const { return v6 ? 128 : 32; }

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// ParseIpAddress()
//
// Returns the address in `text`: dotted-quad IPv4 or RFC 4291 IPv6 text, without brackets, port
// or zone; nullopt for anything else.
std::optional<IpAddress> ParseIpAddress(std::string_view text);

struct Cidr {
  IpAddress network{};
  int prefix_bits = 0;

  bool Contains(const IpAddress& ip) const;
  friend bool operator==(const Cidr&, const Cidr&) = default;
};

// ParseCidr()
//
// Returns the network in "10.0.0.0/8", "2001:db8::/32", or a bare address (a /32 or /128), or
// InvalidArgument. Host bits set under the mask ("10.0.0.1/8") are an error: they are usually a
// typo for a narrower network.
absl::StatusOr<Cidr> ParseCidr(std::string_view text);

enum class ForwardedHeader : uint8_t {
  // X-Forwarded-For: a comma-separated list of addresses, optionally "[v6]:port" or "v4:port".
  kXForwardedFor = 0,
  // Forwarded (RFC 7239): the `for=` parameter of each comma-separated element.
  kForwarded = 1,
};

// Returns "x-forwarded-for" or "forwarded".
std::string_view ForwardedHeaderName(ForwardedHeader header);

struct ClientIpOptions {
  // Peers whose forwarding header is believed. Default: none (forwarding headers are ignored).
  std::vector<Cidr> trusted_proxies{};
  // The header the trusted proxies maintain. Default: X-Forwarded-For.
  ForwardedHeader header = ForwardedHeader::kXForwardedFor;
  // The longest walk through the header, in hops; a longer one falls back to the peer address.
  // Default: 32.
  size_t max_hops = 32;

  bool Trusted(const IpAddress& ip) const;
};

// ResolveClientIp()
//
// Returns the client address of a request from `peer_address` (its TCP peer) and its `headers`, as
// described at the top of this file; nullopt only when the peer address itself is unparsable.
std::optional<IpAddress> ResolveClientIp(const ClientIpOptions& options,
                                         std::string_view peer_address,
                                         std::span<const HeaderField> headers);

// ParseForwardedHop()
//
// Returns the address of one hop as `header` writes it ("192.0.2.7", "192.0.2.7:80",
// "[2001:db8::1]:443", "2001:db8::1" for X-Forwarded-For; `for=192.0.2.7;proto=https` or
// `for="[2001:db8::1]:443"` for a Forwarded element), or nullopt when it has none or it is
// unparsable. Exposed for tests.
std::optional<IpAddress> ParseForwardedHop(ForwardedHeader header, std::string_view hop);

}  // namespace sluice::http

#endif  // SLUICE_HTTP_CLIENT_IP_H_
