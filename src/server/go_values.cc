#include "src/server/go_values.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "src/util/strings.h"

namespace sluice::server {
namespace {

absl::Status BadDuration(std::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat("invalid duration '", internal::AbslView(text),
                                                 "' (expected e.g. 300ms, 10s, 1h30m)"));
}

// Nanoseconds per unit, or 0 for an unknown unit.
int64_t UnitNanos(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1'000;
  if (unit == "ms") return 1'000'000;
  if (unit == "s") return 1'000'000'000;
  if (unit == "m") return 60'000'000'000;
  if (unit == "h") return 3'600'000'000'000;
  return 0;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

absl::StatusOr<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return BadDuration(text);
  // Long double keeps every nanosecond of the longest duration Go accepts (~292 years).
  long double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    while (i < s.size() && IsDigit(s[i])) ++i;
    const std::string_view whole = s.substr(0, i);
    std::string_view fraction;
    if (i < s.size() && s[i] == '.') {
      const size_t start = ++i;
      while (i < s.size() && IsDigit(s[i])) ++i;
      fraction = s.substr(start, i - start);
    }
    if (whole.empty() && fraction.empty()) return BadDuration(text);
    const size_t unit_start = i;
    while (i < s.size() && !IsDigit(s[i]) && s[i] != '.') ++i;
    const int64_t unit = UnitNanos(s.substr(unit_start, i - unit_start));
    if (unit == 0) return BadDuration(text);
    long double value = 0;
    for (char c : whole) value = value * 10 + (c - '0');
    long double scale = 1;
    for (char c : fraction) {
      scale /= 10;
      value += (c - '0') * scale;
    }
    total += value * static_cast<long double>(unit);
    if (total > static_cast<long double>(INT64_MAX)) return BadDuration(text);
    s.remove_prefix(i);
  }
  const auto nanos = static_cast<int64_t>(std::llround(total));
  return std::chrono::nanoseconds(negative ? -nanos : nanos);
}

absl::StatusOr<bool> ParseGoBool(std::string_view text) {
  for (std::string_view t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == t) return true;
  }
  for (std::string_view f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == f) return false;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("invalid boolean '", internal::AbslView(text), "' (expected true or false)"));
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseGoStringMap(
    std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  if (text.empty()) return out;
  for (absl::string_view item : absl::StrSplit(internal::AbslView(text), ',')) {
    const size_t colon = item.find(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid map item '", item, "' (expected key:value[,key:value...])"));
    }
    out.emplace_back(std::string(item.substr(0, colon)), std::string(item.substr(colon + 1)));
  }
  return out;
}

}  // namespace sluice::server
