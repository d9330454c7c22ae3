// Values written as envoyproxy/ratelimit reads them from its environment (Go's strconv and time
// packages, and envconfig's maps), so a deployment's variables mean the same to sluiced.
//
// Example:
//   absl::StatusOr<std::chrono::nanoseconds> d = ParseGoDuration("1h30m");  // 5400 s
//
// Thread safety: pure functions.
#ifndef SLUICE_SERVER_GO_VALUES_H_
#define SLUICE_SERVER_GO_VALUES_H_

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::server {

// ParseGoDuration()
//
// Returns the duration Go's time.ParseDuration reads: a sequence of decimal numbers, each with an
// optional fraction and a unit ("ns", "us", "µs", "ms", "s", "m", "h"), optionally signed, e.g.
// "300ms", "1.5h", "2h45m"; "0" alone is zero. Else InvalidArgument.
absl::StatusOr<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);

// ParseGoBool()
//
// Returns the bool Go's strconv.ParseBool reads: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false,
// False. Else InvalidArgument.
absl::StatusOr<bool> ParseGoBool(std::string_view text);

// ParseGoStringMap()
//
// Returns the pairs of an envconfig map, "key1:value1,key2:value2" (empty text: none). Else
// InvalidArgument for an item without ':'.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseGoStringMap(
    std::string_view text);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GO_VALUES_H_
