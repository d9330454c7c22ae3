// The /json response writer (see rls_json.h).
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "envoy/type/v3/ratelimit_unit.pb.h"
#include <google/protobuf/util/json_util.h>

#include "src/server/admin/rls_json.h"
#include "src/util/json_string.h"
#include "src/util/strings.h"

namespace sluice::internal {
namespace {

using server::RateLimitResponse;

// Writing: what protobuf 3.21's ProtoStreamObjectSource + JsonObjectWriter write, byte for byte:
// fields in field-number order (the order of the binary form it reads), lowerCamelCase names,
// proto3 defaults left out, sub-messages whenever present.

template <typename Int>
void AppendInt(Int v, std::string* out) {
  std::array<char, 24> buf{};
  const auto result = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out->append(buf.data(), result.ptr);
}

// Writes the comma-separated members of one JSON object.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string* out) : out_(out) { out_->push_back('{'); }
  ObjectWriter(const ObjectWriter&) = delete;
  ObjectWriter& operator=(const ObjectWriter&) = delete;
  ~ObjectWriter() { out_->push_back('}'); }

  // Starts member `name` (a literal that needs no escaping); the caller appends the value.
  std::string* Key(std::string_view name) {
    if (!first_) out_->push_back(',');
    first_ = false;
    out_->push_back('"');
    out_->append(name);
    out_->append("\":");
    return out_;
  }

 private:
  std::string* out_;
  bool first_ = true;
};

// Bytes: standard base64 with padding, as protobuf's Base64Escape.
void AppendBase64(std::string_view bytes, std::string* out) {
  out->push_back('"');
  out->append(absl::Base64Escape(AbslView(bytes)));
  out->push_back('"');
}

// An enum by name, or by number when the value has none (proto3 enums are open).
void AppendEnum(const std::string& name, int value, std::string* out) {
  if (name.empty()) {
    AppendInt(value, out);
  } else {
    out->push_back('"');
    out->append(name);
    out->push_back('"');
  }
}

// google.protobuf.Duration as protobuf writes it: "-1.500s", with 0, 3, 6 or 9 fractional
// digits. Returns false for values MessageToJsonString refuses or writes oddly.
bool AppendDuration(const google::protobuf::Duration& d, std::string* out) {
  constexpr int64_t kMaxSeconds = 315'576'000'000;
  constexpr int32_t kNanosPerSecond = 1'000'000'000;
  int64_t seconds = d.seconds();
  int32_t nanos = d.nanos();
  if (seconds > kMaxSeconds || seconds < -kMaxSeconds || nanos >= kNanosPerSecond ||
      nanos <= -kNanosPerSecond || (seconds < 0 && nanos > 0) || (seconds > 0 && nanos < 0)) {
    return false;
  }
  out->push_back('"');
  if (seconds < 0 || nanos < 0) out->push_back('-');
  seconds = seconds < 0 ? -seconds : seconds;
  nanos = nanos < 0 ? -nanos : nanos;
  AppendInt(seconds, out);
  if (nanos != 0) {
    std::array<char, 10> frac{'.', '0', '0', '0', '0', '0', '0', '0', '0', '0'};
    for (int k = 9, v = nanos; k >= 1; --k, v /= 10) frac[k] = static_cast<char>('0' + v % 10);
    const size_t digits = nanos % 1000 != 0 ? 9 : nanos % 1'000'000 != 0 ? 6 : 3;
    out->append(frac.data(), digits + 1);
  }
  out->append("s\"");
  return true;
}

bool AppendHeaders(
    const google::protobuf::RepeatedPtrField<envoy::config::core::v3::HeaderValue>& headers,
    std::string* out) {
  out->push_back('[');
  bool first = true;
  for (const auto& h : headers) {
    if (!first) out->push_back(',');
    first = false;
    ObjectWriter object(out);
    if (!h.key().empty() && !AppendJsonString(h.key(), object.Key("key"))) return false;
    if (!h.value().empty() && !AppendJsonString(h.value(), object.Key("value"))) return false;
    if (!h.raw_value().empty()) AppendBase64(h.raw_value(), object.Key("rawValue"));
  }
  out->push_back(']');
  return true;
}

bool AppendStatus(const RateLimitResponse::DescriptorStatus& s, std::string* out) {
  ObjectWriter object(out);
  if (s.code() != 0) {
    AppendEnum(RateLimitResponse::Code_Name(s.code()), s.code(), object.Key("code"));
  }
  if (s.has_current_limit()) {
    const RateLimitResponse::RateLimit& limit = s.current_limit();
    ObjectWriter current(object.Key("currentLimit"));
    if (limit.requests_per_unit() != 0) {
      AppendInt(limit.requests_per_unit(), current.Key("requestsPerUnit"));
    }
    if (limit.unit() != 0) {
      AppendEnum(RateLimitResponse::RateLimit::Unit_Name(limit.unit()), limit.unit(),
                 current.Key("unit"));
    }
    if (!limit.name().empty() && !AppendJsonString(limit.name(), current.Key("name"))) return false;
  }
  if (s.limit_remaining() != 0) AppendInt(s.limit_remaining(), object.Key("limitRemaining"));
  if (s.has_duration_until_reset() &&
      !AppendDuration(s.duration_until_reset(), object.Key("durationUntilReset"))) {
    return false;
  }
  return true;
}

}  // namespace

bool RateLimitResponseToJsonFast(const server::RateLimitResponse& r, std::string* out) {
  ObjectWriter object(out);
  if (r.overall_code() != 0) {
    AppendEnum(RateLimitResponse::Code_Name(r.overall_code()), r.overall_code(),
               object.Key("overallCode"));
  }
  if (!r.statuses().empty()) {
    std::string* list = object.Key("statuses");
    list->push_back('[');
    bool first = true;
    for (const auto& status : r.statuses()) {
      if (!first) list->push_back(',');
      first = false;
      if (!AppendStatus(status, list)) return false;
    }
    list->push_back(']');
  }
  if (!r.response_headers_to_add().empty() &&
      !AppendHeaders(r.response_headers_to_add(), object.Key("responseHeadersToAdd"))) {
    return false;
  }
  if (!r.request_headers_to_add().empty() &&
      !AppendHeaders(r.request_headers_to_add(), object.Key("requestHeadersToAdd"))) {
    return false;
  }
  if (!r.raw_body().empty()) AppendBase64(r.raw_body(), object.Key("rawBody"));
  if (r.has_dynamic_metadata()) {
    // A Struct has its own JSON mapping (numbers as doubles, nested lists): protobuf writes it,
    // alone. (Printing the whole response through protobuf failed a size CHECK in builds without
    // NDEBUG, the sanitizer builds, once the response held a Struct.)
    std::string metadata;
    if (!google::protobuf::util::MessageToJsonString(r.dynamic_metadata(), &metadata).ok()) {
      return false;
    }
    object.Key("dynamicMetadata")->append(metadata);
  }
  return true;
}

}  // namespace sluice::internal

namespace sluice::server {

std::string RateLimitResponseToJson(const RateLimitResponse& r) {
  std::string out;
  out.reserve(128 + 160 * static_cast<size_t>(r.statuses_size()));
  if (internal::RateLimitResponseToJsonFast(r, &out)) return out;
  out.clear();
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = false;
  // The status is ignored as HttpApi always did: an invalid duration is the service's bug, and the
  // client still gets a body.
  (void)google::protobuf::util::MessageToJsonString(r, &out, print);
  return out;
}

}  // namespace sluice::server
