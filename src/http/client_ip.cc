// Client IP resolution: a right-to-left walk through X-Forwarded-For or Forwarded (RFC 7239).
//
// Hops are split from the right and parsed one at a time, so bytes left of the first untrusted hop
// (the part a client controls) are never even parsed: no forged prefix, however long or malformed,
// can change the answer or make the walk fail.
#include "sluice/http/client_ip.h"

#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace sluice::http {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 5 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// An RFC 7239 port: digits, or an obfuscated "_token". X-Forwarded-For ports are digits only.
bool IsPort(std::string_view s, bool allow_obfuscated) {
  if (AllDigits(s)) return true;
  if (!allow_obfuscated || s.size() < 2 || s[0] != '_') return false;
  return s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
         std::string_view::npos;
}

// A node: "192.0.2.7", "192.0.2.7:80", "[2001:db8::1]", "[2001:db8::1]:443" or a bare
// "2001:db8::1" (no port possible then).
std::optional<IpAddress> ParseNode(std::string_view node, bool allow_obfuscated_port) {
  if (node.empty()) return std::nullopt;
  if (node.front() == '[') {
    const size_t close = node.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    std::optional<IpAddress> ip = ParseIpAddress(node.substr(1, close - 1));
    if (!ip) return std::nullopt;
    const std::string_view rest = node.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !IsPort(rest.substr(1), allow_obfuscated_port))) {
      return std::nullopt;
    }
    return ip;
  }
  const size_t first_colon = node.find(':');
  if (first_colon != std::string_view::npos &&
      node.find(':', first_colon + 1) == std::string_view::npos) {
    // Exactly one colon: IPv4 with a port.
    if (!IsPort(node.substr(first_colon + 1), allow_obfuscated_port)) return std::nullopt;
    std::optional<IpAddress> ip = ParseIpAddress(node.substr(0, first_colon));
    if (!ip || ip->v6) return std::nullopt;
    return ip;
  }
  return ParseIpAddress(node);
}

// Returns the unquoted value of an RFC 7239 pair value (token or quoted-string), or nullopt.
std::optional<std::string> Unquote(std::string_view value) {
  if (value.empty() || value.front() != '"') {
    if (value.find_first_of("\"\\ \t") != std::string_view::npos) return std::nullopt;
    return std::string(value);
  }
  std::string out;
  for (size_t i = 1; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '\\') {
      if (++i == value.size()) return std::nullopt;
      out.push_back(value[i]);
    } else if (c == '"') {
      if (i + 1 != value.size()) return std::nullopt;  // Text after the closing quote.
      return out;
    } else {
      out.push_back(c);
    }
  }
  return std::nullopt;  // No closing quote.
}

// Splits a Forwarded element into its ';'-separated pairs, respecting quoted strings.
bool SplitPairs(std::string_view element, absl::InlinedVector<std::string_view, 4>& pairs) {
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < element.size(); ++i) {
    const char c = element[i];
    if (quoted && c == '\\') {
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ';' && !quoted) {
      pairs.push_back(Trim(element.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (quoted) return false;
  pairs.push_back(Trim(element.substr(start)));
  return true;
}

std::optional<IpAddress> ParseForwardedElement(std::string_view element) {
  absl::InlinedVector<std::string_view, 4> pairs;
  if (!SplitPairs(element, pairs)) return std::nullopt;
  std::optional<std::string> node;
  for (std::string_view pair : pairs) {
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    if (!EqualsIgnoreAsciiCase(Trim(pair.substr(0, eq)), "for")) continue;
    if (node) return std::nullopt;  // Two `for` parameters: ambiguous.
    node = Unquote(Trim(pair.substr(eq + 1)));
    if (!node) return std::nullopt;
  }
  if (!node) return std::nullopt;  // "unknown" and "_hidden" fail in ParseNode.
  return ParseNode(*node, /*allow_obfuscated_port=*/true);
}

// The start of the element that ends at `end` in `line`: one past the previous top-level comma,
// or 0. For Forwarded, commas inside quoted strings are skipped; a quote is escaped when an odd
// number of backslashes precedes it, which reads well-formed quoted strings exactly.
size_t ElementStart(std::string_view line, size_t end, ForwardedHeader header) {
  bool quoted = false;
  for (size_t i = end; i > 0; --i) {
    const char c = line[i - 1];
    if (c == ',' && !quoted) return i;
    if (c == '"' && header == ForwardedHeader::kForwarded) {
      size_t backslashes = 0;
      while (backslashes + 1 < i && line[i - 2 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) quoted = !quoted;
    }
  }
  return 0;
}

}  // namespace

std::string_view ForwardedHeaderName(ForwardedHeader header) {
  return header == ForwardedHeader::kForwarded ? "forwarded" : "x-forwarded-for";
}

bool ClientIpOptions::Trusted(const IpAddress& ip) const {
  for (const Cidr& cidr : trusted_proxies) {
    if (cidr.Contains(ip)) return true;
  }
  return false;
}

std::optional<IpAddress> ParseForwardedHop(ForwardedHeader header, std::string_view hop) {
  hop = Trim(hop);
  if (header == ForwardedHeader::kForwarded) return ParseForwardedElement(hop);
  return ParseNode(hop, /*allow_obfuscated_port=*/false);
}

std::optional<IpAddress> ResolveClientIp(const ClientIpOptions& options,
                                         std::string_view peer_address,
                                         std::span<const HeaderField> headers) {
  std::optional<IpAddress> peer = ParseNode(Trim(peer_address), /*allow_obfuscated_port=*/false);
  if (!peer) return std::nullopt;
  if (!options.Trusted(*peer)) return peer;

  const std::string_view name = ForwardedHeaderName(options.header);
  std::optional<IpAddress> last_trusted;
  size_t hops = 0;
  // Lines are merged in order, so the walk goes from the last line to the first.
  for (size_t line_index = headers.size(); line_index > 0; --line_index) {
    const HeaderField& field = headers[line_index - 1];
    if (!EqualsIgnoreAsciiCase(field.name, name)) continue;
    const std::string_view line = field.value;
    size_t end = line.size();
    for (;;) {
      const size_t start = ElementStart(line, end, options.header);
      const std::string_view hop = Trim(line.substr(start, end - start));
      // Empty list elements are legal (RFC 9110 §5.6.1) and carry nothing; they still count
      // towards the bound so a header of commas cannot make the walk long.
      if (++hops > options.max_hops) return peer;
      if (!hop.empty()) {
        std::optional<IpAddress> ip = ParseForwardedHop(options.header, hop);
        if (!ip) return peer;
        if (!options.Trusted(*ip)) return ip;
        last_trusted = ip;
      }
      if (start == 0) break;
      end = start - 1;
    }
  }
  return last_trusted ? last_trusted : peer;
}

}  // namespace sluice::http
