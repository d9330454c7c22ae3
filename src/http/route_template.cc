#include "src/http/route_template.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "src/util/strings.h"

namespace sluice::http::internal {
namespace {

bool IsNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// Calls `fn` on each non-empty '/'-separated segment of `path`, stopping when it returns false.
// Returns whether every call returned true.
template <typename Fn>
bool ForEachSegment(std::string_view path, Fn&& fn) {
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    size_t end = path.find('/', i);
    if (end == std::string_view::npos) end = path.size();
    if (!fn(path.substr(i, end - i))) return false;
    i = end;
  }
  return true;
}

}  // namespace

absl::StatusOr<RouteTemplate> RouteTemplate::Parse(std::string_view text, PathMatch match) {
  auto error = [&](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("'", ::sluice::internal::AbslView(text),
                                                   "': ", ::sluice::internal::AbslView(what)));
  };
  if (text.empty() || text.front() != '/') return error("must start with '/'");
  RouteTemplate route;
  route.match_ = match;
  std::vector<std::string_view> names;
  absl::Status status;
  ForEachSegment(text, [&](std::string_view segment) {
    const bool has_brace = segment.find_first_of("{}") != std::string_view::npos;
    if (!has_brace) {
      route.segments_.push_back({.literal = std::string(segment), .parameter = false});
      return true;
    }
    if (match == PathMatch::kPrefix) {
      status = error("a prefix cannot have parameters");
      return false;
    }
    if (segment.size() < 3 || segment.front() != '{' || segment.back() != '}') {
      status = error("a parameter must be a whole segment, as in /orders/{id}");
      return false;
    }
    const std::string_view name = segment.substr(1, segment.size() - 2);
    if (!IsNameStart(name.front()) || !std::all_of(name.begin(), name.end(), IsNameChar)) {
      status = error("a parameter name must match [A-Za-z_][A-Za-z0-9_]*");
      return false;
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      status = error("repeated parameter name");
      return false;
    }
    names.push_back(name);
    route.segments_.push_back({.literal = {}, .parameter = true});
    return true;
  });
  if (!status.ok()) return status;
  // Canonical form: empty segments dropped, parameters keep their names.
  size_t name_index = 0;
  for (const Segment& segment : route.segments_) {
    route.canonical_ += '/';
    if (segment.parameter) {
      absl::StrAppend(&route.canonical_, "{", ::sluice::internal::AbslView(names[name_index++]),
                      "}");
    } else {
      route.canonical_ += segment.literal;
    }
  }
  // (push_back rather than assigning "/": GCC 12 reports a false -Wrestrict on the latter.)
  if (match == PathMatch::kPrefix) {
    route.canonical_.append("/*");
  } else if (route.canonical_.empty()) {
    route.canonical_.push_back('/');
  }
  return route;
}

bool RouteTemplate::Matches(std::string_view path) const {
  size_t index = 0;
  bool longer = false;
  bool mismatch = false;
  ForEachSegment(path, [&](std::string_view segment) {
    if (index == segments_.size()) {
      longer = true;
      return false;
    }
    const Segment& expected = segments_[index];
    if (!expected.parameter && expected.literal != segment) {
      mismatch = true;
      return false;
    }
    ++index;
    return true;
  });
  if (mismatch) return false;
  // More segments than the template: a prefix matches, a template does not.
  if (longer) return match_ == PathMatch::kPrefix;
  return index == segments_.size();
}

std::string RouteTemplate::Shape() const {
  std::string shape;
  for (const Segment& segment : segments_) {
    shape += '/';
    shape.append(segment.parameter ? std::string_view("{}") : std::string_view(segment.literal));
  }
  if (match_ == PathMatch::kPrefix) {
    shape.append("/*");
  } else if (shape.empty()) {
    shape.push_back('/');
  }
  return shape;
}

bool RouteTemplate::SameShape(std::string_view framework_template) const {
  size_t index = 0;
  bool same = ForEachSegment(framework_template, [&](std::string_view segment) {
    if (index == segments_.size()) return false;
    const Segment& expected = segments_[index++];
    const bool parameter =
        segment == "*" || segment.front() == ':' ||
        (segment.size() >= 2 && ((segment.front() == '{' && segment.back() == '}') ||
                                 (segment.front() == '<' && segment.back() == '>')));
    return parameter ? expected.parameter : (!expected.parameter && expected.literal == segment);
  });
  return same && index == segments_.size();
}

}  // namespace sluice::http::internal
