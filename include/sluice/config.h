// RateLimitConfig: the rate limit rules of envoyproxy/ratelimit's YAML format, parsed and
// immutable.
//
// sluiced reads the same files as envoyproxy/ratelimit: one `domain` per file and a tree of
// `descriptors`, each with a `key`, an optional `value` (exact, or a `*` wildcard pattern) and an
// optional `rate_limit`. sluice adds `algorithm`, `burst` and `rate_limits:` (several limits on one
// descriptor). docs/config.md describes the format, the error messages and what differs from the
// reference. Match() follows the reference's GetLimit() lookup exactly.
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const RateLimitConfig> config,
//                           LoadRateLimitConfig("/etc/sluice/config"));
//   const DescriptorEntry entries[] = {{"remote_address", "10.0.0.1"}};
//   if (std::optional<RuleMatch> match = config->Match("edge", entries)) {
//     // match->rule->limits, match->counter_entries, match->stats_key ...
//   }
//
// Thread safety: a RateLimitConfig is immutable once loaded; every method is const and safe to call
// concurrently. Share it as std::shared_ptr<const RateLimitConfig> and swap the pointer atomically
// to reload.
#ifndef SLUICE_CONFIG_H_
#define SLUICE_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "sluice/limit.h"

namespace sluice {

namespace internal {
struct ConfigTree;
}  // namespace internal

// One descriptor entry of a request, e.g. {"remote_address", "10.0.0.1"}. Non-owning: the strings
// must outlive the call (inputs) or the request and the config (RuleMatch::counter_entries).
struct DescriptorEntry {
  std::string_view key;
  std::string_view value;

  friend bool operator==(const DescriptorEntry&, const DescriptorEntry&) = default;
};

// The reference's units. kWeek is 7 days, kMonth 30 days and kYear 365 days, as the reference
// counts them. sluiced maps these to the proto's Unit by name.
enum class RateLimitUnit : uint8_t { kSecond, kMinute, kHour, kDay, kWeek, kMonth, kYear };

// Returns the configuration name: "second", "minute", ..., "year".
std::string_view RateLimitUnitName(RateLimitUnit unit);

// Returns the length of one unit (e.g. 30 days for kMonth).
std::chrono::seconds RateLimitUnitDuration(RateLimitUnit unit);

// One limit of a rule: the `rate_limit` block, or one item of `rate_limits`.
struct RuleLimit {
  // The `name` of this limit (used by `replaces` and as a policy name), or "" when unnamed.
  std::string name;
  RateLimitUnit unit = RateLimitUnit::kSecond;
  // `unit_multiplier`: the window is this many units long (5 with `unit: minute` is 5 minutes).
  // Default: 1.
  uint32_t unit_multiplier = 1;
  // As configured. 0 is legal and means "deny every request" (then `limit` is empty).
  uint32_t requests_per_unit = 0;
  // What the store enforces: algorithm, requests_per_unit per unit, burst. Validated by
  // ValidateLimit(). Empty iff requests_per_unit == 0.
  std::optional<Limit> limit;
  // `debt: true`: every hit is recorded, admitted or not (envoyproxy/ratelimit's counting): the
  // count may go past the limit, and requests are denied until the window has repaid it. What
  // Envoy's refunds (is_negative_hits) and charges after the response (apply_on_stream_done)
  // need: a refused request's refund then cancels its recorded charge, and a late charge past the
  // remainder is not lost (docs/envoy.md). fixed_window only, for now. Default: false.
  bool debt = false;

