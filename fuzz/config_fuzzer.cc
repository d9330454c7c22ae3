// Fuzz target: the rate limit config parser (ParseRateLimitConfig) and RateLimitConfig::Match().
//
// Input: the bytes of a config file. A line "#file" (a YAML comment, so the input stays one valid
// file) splits it into several files, to reach the cross-file checks (duplicate domains).
//
// Properties:
// - parsing never crashes and returns OK or InvalidArgument; an error names its file first;
// - a parsed config is internally consistent: every rule Match() returns is unlimited with no
//   limits or has limits, each either deny-all or one that ValidateLimit() accepts;
// - Match() on descriptors built from the input's own `key:` and `value:` scalars (so that they
//   really match) never crashes and returns one counter entry per request entry, with the
//   request's keys, and a stats key that starts with the domain.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "fuzz/fuzz_support.h"

#include "sluice/config.h"
#include "sluice/limit.h"

namespace sluice::fuzz {
namespace {

constexpr std::string_view kFileSeparator = "\n#file\n";
constexpr size_t kMaxFiles = 4;
constexpr int kMatchesPerInput = 24;
constexpr size_t kMaxEntriesPerDescriptor = 4;

std::vector<ConfigSource> SplitFiles(std::string_view input) {
  std::vector<ConfigSource> files;
  while (files.size() + 1 < kMaxFiles) {
    const size_t at = input.find(kFileSeparator);
    if (at == std::string_view::npos) break;
    files.push_back({.name = "f" + std::to_string(files.size()) + ".yaml",
                     .content = std::string(input.substr(0, at))});
    input.remove_prefix(at + kFileSeparator.size());
  }
  files.push_back(
      {.name = "f" + std::to_string(files.size()) + ".yaml", .content = std::string(input)});
  return files;
}

// Collects the scalar after each `<field>:` in the raw text, as a YAML plain or quoted scalar
// would read in the common cases. Exactness does not matter: these only seed descriptors.
std::vector<std::string> ScalarsAfter(std::string_view text, std::string_view field) {
  std::vector<std::string> out;
  for (size_t at = text.find(field); at != std::string_view::npos && out.size() < 64;
       at = text.find(field, at + 1)) {
    size_t p = at + field.size();
    while (p < text.size() && text[p] == ' ') ++p;
    char quote = 0;
    if (p < text.size() && (text[p] == '"' || text[p] == '\'')) quote = text[p++];
    const size_t start = p;
    while (p < text.size() && text[p] != '\n' && text[p] != '\r' &&
           (quote != 0 ? text[p] != quote
                       : text[p] != ',' && text[p] != '}' && text[p] != ']' && text[p] != '#')) {
      ++p;
    }
    std::string_view scalar = text.substr(start, p - start);
    while (quote == 0 && !scalar.empty() && scalar.back() == ' ') scalar.remove_suffix(1);
    out.emplace_back(scalar);
  }
  return out;
}

// A value for a descriptor entry: one of the config's values, or a variant that reaches the
// wildcard and default branches of Match().
std::string PickValue(const std::vector<std::string>& values, Random& random) {
  if (values.empty() || random.Below(5) == 0) return random.Below(2) == 0 ? "" : "other";
  std::string value = values[random.Below(values.size())];
  switch (random.Below(4)) {
    case 0:
      for (char& c : value) {
        if (c == '*') c = 'x';  // What a wildcard pattern matches.
      }
      break;
    case 1:
      value += "tail";
      break;
    default:
      break;
  }
  return value;
}

void CheckRule(const Rule& rule) {
  SLUICE_FUZZ_CHECK(rule.unlimited == rule.limits.empty(),
                    rule.config_key << ": unlimited=" << rule.unlimited << " with "
                                    << rule.limits.size() << " limits");
  for (const RuleLimit& limit : rule.limits) {
    SLUICE_FUZZ_CHECK(
        limit.DenyAll() == (limit.requests_per_unit == 0),
        rule.config_key << ": deny-all limit with requests_per_unit " << limit.requests_per_unit);
    if (limit.limit.has_value()) {
      const absl::Status valid = ValidateLimit(*limit.limit);
      SLUICE_FUZZ_CHECK(valid.ok(), rule.config_key << ": " << valid);
      SLUICE_FUZZ_CHECK(limit.limit->limit == limit.requests_per_unit,
                        rule.config_key << ": limit " << limit.limit->limit);
    }
  }
}

void CheckMatches(const RateLimitConfig& config, std::string_view input) {
  const std::vector<std::string> domains = config.Domains();
  SLUICE_FUZZ_CHECK(!domains.empty(), "a parsed config has no domain");
  for (const std::string& domain : domains) {
    SLUICE_FUZZ_CHECK(config.HasDomain(domain), "listed domain not found: " << domain);
  }
  const std::vector<std::string> keys = ScalarsAfter(input, "key:");
  const std::vector<std::string> values = ScalarsAfter(input, "value:");
  Random random(HashBytes(input));
  for (int i = 0; i < kMatchesPerInput; ++i) {
    const std::string& domain = domains[random.Below(domains.size())];
    const size_t n = 1 + random.Below(kMaxEntriesPerDescriptor);
    std::vector<std::string> storage;
    storage.reserve(2 * n);
    for (size_t j = 0; j < n; ++j) {
      storage.push_back(keys.empty() || random.Below(8) == 0 ? "k"
                                                             : keys[random.Below(keys.size())]);
      storage.push_back(PickValue(values, random));
    }
    std::vector<DescriptorEntry> entries;
    for (size_t j = 0; j < n; ++j) entries.push_back({storage[2 * j], storage[2 * j + 1]});

    const std::optional<RuleMatch> match = config.Match(domain, entries);
    if (!match.has_value()) continue;
    SLUICE_FUZZ_CHECK(match->rule != nullptr, "match without a rule");
    CheckRule(*match->rule);
    SLUICE_FUZZ_CHECK(match->domain == domain, "matched domain " << match->domain);
    SLUICE_FUZZ_CHECK(match->counter_entries.size() == entries.size(),
                      match->counter_entries.size() << " counter entries for " << entries.size());
    for (size_t j = 0; j < entries.size(); ++j) {
      SLUICE_FUZZ_CHECK(match->counter_entries[j].key == entries[j].key,
                        "counter entry " << j << " has key " << match->counter_entries[j].key);
    }
    SLUICE_FUZZ_CHECK(match->stats_key.starts_with(domain + "."),
                      "stats key " << Printable(match->stats_key));
  }
  // The other read-only methods must not crash either.
  (void)config.Dump();
  (void)config.Match(domains.front(), {});
  (void)config.HasDomain("");
}

}  // namespace
}  // namespace sluice::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::fuzz;  // NOLINT(google-build-using-namespace): a C entry point.
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<sluice::ConfigSource> files = SplitFiles(input);
  const absl::StatusOr<std::shared_ptr<const sluice::RateLimitConfig>> config =
      sluice::ParseRateLimitConfig(files);
  if (!config.ok()) {
    SLUICE_FUZZ_CHECK(config.status().code() == absl::StatusCode::kInvalidArgument,
                      config.status());
    bool located = false;
    for (const sluice::ConfigSource& file : files) {
      located = located || absl::StartsWith(config.status().message(), file.name);
    }
    SLUICE_FUZZ_CHECK(located, "error does not name its file: " << config.status());
    return 0;
  }
  SLUICE_FUZZ_CHECK(*config != nullptr, "OK with a null config");
  CheckMatches(**config, input);
  return 0;
}
