// Problem details (RFC 9457) for rejections, with the problem types and the `violated-policies`
// member of draft-ietf-httpapi-ratelimit-headers.
//
// Thread safety: pure functions.
#ifndef SLUICE_HTTP_PROBLEM_JSON_H_
#define SLUICE_HTTP_PROBLEM_JSON_H_

#include <span>
#include <string>
#include <string_view>

namespace sluice::http::internal {

inline constexpr std::string_view kProblemContentType = "application/problem+json";
inline constexpr std::string_view kQuotaExceededType =
    "https://iana.org/assignments/http-problem-types#quota-exceeded";
inline constexpr std::string_view kReducedCapacityType =
    "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

// ProblemJson()
//
// Returns the JSON object {"type", "title", "status", "detail", "violated-policies"}, with every
// string escaped; "violated-policies" only when `violated` is not empty.
std::string ProblemJson(std::string_view type, std::string_view title, int status,
                        std::string_view detail, std::span<const std::string_view> violated);

}  // namespace sluice::http::internal

#endif  // SLUICE_HTTP_PROBLEM_JSON_H_
