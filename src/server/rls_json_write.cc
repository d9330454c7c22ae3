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

#include "src/server/rls_json.h"
#include "src/util/strings.h"

namespace sluice::internal {
namespace {

using server::RateLimitResponse;

// Writing: what protobuf 3.21's ProtoStreamObjectSource + JsonObjectWriter write, byte for byte:
// fields in field-number order (the order of the binary form it reads), lowerCamelCase names,
// proto3 defaults left out, sub-messages whenever present.

// Returns the next code point of `s` from `*i`, advancing `*i`, or -1 if `s` is not valid UTF-8
// there (truncated, overlong, a surrogate, or above U+10FFFF).
int32_t NextCodePoint(std::string_view s, size_t* i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(*i);
  int n = 0;
  int32_t cp = 0;
  int32_t min = 0;
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 1, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 2, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 3, cp = b0 & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (s.size() - *i <= static_cast<size_t>(n)) return -1;
  for (int k = 1; k <= n; ++k) {
    const uint8_t b = byte(*i + k);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *i += n + 1;
  return cp;
}

// Whether protobuf's JsonEscaping writes code point `cp` (>= 0xA0) as \u escapes: format and
// invisible characters that some JavaScript treats specially.
bool EscapedAboveLatin1(int32_t cp) {
  switch (cp) {
    case 0x00AD:
    case 0x06DD:
    case 0x070F:
    case 0x17B4:
    case 0x17B5:
    case 0xFEFF:
    case 0xFFF9:
    case 0xFFFA:
    case 0xFFFB:
    case 0xE0001:
      return true;
    default:
      return (cp >= 0x0600 && cp <= 0x0603) || (cp >= 0x200B && cp <= 0x200F) ||
             (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2064) ||
             (cp >= 0x206A && cp <= 0x206F) || (cp >= 0x1D173 && cp <= 0x1D17A) ||
             (cp >= 0xE0020 && cp <= 0xE007F);
  }
}

void AppendU16Escape(uint32_t unit, std::string* out) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  const std::array<char, 6> escape = {'\\',
                                      'u',
                                      kHex[(unit >> 12) & 0xF],
                                      kHex[(unit >> 8) & 0xF],
                                      kHex[(unit >> 4) & 0xF],
                                      kHex[unit & 0xF]};
  out->append(escape.data(), escape.size());
}

// Appends `s` as a JSON string escaped as protobuf escapes it. Returns false, having appended a
// part, when `s` is not valid UTF-8: protobuf silently drops such bytes, and we leave that to it.
bool AppendString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    // The common case: a run of printable ASCII that needs no escape.
    size_t run = i;
    while (run < s.size()) {
      const auto c = static_cast<uint8_t>(s[run]);
      if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || c == '<' || c == '>') break;
      ++run;
    }
    out->append(s.data() + i, run - i);
    i = run;
    if (i == s.size()) break;
    const size_t start = i;
    const int32_t cp = NextCodePoint(s, &i);
    if (cp < 0) return false;
    switch (cp) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        if (cp < 0xA0) {
          // Other C0 controls, '<', '>', DEL and the C1 controls.
          AppendU16Escape(static_cast<uint32_t>(cp), out);
        } else if (EscapedAboveLatin1(cp)) {
          if (cp < 0x10000) {
            AppendU16Escape(static_cast<uint32_t>(cp), out);
          } else {
            const auto v = static_cast<uint32_t>(cp - 0x10000);
            AppendU16Escape(0xD800 + (v >> 10), out);
            AppendU16Escape(0xDC00 + (v & 0x3FF), out);
          }
        } else {
          out->append(s.data() + start, i - start);
        }
        break;
    }
  }
  out->push_back('"');
  return true;
}

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
    if (!h.key().empty() && !AppendString(h.key(), object.Key("key"))) return false;
    if (!h.value().empty() && !AppendString(h.value(), object.Key("value"))) return false;
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
    if (!limit.name().empty() && !AppendString(limit.name(), current.Key("name"))) return false;
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
  // A Struct has its own JSON mapping (numbers as doubles, nested lists); sluiced never sets
  // dynamic_metadata, so protobuf writes it rather than a second implementation of that mapping.
  if (r.has_dynamic_metadata()) return false;
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
