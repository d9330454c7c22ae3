// Parsing one configuration file into a domain tree.
#ifndef SLUICE_CONFIG_PARSE_H_
#define SLUICE_CONFIG_PARSE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

#include "sluice/config.h"

#include "src/config/config_tree.h"
#include "src/config/yaml_reader.h"

namespace sluice::internal {

// ParseConfigFile()
//
// Returns the domain defined by one file, or InvalidArgument "file:line:column: field: message" for
// its first error (YAML syntax included). Checks everything that one file can get wrong; a domain
// repeated across files is for the caller to reject. Never throws.
absl::StatusOr<DomainTree> ParseConfigFile(const ConfigSource& source);

// What a descriptor node contributes to its rule besides the rate limit block.
struct RuleContext {
  std::string config_key;
  std::string location;
  bool shadow_mode = false;
  bool quota_mode = false;
  bool detailed_metric = false;
  std::string metadata_json;
};

// ParseRule()
//
// Returns the rule of a descriptor (from its `rate_limit` or `rate_limits`), null when it has
// neither, or InvalidArgument for the first error in them.
absl::StatusOr<std::unique_ptr<const Rule>> ParseRule(const FileContext& file,
                                                      const MapReader& descriptor,
                                                      RuleContext context);

}  // namespace sluice::internal

#endif  // SLUICE_CONFIG_PARSE_H_
