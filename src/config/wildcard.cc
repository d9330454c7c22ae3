#include "src/config/wildcard.h"

#include <cstddef>

namespace sluice::internal {

bool WildcardMatch(std::string_view pattern, std::string_view subject) {
  size_t p = 0;
  size_t s = 0;
  // Where to resume after the last '*' when a literal fails: the star's position and the subject
  // position it is currently assumed to swallow up to.
  size_t star = std::string_view::npos;
  size_t star_subject = 0;
  while (s < subject.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_subject = s;
    } else if (p < pattern.size() && pattern[p] == subject[s]) {
      ++p;
      ++s;
    } else if (star != std::string_view::npos) {
      // Let the last star swallow one more character and retry what follows it.
      p = star + 1;
      s = ++star_subject;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

}  // namespace sluice::internal
