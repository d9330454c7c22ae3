// The keys of the configuration format and where each may appear.
//
// The reference checks every key against one flat list wherever it appears, and then silently
// ignores keys in the wrong place (`shadow_mode` inside `rate_limit` does nothing). sluice checks
// keys by position and says where a misplaced key belongs, so such a mistake cannot pass unnoticed.
#ifndef SLUICE_CONFIG_SCHEMA_H_
#define SLUICE_CONFIG_SCHEMA_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

#include "sluice/config.h"

namespace sluice::internal {

// Where a mapping appears in a file.
enum class Scope {
  kRoot,            // domain, descriptors
  kDescriptor,      // key, value, rate_limit, rate_limits, descriptors, shadow_mode, ...
  kRateLimit,       // unit, requests_per_unit, unlimited, name, replaces, algorithm, burst
  kRateLimitsItem,  // as kRateLimit without unlimited
  kReplacesItem,    // name
};

// Returns whether `key` is allowed in a mapping at `scope`.
bool IsAllowedKey(Scope scope, absl::string_view key);

// Returns whether `key` is allowed at some scope.
bool IsKnownKey(absl::string_view key);

// Returns why `key` is not allowed at `scope`: where it belongs if it is a known key, else
// "unknown key 'k'" with the closest allowed key as a suggestion.
std::string DisallowedKeyMessage(Scope scope, absl::string_view key);

// Returns the unit named `name`, case-insensitively as the reference reads it, or nullopt.
std::optional<RateLimitUnit> ParseRateLimitUnit(absl::string_view name);

}  // namespace sluice::internal

#endif  // SLUICE_CONFIG_SCHEMA_H_
