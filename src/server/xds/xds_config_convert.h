// The xDS config resource (ratelimit.config.ratelimit.v3.RateLimitConfig) turned into the YAML
// config format, so that what a management server sends goes through exactly the validation a
// file does and its errors read like a file's ("xds:<resource name>:line:column: field: ...").
//
// The mapping is the reference's (src/config/config_xds.go): one resource is one file, its domain
// and descriptors; a unit is written by its enum name ("SECOND"; UNKNOWN is then refused unless
// the limit is unlimited); metadata becomes a YAML mapping. Strings are written quoted, so a value
// such as "true" or "null" stays a string.
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const RateLimitConfig> config,
//                           ParseXdsResponse(response, settings));
//
// Thread safety: pure functions.
#ifndef SLUICE_SERVER_XDS_XDS_CONFIG_CONVERT_H_
#define SLUICE_SERVER_XDS_XDS_CONFIG_CONVERT_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "ratelimit/config/ratelimit/v3/rls_conf.pb.h"

#include "sluice/config.h"

#include "src/server/xds/xds_settings.h"

namespace sluice::server {

// The type URL of the resource, as the reference subscribes to it.
inline constexpr std::string_view kRateLimitConfigTypeUrl =
    "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig";

// XdsResourceToSource()
//
// Returns the resource as a config file named "xds:<resource name>". Never fails: what is invalid
// is left for ParseRateLimitConfig() to report.
ConfigSource XdsResourceToSource(
    const ::ratelimit::config::ratelimit::v3::RateLimitConfig& resource);

// ParseXdsResponse()
//
// Returns the config made of every resource of `response` (the whole config: a domain left out is
// gone), with settings.merge_domains. Else InvalidArgument: a resource that is not a
// RateLimitConfig or does not parse, more than settings.max_resources resources or
// settings.max_config_bytes of YAML, or the first validation error of the files.
absl::StatusOr<std::shared_ptr<const RateLimitConfig>> ParseXdsResponse(
    const ::envoy::service::discovery::v3::DiscoveryResponse& response,
    const XdsSettings& settings);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_XDS_XDS_CONFIG_CONVERT_H_
