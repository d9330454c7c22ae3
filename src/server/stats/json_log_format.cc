#include "src/server/stats/json_log_format.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>

#include "spdlog/details/log_msg.h"

#include "src/util/json_string.h"

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
  Append(dest, R"(","@message":)");
  // Log messages may carry request bytes (descriptor values) that are not UTF-8: each byte of an
  // invalid sequence becomes U+FFFD, so every line stays valid JSON for strict log shippers.
  std::string message;
  internal::AppendJsonString(std::string_view(msg.payload.data(), msg.payload.size()), &message,
                             internal::InvalidUtf8::kReplace);
  Append(dest, message);
  Append(dest, "}\n");
}

}  // namespace sluice::server
