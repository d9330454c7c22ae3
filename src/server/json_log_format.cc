#include "src/server/json_log_format.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <string_view>

#include "spdlog/details/log_msg.h"

namespace sluice::server {
namespace {

std::string_view LogrusLevel(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warning";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "fatal";
    default:
      return "info";
  }
}

void Append(spdlog::memory_buf_t& dest, std::string_view s) {
  dest.append(s.data(), s.data() + s.size());
}

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF), or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return n;
}

// Appends `s` as the inside of a JSON string. Log messages may carry request bytes (descriptor
// values) that are not UTF-8; each byte of an invalid sequence becomes U+FFFD, so that every line
// stays a valid JSON text (RFC 8259 requires UTF-8) for strict parsers and log shippers.
void AppendEscaped(spdlog::memory_buf_t& dest, std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      const size_t n = Utf8SequenceLength(s.substr(i));
      if (n == 0) {
        Append(dest, "\\ufffd");
        ++i;
      } else {
        Append(dest, s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        Append(dest, "\\\"");
        break;
      case '\\':
        Append(dest, "\\\\");
        break;
      case '\n':
        Append(dest, "\\n");
        break;
      case '\r':
        Append(dest, "\\r");
        break;
      case '\t':
        Append(dest, "\\t");
        break;
      default:
        if (u < 0x20) {
          std::array<char, 8> buf{};
          const int n = std::snprintf(buf.data(), buf.size(), "\\u%04x", static_cast<unsigned>(u));
          Append(dest, std::string_view(buf.data(), static_cast<size_t>(n)));
        } else {
          dest.push_back(c);
        }
    }
    ++i;
  }
}

}  // namespace

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const auto since_epoch = msg.time.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - secs);
  const std::time_t t = secs.count();
  std::tm utc{};
  gmtime_r(&t, &utc);
  std::array<char, 64> stamp{};
  int len = std::snprintf(stamp.data(), stamp.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%09lld",
                          utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                          utc.tm_sec, static_cast<long long>(nanos.count()));
  len = std::clamp(len, 0, static_cast<int>(stamp.size()) - 1);  // Never fails; never trusted.
  // Go's RFC3339Nano, which the reference's logger uses: trailing zeros of the fraction are
  // dropped, and the '.' with them when nothing is left.
  while (len > 0 && stamp[len - 1] == '0') --len;
  if (len > 0 && stamp[len - 1] == '.') --len;
  Append(dest, R"({"@timestamp":")");
  Append(dest, std::string_view(stamp.data(), static_cast<size_t>(len)));
  Append(dest, R"(Z","level":")");
  Append(dest, LogrusLevel(msg.level));
  Append(dest, R"(","@message":")");
  AppendEscaped(dest, std::string_view(msg.payload.data(), msg.payload.size()));
  Append(dest, "\"}\n");
}

}  // namespace sluice::server
