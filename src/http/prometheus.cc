#include "sluice/http/prometheus.h"

#include <array>
#include <cstdint>

#include "absl/strings/str_cat.h"

#include "src/util/strings.h"

namespace sluice::http {
namespace {

using ::sluice::internal::AbslView;

struct Counter {
  std::string_view name;
  std::string_view help;
  uint64_t MiddlewareStats::*field;
};

// In MiddlewareStats' order; the help texts are docs/middleware.md's "Counters" table.
constexpr std::array<Counter, 7> kCounters = {{
    {"enabled", "Requests at least one rate limit applied to.", &MiddlewareStats::enabled},
    {"enforced", "Requests the rate limiter rejected (429 or 503); never in dry run.",
     &MiddlewareStats::enforced},
    {"over_limit", "Requests over a rate limit, rejected or (dry run) not.",
     &MiddlewareStats::over_limit},
    {"ok", "Requests within all their rate limits.", &MiddlewareStats::ok},
    {"error", "Requests the store could not decide (a store error or a failure policy answer).",
     &MiddlewareStats::error},
    {"local_fallback", "Requests decided by the middleware's local limiter during a store error.",
     &MiddlewareStats::local_fallback},
    {"ambiguous_path", "Requests refused with 400 for a path a router could read two ways.",
     &MiddlewareStats::ambiguous_path},
}};

bool IsNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

}  // namespace

std::string PrometheusText(const MiddlewareStats& stats, std::string_view prefix) {
  std::string safe_prefix(prefix);
  for (size_t i = 0; i < safe_prefix.size(); ++i) {
    if (!IsNameChar(safe_prefix[i], i == 0)) safe_prefix[i] = '_';
  }
  std::string out;
  out.reserve(kCounters.size() * 160);
  for (const Counter& c : kCounters) {
    const std::string name = absl::StrCat(safe_prefix, AbslView(c.name), "_total");
    absl::StrAppend(&out, "# HELP ", name, " ", AbslView(c.help), "\n# TYPE ", name, " counter\n",
                    name, " ", stats.*c.field, "\n");
  }
  return out;
}

}  // namespace sluice::http
