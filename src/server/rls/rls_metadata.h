// The response's dynamic metadata (RESPONSE_DYNAMIC_METADATA), as envoyproxy/ratelimit builds it
// (ratelimitToMetadata in src/service/ratelimit.go):
//
//   {"domain": <request domain>,
//    "descriptors": [{"entries": ["key=value", ...],
//                     "limit": "requests_per_unit:N unit:U",   // a request-level limit, if any
//                     "hitsAddend": n}, ...],                   // the descriptor's, if set
//    "hitsAddend": n,                                           // the request's, if not 0
//    "metadata": {...}}                                         // see below, if not empty
//
// "metadata" merges the config `metadata` of every descriptor that passed (not `unlimited`, and
// OK in its status), in request order: the first value of a key wins, and objects under the same
// key merge recursively. Envoy stores the object under `envoy.filters.http.ratelimit`, where
// `%DYNAMIC_METADATA(envoy.filters.http.ratelimit:metadata:...)%` reads it, e.g. to route to the
// service that still has quota.
//
// The reference writes "limit" with Go's text format of the message, whose spacing Go leaves
// unspecified; here it is always one space between the two fields, and a field at its zero value
// is left out, as that format does.
//
// Example:
//   plan.request_metadata_json = RequestMetadataJson(request);   // while `request` lives
//   ...
//   response.dynamic_metadata_json = DynamicMetadataJson(plan, response);
//
// Thread safety: pure functions.
#ifndef SLUICE_SERVER_RLS_RLS_METADATA_H_
#define SLUICE_SERVER_RLS_RLS_METADATA_H_

#include <string>

#include "src/server/rls/rls_plan.h"
#include "src/server/rls/rls_types.h"

namespace sluice::server {

// RequestMetadataJson()
//
// Returns the object's request part, serialized: "domain", "descriptors" and "hitsAddend".
std::string RequestMetadataJson(const RlsRequest& request);

// DynamicMetadataJson()
//
// Returns plan.request_metadata_json with "metadata" added from the descriptors `response` passed
// (a plan made with PlanOptions::descriptor_metadata), serialized.
std::string DynamicMetadataJson(const Plan& plan, const RlsResponse& response);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_RLS_METADATA_H_
