#include "src/server/rls/rls_metadata.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"

#include "src/util/strings.h"

namespace sluice::server {
namespace {

using internal::AbslView;

// Go's one-line text format of a RateLimitOverride: zero fields left out, enum values by name.
std::string LimitText(const LimitOverride& limit) {
  std::string text;
  if (limit.requests_per_unit != 0) {
    absl::StrAppend(&text, "requests_per_unit:", limit.requests_per_unit);
  }
  // SECOND..YEAR are all non-zero values of envoy.type.v3.RateLimitUnit, so never left out.
  if (!text.empty()) text.push_back(' ');
  absl::StrAppend(&text, "unit:", absl::AsciiStrToUpper(AbslView(RateLimitUnitName(limit.unit))));
  return text;
}

// The reference's mergeMetadata: keys `dest` lacks are added; where both hold an object, the two
// merge; otherwise `dest` keeps its value.
void Merge(boost::json::object& dest, const boost::json::object& src) {
  for (const auto& [key, value] : src) {
    auto it = dest.find(key);
    if (it == dest.end()) {
      dest.emplace(key, value);
    } else if (it->value().is_object() && value.is_object()) {
      Merge(it->value().as_object(), value.as_object());
    }
  }
}

}  // namespace

std::string RequestMetadataJson(const RlsRequest& request) {
  boost::json::object out;
  out["domain"] = boost::json::string_view(request.domain.data(), request.domain.size());
  boost::json::array descriptors;
  descriptors.reserve(request.descriptors.size());
  for (const RlsDescriptor& d : request.descriptors) {
    boost::json::object descriptor;
    boost::json::array entries;
    entries.reserve(d.entries.size());
    for (const DescriptorEntry& e : d.entries) {
      entries.emplace_back(absl::StrCat(AbslView(e.key), "=", AbslView(e.value)));
    }
    descriptor["entries"] = std::move(entries);
    if (d.limit.has_value()) descriptor["limit"] = LimitText(*d.limit);
    // Struct numbers are doubles.
    if (d.hits_addend.has_value()) descriptor["hitsAddend"] = static_cast<double>(*d.hits_addend);
    descriptors.emplace_back(std::move(descriptor));
  }
  out["descriptors"] = std::move(descriptors);
  if (request.hits_addend != 0) out["hitsAddend"] = static_cast<double>(request.hits_addend);
  return boost::json::serialize(out);
}

std::string DynamicMetadataJson(const Plan& plan, const RlsResponse& response) {
  boost::json::object merged;
  for (size_t i = 0; i < plan.metadata_json.size() && i < response.statuses.size(); ++i) {
    if (plan.metadata_json[i].empty() || plan.unlimited[i]) continue;
    if (response.statuses[i].code != RlsCode::kOk) continue;
    // The config parser wrote it (src/config), so it parses; a failure would leave it out.
    boost::system::error_code ec;
    boost::json::value parsed = boost::json::parse(plan.metadata_json[i], ec);
    if (!ec && parsed.is_object()) Merge(merged, parsed.as_object());
  }
  if (merged.empty()) return plan.request_metadata_json;
  // The request part was written by RequestMetadataJson(): an object.
  boost::json::value out = boost::json::parse(plan.request_metadata_json);
  out.as_object()["metadata"] = std::move(merged);
  return boost::json::serialize(out);
}

}  // namespace sluice::server
