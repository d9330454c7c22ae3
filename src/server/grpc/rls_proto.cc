#include "src/server/grpc/rls_proto.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include <google/protobuf/util/json_util.h>

namespace sluice::server {
namespace {

using ProtoLimit = RateLimitResponse::RateLimit;

ProtoLimit::Unit ToProtoUnit(RateLimitUnit unit) {
  switch (unit) {
    case RateLimitUnit::kSecond:
      return ProtoLimit::SECOND;
    case RateLimitUnit::kMinute:
      return ProtoLimit::MINUTE;
    case RateLimitUnit::kHour:
      return ProtoLimit::HOUR;
    case RateLimitUnit::kDay:
      return ProtoLimit::DAY;
    case RateLimitUnit::kWeek:
      return ProtoLimit::WEEK;
    case RateLimitUnit::kMonth:
      return ProtoLimit::MONTH;
    case RateLimitUnit::kYear:
      return ProtoLimit::YEAR;
  }
  return ProtoLimit::UNKNOWN;
}

// Maps an override's unit (envoy.type.v3.RateLimitUnit) to ours.
absl::StatusOr<RateLimitUnit> OverrideUnit(int unit) {
  switch (unit) {
    case envoy::type::v3::SECOND:
      return RateLimitUnit::kSecond;
    case envoy::type::v3::MINUTE:
      return RateLimitUnit::kMinute;
    case envoy::type::v3::HOUR:
      return RateLimitUnit::kHour;
    case envoy::type::v3::DAY:
      return RateLimitUnit::kDay;
    case envoy::type::v3::WEEK:
      return RateLimitUnit::kWeek;
    case envoy::type::v3::MONTH:
      return RateLimitUnit::kMonth;
    case envoy::type::v3::YEAR:
      return RateLimitUnit::kYear;
    default:
      return absl::InvalidArgumentError(absl::StrCat("limit.unit: unknown unit ", unit));
  }
}

}  // namespace

absl::StatusOr<RlsRequest> FromProto(const RateLimitRequest& proto) {
  RlsRequest request{.domain = proto.domain(), .hits_addend = proto.hits_addend()};
  request.descriptors.resize(proto.descriptors_size());
  for (int i = 0; i < proto.descriptors_size(); ++i) {
    const auto& d = proto.descriptors(i);
    RlsDescriptor& out = request.descriptors[i];
    out.entries.reserve(d.entries_size());
    for (const auto& e : d.entries()) out.entries.push_back({e.key(), e.value()});
    if (d.has_hits_addend()) out.hits_addend = d.hits_addend().value();
    out.is_negative_hits = d.is_negative_hits();
    if (d.has_limit()) {
      absl::StatusOr<RateLimitUnit> unit = OverrideUnit(d.limit().unit());
      if (!unit.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("descriptors[", i, "].", unit.status().message()));
      }
      uint32_t multiplier = 1;
      if (d.limit().has_unit_multiplier()) {
        multiplier = d.limit().unit_multiplier().value();
        // A window longer than a store keeps (kMaxPeriod, 366 days) is refused here, by name.
        if (multiplier == 0 || multiplier > kMaxPeriod / RateLimitUnitDuration(*unit)) {
          return absl::InvalidArgumentError(
              absl::StrCat("descriptors[", i,
                           "].limit.unit_multiplier: must be at least 1, and the window at most "
                           "366 days"));
        }
      }
      out.limit = LimitOverride{.requests_per_unit = d.limit().requests_per_unit(),
                                .unit = *unit,
                                .unit_multiplier = multiplier};
    }
  }
  return request;
}

RateLimitResponse ToProto(const RlsResponse& response) {
  RateLimitResponse proto;
  proto.set_overall_code(response.overall_code == RlsCode::kOverLimit
                             ? RateLimitResponse::OVER_LIMIT
                             : RateLimitResponse::OK);
  for (const RlsStatus& s : response.statuses) {
    auto* status = proto.add_statuses();
    status->set_code(s.code == RlsCode::kOverLimit ? RateLimitResponse::OVER_LIMIT
                                                   : RateLimitResponse::OK);
    status->set_limit_remaining(s.limit_remaining);
    if (!s.current_limit.has_value()) continue;
    ProtoLimit* limit = status->mutable_current_limit();
    limit->set_requests_per_unit(s.current_limit->requests_per_unit);
    limit->set_unit(ToProtoUnit(s.current_limit->unit));
    if (s.current_limit->unit_multiplier > 1) {
      limit->mutable_unit_multiplier()->set_value(s.current_limit->unit_multiplier);
    }
    if (!s.current_limit->name.empty()) limit->set_name(s.current_limit->name);
    status->mutable_duration_until_reset()->set_seconds(s.reset_seconds);
  }
  for (const RlsHeader& h : response.headers) {
    auto* header = proto.add_response_headers_to_add();
    header->set_key(h.name);
    header->set_value(h.value);
  }
  if (!response.dynamic_metadata_json.empty()) {
    // The service wrote the object (rls_metadata.h); protobuf reads it as a Struct.
    (void)google::protobuf::util::JsonStringToMessage(response.dynamic_metadata_json,
                                                      proto.mutable_dynamic_metadata());
  }
  return proto;
}

void ShouldRateLimit(RateLimitService& service, const RateLimitRequest& request,
                     ShouldRateLimitCallback done) {
  absl::StatusOr<RlsRequest> parsed = FromProto(request);
  if (!parsed.ok()) {
    service.ReportInvalidRequest();
    std::move(done)(parsed.status());
    return;
  }
  service.Decide(*parsed, [done = std::move(done)](absl::StatusOr<RlsResponse> r) mutable {
    if (!r.ok()) {
      std::move(done)(r.status());
      return;
    }
    std::move(done)(ToProto(*r));
  });
}

}  // namespace sluice::server
