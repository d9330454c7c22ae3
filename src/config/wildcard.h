// Wildcard patterns in descriptor values.
#ifndef SLUICE_CONFIG_WILDCARD_H_
#define SLUICE_CONFIG_WILDCARD_H_

#include <string_view>

namespace sluice::internal {

// WildcardMatch()
//
// Returns whether `subject` matches `pattern` as a whole, where each '*' in `pattern` stands for
// any run of characters (the empty one included) and every other character for itself. So
// "foo*" is a prefix match (as the reference's trailing-'*' values are), "*.example.com" a suffix
// match and "/api/*/v1*" both. Runs in O(|pattern| * |subject|) at worst, without recursion.
bool WildcardMatch(std::string_view pattern, std::string_view subject);

}  // namespace sluice::internal

#endif  // SLUICE_CONFIG_WILDCARD_H_
