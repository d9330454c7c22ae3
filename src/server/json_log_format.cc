#include "src/server/json_log_format.h"

#include <chrono>
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

void AppendEscaped(spdlog::memory_buf_t& dest, std::string_view s) {
  for (char c : s) {
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
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          Append(dest, buf);
        } else {
          dest.push_back(c);
        }
    }
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
  char stamp[64];
  std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(nanos.count()));
  Append(dest, "{\"@timestamp\":\"");
  Append(dest, stamp);
  Append(dest, "\",\"level\":\"");
  Append(dest, LogrusLevel(msg.level));
  Append(dest, "\",\"@message\":\"");
  AppendEscaped(dest, std::string_view(msg.payload.data(), msg.payload.size()));
  Append(dest, "\"}\n");
}

}  // namespace sluice::server