  // True when every request is denied without consulting the store (`requests_per_unit: 0`).
  bool DenyAll() const { return !limit.has_value(); }
};

// The rate limit configured on one descriptor node.
struct Rule {
  // The node's path as the reference names it at load time: "domain.key_value.key2".
  std::string config_key;
  // Where the node is defined, "file:line:column", for logs and /rlconfig.
  std::string location;
  // `rate_limit.name`, or "" (also "" for `rate_limits:`, whose items carry their own names).
  std::string name;
  // Names of limits this rule replaces (`replaces: [{name: ...}]`, the union over `rate_limits`).
  // When one request matches several rules, each matched limit whose name is listed here by another
  // matched rule is dropped and its counter left untouched.
  std::vector<std::string> replaces;
  // `unlimited: true`: always OK without a store call; `limits` is empty.
  bool unlimited = false;
  // The node's `shadow_mode`: evaluate and count, but always answer OK.
  bool shadow_mode = false;
  // The node's `quota_mode` (reference semantics: the request is over limit only if every
  // quota-mode descriptor is over, or a normal limit is; sluiced's RateLimitService applies it).
  bool quota_mode = false;
  // The node's `detailed_metric`: stats keys carry every request value (see RuleMatch::stats_key).
  bool detailed_metric = false;
  // The limits, in configuration order. Empty iff `unlimited`.
  std::vector<RuleLimit> limits;
  // The node's `metadata` as a JSON object, or "" when absent.
  std::string metadata_json;
};

// What Match() found for one request descriptor.
struct RuleMatch {
  // The matched rule. Never null; owned by the RateLimitConfig that returned it.
  const Rule* rule = nullptr;
  // The request's domain (a view of the config's copy).
  std::string_view domain;
  // The entries that identify the counter, one per request entry and in its order: the request's
  // key and value, except that a `share_threshold` wildcard node contributes its pattern instead of
  // the value, so all values matching it share one counter. Views into the request or the config.
  std::vector<DescriptorEntry> counter_entries;
  // The reference's stats key, e.g. "domain.key_value.key2". Per level: `key_value` for an exact
  // match; `key_pattern` for a wildcard (`key_value` with value_to_metric); `key` for a value-less
  // node (`key_value` with value_to_metric). With the rule's detailed_metric, `key_value` at every
  // level. A share_threshold wildcard always contributes `key_pattern`.
  std::string stats_key;
};

// An in-memory configuration file, for tests and for sources other than the file system.
struct ConfigSource {
  // Used in error messages as the file name.
  std::string name;
  std::string content;
};

class RateLimitConfig {
 public:
  // Internal: use LoadRateLimitConfig() or ParseRateLimitConfig().
  explicit RateLimitConfig(std::unique_ptr<const internal::ConfigTree> tree);
  ~RateLimitConfig();
  RateLimitConfig(const RateLimitConfig&) = delete;
  RateLimitConfig& operator=(const RateLimitConfig&) = delete;
  RateLimitConfig(RateLimitConfig&&) = delete;
  RateLimitConfig& operator=(RateLimitConfig&&) = delete;

  // Match()
  //
  // Returns the rule for one request descriptor (an ordered list of entries), or nullopt when the
  // domain is unknown, `entries` is empty, or no rule applies. Per entry, in order, the node is
  // the child with the exact `key_value`, else the first child (in file order) whose wildcard
  // pattern matches, else the value-less `key` child; the lookup descends into that node's
  // `descriptors`. A rule applies only when the node reached by the last entry has a rate limit:
  // a shorter or longer path matches nothing, and there is no backtracking.
  std::optional<RuleMatch> Match(std::string_view domain,
                                 absl::Span<const DescriptorEntry> entries) const;

  // Returns whether `domain` is configured.
  bool HasDomain(std::string_view domain) const;

  // Returns the configured domains, sorted.
  std::vector<std::string> Domains() const;

  // Returns one line per rule ("config_key: limits, flags"), sorted, for /rlconfig and logs.
  std::string Dump() const;

 private:
  std::unique_ptr<const internal::ConfigTree> tree_;
};

// How LoadRateLimitConfig() and ParseRateLimitConfig() read their files.
struct ConfigLoadOptions {
  // Several files may define one domain; their descriptors are joined, and a descriptor key defined
  // at one level by two files is an error (the reference's MERGE_DOMAIN_CONFIG). Default: off (a
  // domain defined twice is an error).
  bool merge_domains = false;
  // Skip files whose names start with '.' in a directory (the reference's RUNTIME_IGNOREDOTFILES).
  // Default: on, so a Kubernetes ConfigMap's `..data` layout loads each file once.
  bool ignore_dotfiles = true;
};

// LoadRateLimitConfig()
//
// Loads `path`: one YAML file, or every `*.yaml` and `*.yml` directly inside a directory (not
// recursive; names starting with '.' are skipped, so a Kubernetes ConfigMap's `..data` layout loads
// each file once; symlinks are followed). Returns the config, or: NotFound when `path` does not
// exist or a directory holds no config file; InvalidArgument for any invalid file, with a message
// "file:line:column: field: what is wrong"; the errno-derived code when a file cannot be read. On
// error nothing is returned, never a partial config.
absl::StatusOr<std::shared_ptr<const RateLimitConfig>> LoadRateLimitConfig(
    const std::filesystem::path& path);
absl::StatusOr<std::shared_ptr<const RateLimitConfig>> LoadRateLimitConfig(
    const std::filesystem::path& path, const ConfigLoadOptions& options);

// ParseRateLimitConfig()
//
// Parses in-memory files, as LoadRateLimitConfig() parses files on disk. Returns the config, or
// InvalidArgument naming the first error.
absl::StatusOr<std::shared_ptr<const RateLimitConfig>> ParseRateLimitConfig(
    absl::Span<const ConfigSource> sources);
absl::StatusOr<std::shared_ptr<const RateLimitConfig>> ParseRateLimitConfig(
    absl::Span<const ConfigSource> sources, const ConfigLoadOptions& options);

}  // namespace sluice

#endif  // SLUICE_CONFIG_H_
