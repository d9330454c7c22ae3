#include "src/http/rate_limit_headers.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sluice::http::internal {

std::string SfString(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c < 0x20 || c > 0x7e) {
      out.push_back('?');
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string PolicyItem(std::string_view name, int64_t quota, int64_t window_seconds) {
  return absl::StrCat(SfString(name), ";q=", quota, ";w=", window_seconds);
}

std::string FormatRateLimitPolicy(std::span<const PolicyState> states) {
  std::string out;
  for (const PolicyState& s : states) {
    if (!out.empty()) out += ", ";
    out += PolicyItem(s.name, s.quota, s.window_seconds);
  }
  return out;
}

std::string FormatRateLimit(std::span<const PolicyState> states) {
  // Written on every response: sized once, filled through a pointer, integers via std::to_chars.
  size_t bound = 0;
  for (const PolicyState& s : states) {
    bound += (s.quoted_name.empty() ? 2 * s.name.size() + 2 : s.quoted_name.size()) + 2 + 8 + 40;
  }
  std::string out(bound, '\0');
  char* p = out.data();
  char* const end = p + bound;
  auto put = [&p](std::string_view text) {
    std::memcpy(p, text.data(), text.size());
    p += text.size();
  };
  for (const PolicyState& s : states) {
    if (p != out.data()) put(", ");
    if (!s.quoted_name.empty()) {
      put(s.quoted_name);
    } else {
      put(SfString(s.name));
    }
    put(";r=");
    p = std::to_chars(p, end, std::max<int64_t>(0, s.remaining)).ptr;
    put(";t=");
    p = std::to_chars(p, end, std::max<int64_t>(0, s.reset_seconds)).ptr;
  }
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

size_t MostConstrained(std::span<const PolicyState> states) {
  size_t best = 0;
  for (size_t i = 1; i < states.size(); ++i) {
    const PolicyState& a = states[i];
    const PolicyState& b = states[best];
    if (a.remaining < b.remaining ||
        (a.remaining == b.remaining && a.reset_seconds > b.reset_seconds)) {
      best = i;
    }
  }
  return best;
}

}  // namespace sluice::http::internal
