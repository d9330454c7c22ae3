// The path of a request target as rules match it, and the targets that a router could read as a
// different path than the middleware does.
//
// Thread safety: pure functions.
#ifndef SLUICE_HTTP_REQUEST_TARGET_H_
#define SLUICE_HTTP_REQUEST_TARGET_H_

#include <string_view>

namespace sluice::http::internal {

// RoutingPath()
//
// Returns the path part of a request target: the query ("?...") and fragment ("#...") cut off,
// and an absolute-form target ("http://host:8080/api/orders", RFC 9112 §3.2.2, which a server
// must accept) reduced to its path ("/api/orders"; "/" when it has none). Other targets are
// returned as they are, the asterisk form ("*") included. A view into `target`, or "/".
std::string_view RoutingPath(std::string_view target);

// AmbiguousPath()
//
// Returns why `path` (a RoutingPath()) could name another route for a router that normalizes it
// than for one that compares it as sent, or "" when it cannot: a dot segment ("." or ".."), an
// encoded '/' or '\' ("%2F", "%5C"), a backslash, an encoded NUL, or a percent-encoded unreserved
// character ("%6F" for 'o', "%2E" for '.': RFC 3986 §2.3 says it is the same path). Adapters whose
// framework has no router of its own (Beast) refuse such targets.
std::string_view AmbiguousPath(std::string_view path);

}  // namespace sluice::http::internal

#endif  // SLUICE_HTTP_REQUEST_TARGET_H_
