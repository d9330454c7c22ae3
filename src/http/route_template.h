// RouteTemplate: a compiled path template ("/api/orders/{id}") or prefix ("/static").
//
// Paths and templates are compared segment by segment, and empty segments are ignored on both
// sides, so "/api//items/" matches "/api/items": the middleware must not be bypassed by a spelling
// of the path that the application's router treats as the same route. Segments are compared as
// sent (case-sensitive, percent-encoding not decoded).
//
// Thread safety: immutable after Parse(); const methods are safe to call concurrently.
#ifndef SLUICE_HTTP_ROUTE_TEMPLATE_H_
#define SLUICE_HTTP_ROUTE_TEMPLATE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/http/middleware_config.h"

namespace sluice::http::internal {

class RouteTemplate {
 public:
  // RouteTemplate::Parse()
  //
  // Returns the compiled template or prefix, or InvalidArgument when `text` does not start with
  // '/', a segment mixes '{'/'}' with other text, a parameter name is not [A-Za-z_][A-Za-z0-9_]*
  // or is repeated, or a prefix contains a parameter.
  static absl::StatusOr<RouteTemplate> Parse(std::string_view text, PathMatch match);

  // RouteTemplate::Matches()
  //
  // Returns whether `path` (no query string) matches.
  bool Matches(std::string_view path) const;

  // RouteTemplate::SameShape()
  //
  // Returns whether a framework's route template names this template: the same literal segments
  // at the same places, and a parameter wherever this has one. Parameters may be spelled "{id}",
  // ":id", "<id>" or "*" and their names are ignored, so "/orders/:order_id" names
  // "/orders/{id}". REQUIRES: match() == PathMatch::kTemplate.
  bool SameShape(std::string_view framework_template) const;

  // RouteTemplate::Canonical()
  //
  // Returns the template in canonical form ("/api/orders/{id}", "/static/*" for a prefix, "/" for
  // the root), the route component of counter keys.
  const std::string& Canonical() const { return canonical_; }

  // RouteTemplate::Shape()
  //
  // Returns the canonical form with parameter names dropped ("/api/orders/{}"): two templates of
  // one shape match exactly the same paths.
  std::string Shape() const;

  PathMatch match() const { return match_; }

 private:
  struct Segment {
    std::string literal;  // Empty for a parameter.
    bool parameter = false;
  };

  RouteTemplate() = default;

  PathMatch match_ = PathMatch::kTemplate;
  std::vector<Segment> segments_;
  std::string canonical_;
};

}  // namespace sluice::http::internal

#endif  // SLUICE_HTTP_ROUTE_TEMPLATE_H_
