// ParseRule(): a descriptor's `rate_limit` or `rate_limits` into a Rule.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

#include "sluice/status_macros.h"

#include "src/config/parse.h"
#include "src/util/strings.h"

namespace sluice::internal {
namespace {

constexpr absl::string_view kUnitChoices =
    "(expected one of second, minute, hour, day, week, month, year)";

bool TakesBurst(Algorithm algorithm) {
  return algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra;
}

// One `replaces` entry, with where it is for errors.
struct Replace {
  std::string name;
  YAML::Mark mark;
  std::string field;
};

absl::StatusOr<std::vector<Replace>> ParseReplaces(const FileContext& file,
                                                   const MapReader& limit) {
  std::vector<Replace> out;
  const MapEntry* entry = limit.Find("replaces");
  if (entry == nullptr || entry->value.IsNull()) {
    return out;
  }
  if (!entry->value.IsSequence()) {
    return WithReferenceWording(limit.Error("replaces", "expected a list of {name: ...}"),
                                kReferenceLoadError);
  }
  for (size_t i = 0; i < entry->value.size(); ++i) {
    const std::string path = absl::StrCat(limit.Field("replaces"), "[", i, "]");
    SLUICE_ASSIGN_OR_RETURN(const MapReader item,
                            MapReader::Read(file, entry->value[i], path, Scope::kReplacesItem));
    SLUICE_ASSIGN_OR_RETURN(std::string name, item.String("name"));
    if (name.empty()) {
      return item.Error("name", "should not have an empty replaces entry");
    }
    out.push_back(Replace{std::move(name), item.Mark(), path});
  }
  return out;
}

// The limit fields shared by `rate_limit` and a `rate_limits` item.
absl::StatusOr<RuleLimit> ParseLimit(const MapReader& block) {
  RuleLimit out;
  SLUICE_ASSIGN_OR_RETURN(out.name, block.String("name"));

  SLUICE_ASSIGN_OR_RETURN(const std::string unit, block.String("unit"));
  if (unit.empty()) {
    // The reference reads a missing unit as an empty one.
    return WithReferenceWording(
        block.Error("unit", absl::StrCat("missing rate limit unit ", kUnitChoices)),
        "invalid rate limit unit ''");
  }
  const std::optional<RateLimitUnit> parsed_unit = ParseRateLimitUnit(unit);
  if (!parsed_unit.has_value()) {
    return block.Error("unit", absl::StrCat("invalid rate limit unit '", unit, "' ", kUnitChoices));
  }
  out.unit = *parsed_unit;

  // The reference reads a missing requests_per_unit as 0, which silently denies everything.
  SLUICE_ASSIGN_OR_RETURN(const std::optional<uint64_t> requests,
                          block.UnsignedInt("requests_per_unit", kMaxLimit));
  if (!requests.has_value()) {
    return block.Error("requests_per_unit",
                       "missing; write requests_per_unit: 0 to deny every request");
  }
  out.requests_per_unit = static_cast<uint32_t>(*requests);

  // A window of several units ("5 minutes"): Envoy's unit_multiplier.
  SLUICE_ASSIGN_OR_RETURN(const std::optional<uint64_t> multiplier,
                          block.UnsignedInt("unit_multiplier", kMaxLimit));
  if (multiplier.has_value()) {
    if (*multiplier == 0) {
      return block.Error("unit_multiplier", "must be at least 1");
    }
    if (RateLimitUnitDuration(out.unit) * *multiplier > kMaxPeriod) {
      return block.Error("unit_multiplier",
                         absl::StrCat(*multiplier, " ", AbslView(RateLimitUnitName(out.unit)),
                                      "s is longer than the longest period, 366 days"));
    }
    out.unit_multiplier = static_cast<uint32_t>(*multiplier);
  }

  Limit limit;
  limit.limit = static_cast<int64_t>(*requests);
  limit.period = RateLimitUnitDuration(out.unit) * out.unit_multiplier;
  if (block.Has("algorithm")) {
    SLUICE_ASSIGN_OR_RETURN(const std::string name, block.String("algorithm"));
    const absl::StatusOr<Algorithm> algorithm = ParseAlgorithm(name);
    if (!algorithm.ok()) {
      return block.Error("algorithm", algorithm.status().message());
    }
    limit.algorithm = *algorithm;
  }
  SLUICE_ASSIGN_OR_RETURN(const std::optional<uint64_t> burst,
                          block.UnsignedInt("burst", kMaxLimit));
  if (burst.has_value()) {
    if (!TakesBurst(limit.algorithm)) {
      return block.Error("burst", absl::StrCat("burst applies only to token_bucket and gcra, not ",
                                               AbslView(AlgorithmName(limit.algorithm))));
    }
    if (*burst == 0) {
      return block.Error("burst", "must be at least 1");
    }
    limit.burst = static_cast<int64_t>(*burst);
  }

  SLUICE_ASSIGN_OR_RETURN(const bool debt, block.Bool("debt"));
  if (debt) {
    if (limit.algorithm != Algorithm::kFixedWindow) {
      return block.Error("debt", absl::StrCat("only a fixed_window limit records hits past its "
                                              "limit so far, not ",
                                              AbslView(AlgorithmName(limit.algorithm))));
    }
    out.debt = true;
  }

  if (*requests == 0) {
    return out;  // DenyAll(): nothing for a store to enforce.
  }
  if (const absl::Status status = ValidateLimit(limit); !status.ok()) {
    // ValidateLimit names its own fields ("limit.burst: ..."); ours replace them.
    absl::string_view message = status.message();
    const bool about_burst = absl::StartsWith(message, "limit.burst");
    for (absl::string_view prefix :
         {"limit.burst: ", "limit.limit: ", "limit.period: ", "limit: "}) {
      if (absl::ConsumePrefix(&message, prefix)) {
        break;
      }
    }
    return block.Error(about_burst ? "burst" : "requests_per_unit", message);
  }
  out.limit = limit;
  return out;
}

absl::Status ParseSingle(const FileContext& file, const MapReader& descriptor, Rule& rule,
                         std::vector<Replace>& replaces) {
  SLUICE_ASSIGN_OR_RETURN(const MapReader block,
                          MapReader::Read(file, descriptor.Find("rate_limit")->value,
                                          descriptor.Field("rate_limit"), Scope::kRateLimit));
  SLUICE_ASSIGN_OR_RETURN(rule.name, block.String("name"));
  SLUICE_ASSIGN_OR_RETURN(rule.unlimited, block.Bool("unlimited"));
  SLUICE_ASSIGN_OR_RETURN(replaces, ParseReplaces(file, block));
  if (rule.unlimited) {
    // The reference rejects only a valid unit here; any limit field contradicts `unlimited`.
    if (block.Has("unit")) {
      return block.Error("unit", "should not specify rate limit unit when unlimited");
    }
    for (absl::string_view key : {"requests_per_unit", "algorithm", "burst"}) {
      if (block.Has(key)) {
        return block.Error(key, absl::StrCat("should not specify ", key, " when unlimited"));
      }
    }
    return absl::OkStatus();
  }
  SLUICE_ASSIGN_OR_RETURN(RuleLimit limit, ParseLimit(block));
  rule.limits.push_back(std::move(limit));
  return absl::OkStatus();
}

absl::Status ParseList(const FileContext& file, const MapReader& descriptor, Rule& rule,
                       std::vector<Replace>& replaces) {
  const YAML::Node& list = descriptor.Find("rate_limits")->value;
  if (!list.IsSequence() || list.size() == 0) {
    return descriptor.Error("rate_limits", "expected a non-empty list of limits");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(
        const MapReader item,
        MapReader::Read(file, list[i], absl::StrCat(descriptor.Field("rate_limits"), "[", i, "]"),
                        Scope::kRateLimitsItem));
    SLUICE_ASSIGN_OR_RETURN(RuleLimit limit, ParseLimit(item));
    for (size_t j = 0; j < rule.limits.size(); ++j) {
      const RuleLimit& other = rule.limits[j];
      const Algorithm a = limit.limit ? limit.limit->algorithm : Algorithm::kFixedWindow;
      const Algorithm b = other.limit ? other.limit->algorithm : Algorithm::kFixedWindow;
      // Two limits with one unit and algorithm are redundant (the lower wins), and a store keyed
      // by unit and algorithm could not tell their counters apart.
      if (limit.unit == other.unit && limit.unit_multiplier == other.unit_multiplier && a == b) {
        return file.Error(item.Mark(), item.Path(),
                          absl::StrCat("same unit and algorithm as rate_limits[", j, "]"));
      }
    }
    SLUICE_ASSIGN_OR_RETURN(std::vector<Replace> item_replaces, ParseReplaces(file, item));
    for (Replace& r : item_replaces) {
      replaces.push_back(std::move(r));
    }
    rule.limits.push_back(std::move(limit));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<const Rule>> ParseRule(const FileContext& file,
                                                      const MapReader& descriptor,
                                                      RuleContext context) {
  const bool single = descriptor.Has("rate_limit");
  const bool list = descriptor.Has("rate_limits");
  if (!single && !list) {
    return std::unique_ptr<const Rule>();
  }
  if (single && list) {
    return descriptor.Error("rate_limits", "use either rate_limit or rate_limits, not both");
  }

  auto rule = std::make_unique<Rule>();
  rule->config_key = std::move(context.config_key);
  rule->location = std::move(context.location);
  rule->shadow_mode = context.shadow_mode;
  rule->quota_mode = context.quota_mode;
  rule->detailed_metric = context.detailed_metric;
  rule->metadata_json = std::move(context.metadata_json);

  std::vector<Replace> replaces;
  SLUICE_RETURN_IF_ERROR(single ? ParseSingle(file, descriptor, *rule, replaces)
                                : ParseList(file, descriptor, *rule, replaces));
  for (Replace& r : replaces) {
    bool own = !rule->name.empty() && r.name == rule->name;
    for (const RuleLimit& limit : rule->limits) {
      own = own || (!limit.name.empty() && r.name == limit.name);
    }
    if (own) {
      return file.Error(r.mark, absl::StrCat(r.field, ".name"),
                        "replaces should not contain name of same descriptor");
    }
    rule->replaces.push_back(std::move(r.name));
  }
  return std::unique_ptr<const Rule>(std::move(rule));
}

}  // namespace sluice::internal
