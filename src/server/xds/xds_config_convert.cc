#include "src/server/xds/xds_config_convert.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

namespace sluice::server {
namespace {

namespace rlc = ::ratelimit::config::ratelimit::v3;

void EmitString(YAML::Emitter& out, const std::string& text) { out << YAML::DoubleQuoted << text; }

void EmitValue(YAML::Emitter& out, const google::protobuf::Value& value);

void EmitStruct(YAML::Emitter& out, const google::protobuf::Struct& s) {
  out << YAML::BeginMap;
  // protobuf's map order is unspecified; sort so that the same resource gives the same YAML.
  std::vector<const std::string*> keys;
  keys.reserve(s.fields().size());
  for (const auto& [key, value] : s.fields()) keys.push_back(&key);
  std::sort(keys.begin(), keys.end(), [](const auto* a, const auto* b) { return *a < *b; });
  for (const std::string* key : keys) {
    out << YAML::Key;
    EmitString(out, *key);
    out << YAML::Value;
    EmitValue(out, s.fields().at(*key));
  }
  out << YAML::EndMap;
}

void EmitValue(YAML::Emitter& out, const google::protobuf::Value& value) {
  switch (value.kind_case()) {
    case google::protobuf::Value::kNumberValue: {
      const double n = value.number_value();
      // Struct numbers are doubles; whole ones print as integers, as JSON would show them.
      if (std::isfinite(n) && n == std::trunc(n) && std::fabs(n) < 9007199254740992.0) {
        out << static_cast<int64_t>(n);
      } else if (std::isfinite(n)) {
        out << YAML::Precision(17) << n;
      } else {
        out << YAML::Null;  // JSON has no NaN or infinity; protobuf's JSON mapping refuses them.
      }
      break;
    }
    case google::protobuf::Value::kStringValue:
      EmitString(out, value.string_value());
      break;
    case google::protobuf::Value::kBoolValue:
      out << value.bool_value();
      break;
    case google::protobuf::Value::kStructValue:
      EmitStruct(out, value.struct_value());
      break;
    case google::protobuf::Value::kListValue:
      out << YAML::BeginSeq;
      for (const auto& item : value.list_value().values()) EmitValue(out, item);
      out << YAML::EndSeq;
      break;
    case google::protobuf::Value::kNullValue:
    case google::protobuf::Value::KIND_NOT_SET:
      out << YAML::Null;
      break;
  }
}

void EmitPolicy(YAML::Emitter& out, const rlc::RateLimitPolicy& policy) {
  out << YAML::BeginMap;
  if (policy.unlimited()) {
    out << YAML::Key << "unlimited" << YAML::Value << true;
    // The reference refuses a valid unit next to `unlimited` and ignores requests_per_unit there;
    // the YAML parser refuses any unit key, so UNKNOWN (proto's "unset") is left out.
    if (policy.unit() != rlc::UNKNOWN) {
      out << YAML::Key << "unit" << YAML::Value << rlc::RateLimitUnit_Name(policy.unit());
    }
  } else {
    out << YAML::Key << "unit" << YAML::Value << rlc::RateLimitUnit_Name(policy.unit());
    out << YAML::Key << "requests_per_unit" << YAML::Value << policy.requests_per_unit();
  }
  if (!policy.name().empty()) {
    out << YAML::Key << "name" << YAML::Value;
    EmitString(out, policy.name());
  }
  if (policy.replaces_size() > 0) {
    out << YAML::Key << "replaces" << YAML::Value << YAML::BeginSeq;
    for (const rlc::RateLimitReplace& r : policy.replaces()) {
      out << YAML::BeginMap << YAML::Key << "name" << YAML::Value;
      EmitString(out, r.name());
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
}

void EmitDescriptors(YAML::Emitter& out,
                     const google::protobuf::RepeatedPtrField<rlc::RateLimitDescriptor>& list) {
  out << YAML::BeginSeq;
  for (const rlc::RateLimitDescriptor& d : list) {
    out << YAML::BeginMap << YAML::Key << "key" << YAML::Value;
    EmitString(out, d.key());
    if (!d.value().empty()) {
      out << YAML::Key << "value" << YAML::Value;
      EmitString(out, d.value());
    }
    if (d.has_rate_limit()) {
      out << YAML::Key << "rate_limit" << YAML::Value;
      EmitPolicy(out, d.rate_limit());
    }
    if (d.descriptors_size() > 0) {
      out << YAML::Key << "descriptors" << YAML::Value;
      EmitDescriptors(out, d.descriptors());
    }
    if (d.shadow_mode()) out << YAML::Key << "shadow_mode" << YAML::Value << true;
    if (d.detailed_metric()) out << YAML::Key << "detailed_metric" << YAML::Value << true;
    if (d.quota_mode()) out << YAML::Key << "quota_mode" << YAML::Value << true;
    if (d.has_metadata()) {
      out << YAML::Key << "metadata" << YAML::Value;
      EmitStruct(out, d.metadata());
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace

ConfigSource XdsResourceToSource(const rlc::RateLimitConfig& resource) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "domain" << YAML::Value;
  EmitString(out, resource.domain());
  if (resource.descriptors_size() > 0) {
    out << YAML::Key << "descriptors" << YAML::Value;
    EmitDescriptors(out, resource.descriptors());
  }
  out << YAML::EndMap;
  return ConfigSource{.name = absl::StrCat("xds:", resource.name()),
                      .content = std::string(out.c_str(), out.size())};
}

absl::StatusOr<std::shared_ptr<const RateLimitConfig>> ParseXdsResponse(
    const ::envoy::service::discovery::v3::DiscoveryResponse& response,
    const XdsSettings& settings) {
  if (static_cast<size_t>(response.resources_size()) > settings.max_resources) {
    return absl::InvalidArgumentError(absl::StrCat("xds: ", response.resources_size(),
                                                   " resources, more than the bound of ",
                                                   settings.max_resources));
  }
  std::vector<ConfigSource> sources;
  sources.reserve(response.resources_size());
  size_t bytes = 0;
  for (int i = 0; i < response.resources_size(); ++i) {
    const google::protobuf::Any& any = response.resources(i);
    if (any.type_url() != kRateLimitConfigTypeUrl) {
      return absl::InvalidArgumentError(absl::StrCat("xds: resource ", i, " has type '",
                                                     any.type_url(), "', expected ",
                                                     std::string(kRateLimitConfigTypeUrl)));
    }
    rlc::RateLimitConfig resource;
    if (!any.UnpackTo(&resource)) {
      return absl::InvalidArgumentError(
          absl::StrCat("xds: resource ", i, " is not a valid RateLimitConfig message"));
    }
    sources.push_back(XdsResourceToSource(resource));
    bytes += sources.back().content.size();
    if (bytes > settings.max_config_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "xds: the resources make more than ", settings.max_config_bytes, " bytes of config"));
    }
  }
  return ParseRateLimitConfig(sources, ConfigLoadOptions{.merge_domains = settings.merge_domains});
}

}  // namespace sluice::server
