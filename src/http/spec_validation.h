// Validation of a MiddlewareSpec, shared by the YAML reader (which checks each field as it reads
// it, to point at its line) and MiddlewareConfig::Create() (which checks everything, for specs
// built in C++).
//
// Thread safety: pure functions.
#ifndef SLUICE_HTTP_SPEC_VALIDATION_H_
#define SLUICE_HTTP_SPEC_VALIDATION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include "sluice/http/middleware_config.h"
#include "sluice/limit.h"

#include "src/core/wait_seconds.h"

namespace sluice::http::internal {

// SpecError()
//
// Returns InvalidArgument "location: field: message", leaving out an empty location or field.
absl::Status SpecError(std::string_view location, std::string_view field,
                       absl::string_view message);

// DefaultPolicyName()
//
// Returns "<limit>-per-<period>", e.g. "10-per-1s", "1000-per-1d", "5-per-90s".
std::string DefaultPolicyName(const Limit& limit);

// FormatPeriod()
//
// Returns a whole-second period in the largest unit that divides it: "1s", "90s", "1h", "1d".
std::string FormatPeriod(std::chrono::microseconds period);

// The `w` and horizon of a policy (see CompiledPolicy::window), shared with sluiced.
using ::sluice::internal::PolicyHorizonSeconds;
using ::sluice::internal::PolicyWindowSeconds;

// ValidatePolicyLimit()
//
// Returns OK when `limit` passes ValidateLimit() and its period is a whole number of seconds, else
// InvalidArgument whose message starts with the offending policy field ("limit: ", "period: ",
// "burst: ", "algorithm: ").
absl::Status ValidatePolicyLimit(const Limit& limit);

// ValidatePolicyName(), ValidateTierName(), ValidateMethod()
//
// Return OK or InvalidArgument with a message (no field).
absl::Status ValidatePolicyName(std::string_view name);
absl::Status ValidateTierName(std::string_view name);
absl::Status ValidateMethod(std::string_view method);

// NormalizeAndValidate()
//
// Fills defaults (policy names, the global rule's name) and checks every field of `spec`; returns
// the first error as SpecError() formats it.
absl::Status NormalizeAndValidate(MiddlewareSpec& spec);

}  // namespace sluice::http::internal

#endif  // SLUICE_HTTP_SPEC_VALIDATION_H_
