// AppendJsonString(): the one JSON string writer of the tree, used by the /json answers and the
// config dump (metadata as JSON). It escapes as protobuf 3.21's JSON writer does, byte for byte,
// because /json must answer what the reference's gRPC-gateway answers; any JSON reader accepts it.
#ifndef SLUICE_UTIL_JSON_STRING_H_
#define SLUICE_UTIL_JSON_STRING_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::internal {
namespace json_string_internal {

// Returns the next code point of `s` from `*i`, advancing `*i`, or -1 if `s` is not valid UTF-8
// there (truncated, overlong, a surrogate, or above U+10FFFF).
inline int32_t NextCodePoint(std::string_view s, size_t* i) {
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
inline bool EscapedAboveLatin1(int32_t cp) {
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

inline void AppendU16Escape(uint32_t unit, std::string* out) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  const std::array<char, 6> escape = {'\\',
                                      'u',
                                      kHex[(unit >> 12) & 0xF],
                                      kHex[(unit >> 8) & 0xF],
                                      kHex[(unit >> 4) & 0xF],
                                      kHex[unit & 0xF]};
  out->append(escape.data(), escape.size());
}

}  // namespace json_string_internal

// What AppendJsonString() does with bytes that are not UTF-8 (JSON text must be UTF-8).
enum class InvalidUtf8 {
  kFail,     // Stop and return false: the caller decides (protobuf silently drops such bytes).
  kReplace,  // Write U+FFFD for each byte of an invalid sequence, as log shippers expect.
};

// AppendJsonString()
//
// Appends `s` as a quoted JSON string, escaped exactly as protobuf 3.21 escapes strings in JSON
// (so /json answers match the gRPC-gateway bytes). Returns false, having appended a part, when `s`
// is not valid UTF-8 and `invalid` is kFail; always true with kReplace.
inline bool AppendJsonString(std::string_view s, std::string* out,
                             InvalidUtf8 invalid = InvalidUtf8::kFail) {
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
    const int32_t cp = json_string_internal::NextCodePoint(s, &i);
    if (cp < 0) {
      if (invalid == InvalidUtf8::kFail) return false;
      out->append("\\ufffd");
      i = start + 1;
      continue;
    }
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
          json_string_internal::AppendU16Escape(static_cast<uint32_t>(cp), out);
        } else if (json_string_internal::EscapedAboveLatin1(cp)) {
          if (cp < 0x10000) {
            json_string_internal::AppendU16Escape(static_cast<uint32_t>(cp), out);
          } else {
            const auto v = static_cast<uint32_t>(cp - 0x10000);
            json_string_internal::AppendU16Escape(0xD800 + (v >> 10), out);
            json_string_internal::AppendU16Escape(0xDC00 + (v & 0x3FF), out);
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

}  // namespace sluice::internal

#endif  // SLUICE_UTIL_JSON_STRING_H_
