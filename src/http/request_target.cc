#include "src/http/request_target.h"

#include <cstddef>

namespace sluice::http::internal {
namespace {

bool IsAlpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The length of a URI scheme followed by "://" at the start of `target` (RFC 3986 §3.1:
// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )), or 0.
size_t SchemeAndSlashesLength(std::string_view target) {
  if (target.empty() || !IsAlpha(target[0])) return 0;
  size_t i = 1;
  while (i < target.size() && (IsAlpha(target[i]) || IsDigit(target[i]) || target[i] == '+' ||
                               target[i] == '-' || target[i] == '.')) {
    ++i;
  }
  return target.substr(i).starts_with("://") ? i + 3 : 0;
}

bool IsUnreserved(int c) {
  return IsAlpha(static_cast<char>(c)) || IsDigit(static_cast<char>(c)) || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

}  // namespace

std::string_view RoutingPath(std::string_view target) {
  if (const size_t scheme = SchemeAndSlashesLength(target); scheme > 0) {
    // Absolute form: skip the authority, which ends at the first '/', '?' or '#'.
    const size_t path = target.find_first_of("/?#", scheme);
    if (path == std::string_view::npos || target[path] != '/') return "/";
    target = target.substr(path);
  }
  return target.substr(0, target.find_first_of("?#"));
}

std::string_view AmbiguousPath(std::string_view path) {
  if (path.find('\\') != std::string_view::npos) return "a backslash in the path";
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%') continue;
    const int high = i + 2 < path.size() ? HexValue(path[i + 1]) : -1;
    const int low = high >= 0 ? HexValue(path[i + 2]) : -1;
    if (low < 0) continue;  // Not an escape: compared as sent by every router.
    const int c = high * 16 + low;
    if (c == '/' || c == '\\') return "an encoded '/' or '\\' in the path";
    if (c == 0) return "an encoded NUL in the path";
    if (IsUnreserved(c)) return "a percent-encoded unreserved character in the path";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (const std::string_view segment = path.substr(start, end - start);
        segment == "." || segment == "..")
      return "a dot segment in the path";
    start = end + 1;
  }
  return {};
}

}  // namespace sluice::http::internal
