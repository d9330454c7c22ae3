// std::string_view at our APIs, absl::string_view where Abseil wants it.
//
// Debian's Abseil 20220623 is built with ABSL_OPTION_USE_STD_STRING_VIEW 0: absl::string_view is
// its own type and does not convert from std::string_view, so absl::StrCat, absl::Status factories
// and heterogeneous flat_hash_map lookups reject std::string_view. Values pass through AbslView().
#ifndef SLUICE_UTIL_STRINGS_H_
#define SLUICE_UTIL_STRINGS_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace sluice::internal {

inline absl::string_view AbslView(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view StdView(absl::string_view s) { return {s.data(), s.size()}; }

}  // namespace sluice::internal

#endif  // SLUICE_UTIL_STRINGS_H_
