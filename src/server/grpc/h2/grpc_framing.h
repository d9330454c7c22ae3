// The gRPC-over-HTTP/2 details the nghttp2 engine (grpc_h2_server.h) needs, written from the
// protocol description (gRPC's PROTOCOL-HTTP2.md): length-prefixed messages, grpc-timeout,
// grpc-message's percent-encoding, and the two health messages (grpc.health.v1), which are small
// enough to encode by hand.
#ifndef SLUICE_SERVER_GRPC_H2_GRPC_FRAMING_H_
#define SLUICE_SERVER_GRPC_H2_GRPC_FRAMING_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace sluice::server::h2 {

// Bytes before each message: a compressed flag and a big-endian length.
inline constexpr size_t kMessagePrefixBytes = 5;

// The length a message prefix declares; nullopt while fewer than 5 bytes are there.
std::optional<uint32_t> DeclaredMessageLength(std::string_view body);

// UnaryMessage()
//
// The one message of a unary request body. INTERNAL when the body holds no message, a cut one or
// more than one; UNIMPLEMENTED when it is compressed (this engine offers only "identity");
// RESOURCE_EXHAUSTED when it declares more than `max_bytes`.
absl::StatusOr<std::string_view> UnaryMessage(std::string_view body, size_t max_bytes);

// `message` with its prefix (uncompressed).
std::string FramedMessage(std::string_view message);

// ParseGrpcTimeout()
//
// "1-8 digits, then one of H M S m u n"; nullopt for anything else (then the call has no
// deadline, as gRPC C++ treats a malformed one).
std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value);

// grpc-message's encoding: bytes outside printable ASCII, and '%', become "%XX".
std::string PercentEncodeGrpcMessage(std::string_view message);

// HealthCheckRequest's `service` (field 1); InvalidArgument when the bytes are not the message.
absl::StatusOr<std::string> HealthCheckService(std::string_view request);

// HealthCheckResponse's status values.
enum class ServingStatus : uint8_t { kServing = 1, kNotServing = 2 };
std::string HealthCheckResponse(ServingStatus status);

}  // namespace sluice::server::h2

#endif  // SLUICE_SERVER_GRPC_H2_GRPC_FRAMING_H_
