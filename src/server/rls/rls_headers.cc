#include "src/server/rls/rls_headers.h"

#include "absl/strings/str_cat.h"

#include "src/core/wait_seconds.h"

namespace sluice::server {

int64_t StatusResetSeconds(std::chrono::microseconds reset_after) {
  return internal::CeilSeconds(reset_after);
}

int64_t RetryAfterSeconds(std::chrono::microseconds retry_after, const Limit& limit) {
  return internal::RetryAfterSeconds(
      retry_after,
      internal::PolicyWindow{.window_seconds = internal::CeilSeconds(limit.period),
                             .horizon_seconds = internal::PolicyHorizonSeconds(limit)});
}

std::vector<RlsHeader> ResponseHeaders(const RlsHeaderNames& names, const RlsStatus& closest,
                                       int64_t retry_after_seconds) {
  std::vector<RlsHeader> headers;
  headers.reserve(4);
  headers.push_back({names.limit, absl::StrCat(closest.current_limit->requests_per_unit)});
  headers.push_back({names.remaining, absl::StrCat(closest.limit_remaining)});
  headers.push_back({names.reset, absl::StrCat(closest.reset_seconds)});
  if (retry_after_seconds > 0) {
    headers.push_back({"Retry-After", absl::StrCat(retry_after_seconds)});
  }
  return headers;
}

}  // namespace sluice::server
