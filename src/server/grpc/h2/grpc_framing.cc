#include "src/server/grpc/h2/grpc_framing.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sluice::server::h2 {

std::optional<uint32_t> DeclaredMessageLength(std::string_view body) {
  if (body.size() < kMessagePrefixBytes) return std::nullopt;
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(body[i])); };
  return (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
}

absl::StatusOr<std::string_view> UnaryMessage(std::string_view body, size_t max_bytes) {
  const std::optional<uint32_t> length = DeclaredMessageLength(body);
  if (!length.has_value()) {
    return absl::InternalError(body.empty() ? "the request has no message"
                                            : "the request ends inside a message prefix");
  }
  if (body[0] != 0) {
    // Only "identity" is offered (grpc-accept-encoding), so a compressed message is a client
    // sending what was not offered: UNIMPLEMENTED, as the protocol asks.
    return absl::UnimplementedError("compressed messages are not supported");
  }
  if (*length > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("request message larger than max (", *length, " vs. ", max_bytes, ")"));
  }
  const size_t end = kMessagePrefixBytes + *length;
  if (body.size() < end) return absl::InternalError("the request ends inside its message");
  if (body.size() > end) {
    return absl::InternalError("more than one request message in a unary call");
  }
  return body.substr(kMessagePrefixBytes, *length);
}

std::string FramedMessage(std::string_view message) {
  const auto n = static_cast<uint32_t>(message.size());
  std::string out;
  out.reserve(kMessagePrefixBytes + message.size());
  out.push_back('\0');
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(message);
  return out;
}

std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  switch (value.back()) {
    case 'H':
      return duration_cast<nanoseconds>(std::chrono::hours(n));
    case 'M':
      return duration_cast<nanoseconds>(std::chrono::minutes(n));
    case 'S':
      return duration_cast<nanoseconds>(std::chrono::seconds(n));
    case 'm':
      return duration_cast<nanoseconds>(std::chrono::milliseconds(n));
    case 'u':
      return duration_cast<nanoseconds>(std::chrono::microseconds(n));
    case 'n':
      return nanoseconds(n);
    default:
      return std::nullopt;
  }
}

std::string PercentEncodeGrpcMessage(std::string_view message) {
  static constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(message.size());
  for (char c : message) {
    const auto b = static_cast<uint8_t>(c);
    if (b >= 0x20 && b <= 0x7e && b != '%') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xf]);
    }
  }
  return out;
}

namespace {

// A protobuf varint at `pos`; nullopt when cut or longer than 10 bytes.
std::optional<uint64_t> Varint(std::string_view in, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && pos < in.size(); shift += 7) {
    const auto b = static_cast<uint8_t>(in[pos++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::string> HealthCheckService(std::string_view request) {
  std::string service;
  size_t pos = 0;
  const absl::Status bad = absl::InvalidArgumentError("request is not a HealthCheckRequest");
  while (pos < request.size()) {
    const std::optional<uint64_t> key = Varint(request, pos);
    if (!key.has_value() || (*key >> 3) == 0) return bad;
    switch (*key & 7) {
      case 0:  // varint
        if (!Varint(request, pos).has_value()) return bad;
        break;
      case 1:  // 64-bit
        if (request.size() - pos < 8) return bad;
        pos += 8;
        break;
      case 2: {  // length-delimited
        const std::optional<uint64_t> n = Varint(request, pos);
        if (!n.has_value() || *n > request.size() - pos) return bad;
        if ((*key >> 3) == 1) service.assign(request.substr(pos, *n));
        pos += *n;
        break;
      }
      case 5:  // 32-bit
        if (request.size() - pos < 4) return bad;
        pos += 4;
        break;
      default:
        return bad;
    }
  }
  return service;
}

std::string HealthCheckResponse(ServingStatus status) {
  return {'\x08', static_cast<char>(status)};
}

}  // namespace sluice::server::h2
