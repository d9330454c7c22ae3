// IpAddress and Cidr: parsing and formatting through inet_pton/inet_ntop, which are strict (no
// leading zeros, no octal, no zone index) and allocate nothing.
#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include <arpa/inet.h>

#include "sluice/http/client_ip.h"

#include "src/util/strings.h"

namespace sluice::http {
namespace {

// "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255" is the longest address text.
constexpr size_t kMaxAddressText = 45;

bool IsV4Mapped(const std::array<uint8_t, 16>& b) {
  for (int i = 0; i < 10; ++i) {
    if (b[i] != 0) return false;
  }
  return b[10] == 0xff && b[11] == 0xff;
}

}  // namespace

std::optional<IpAddress> ParseIpAddress(std::string_view text) {
  if (text.empty() || text.size() > kMaxAddressText) return std::nullopt;
  // Not zero-filled: only the copied text and its NUL are read.
  std::array<char, kMaxAddressText + 1> buffer;
  std::memcpy(buffer.data(), text.data(), text.size());
  buffer[text.size()] = '\0';
  IpAddress ip;
  if (text.find(':') == std::string_view::npos) {
    if (inet_pton(AF_INET, buffer.data(), ip.bytes.data()) != 1) return std::nullopt;
    return ip;
  }
  if (inet_pton(AF_INET6, buffer.data(), ip.bytes.data()) != 1) return std::nullopt;
  if (IsV4Mapped(ip.bytes)) {
    std::array<uint8_t, 16> v4{};
    std::copy_n(ip.bytes.begin() + 12, 4, v4.begin());
    ip.bytes = v4;
    return ip;
  }
  ip.v6 = true;
  return ip;
}

std::string IpAddress::ToString() const {
  if (!v6) {
    // By hand: inet_ntop formats IPv4 with snprintf, which shows in request-path profiles.
    std::string text;
    text.reserve(15);
    for (int i = 0; i < 4; ++i) {
      if (i > 0) text.push_back('.');
      const unsigned value = bytes[i];
      if (value >= 100) text.push_back(static_cast<char>('0' + value / 100));
      if (value >= 10) text.push_back(static_cast<char>('0' + value / 10 % 10));
      text.push_back(static_cast<char>('0' + value % 10));
    }
    return text;
  }
  std::array<char, INET6_ADDRSTRLEN> buffer{};
  if (inet_ntop(AF_INET6, bytes.data(), buffer.data(), buffer.size()) == nullptr) {
    return "?";  // Unreachable: the buffer always fits.
  }
  return buffer.data();
}

IpAddress IpAddress::Masked(int bits) const {
  IpAddress out = *this;
  const int length = BitLength();
  bits = std::clamp(bits, 0, length);
  for (int byte = 0; byte < 16; ++byte) {
    const int first_bit = byte * 8;
    if (first_bit >= bits) {
      out.bytes[byte] = 0;
    } else if (first_bit + 8 > bits) {
      out.bytes[byte] &= static_cast<uint8_t>(0xff << (8 - (bits - first_bit)));
    }
  }
  return out;
}

bool Cidr::Contains(const IpAddress& ip) const {
  return ip.v6 == network.v6 && ip.Masked(prefix_bits) == network;
}

absl::StatusOr<Cidr> ParseCidr(std::string_view text) {
  const size_t slash = text.find('/');
  std::optional<IpAddress> ip = ParseIpAddress(text.substr(0, slash));
  if (!ip) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", internal::AbslView(text), "' is not an IP address or CIDR"));
  }
  int bits = ip->BitLength();
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos ||
        !absl::SimpleAtoi(internal::AbslView(digits), &bits) || bits > ip->BitLength()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", internal::AbslView(text), "': prefix length must be 0..", ip->BitLength()));
    }
  }
  if (ip->Masked(bits) != *ip) {
    return absl::InvalidArgumentError(absl::StrCat("'", internal::AbslView(text),
                                                   "' has host bits set; did you mean ",
                                                   ip->Masked(bits).ToString(), "/", bits, "?"));
  }
  return Cidr{.network = *ip, .prefix_bits = bits};
}

}  // namespace sluice::http
