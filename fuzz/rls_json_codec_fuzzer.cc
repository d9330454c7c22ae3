// Fuzz target: the /json codec (src/server/admin/rls_json.h) against protobuf's JSON util.
//
// Input: a request body.
//
// Properties:
// - ParseRateLimitRequestJson() accepts exactly what JsonStringToMessage() accepts, with an equal
//   message, and otherwise rejects it with protobuf's reason;
// - its fast path alone never accepts an input that protobuf rejects or reads differently (so the
//   fallback cannot hide a fast-path bug);
// - for a response derived from the parsed request (its strings, numbers, enums and durations,
//   valid or not), RateLimitResponseToJson() writes the same bytes as MessageToJsonString().
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include "src/server/admin/rls_json.h"
#include "src/server/rls/rate_limit_service.h"

namespace sluice::fuzz {
namespace {

using google::protobuf::util::MessageDifferencer;
using server::RateLimitRequest;
using server::RateLimitResponse;

// A response with every field the writer handles, filled from `request`.
RateLimitResponse ResponseFrom(const RateLimitRequest& request) {
  RateLimitResponse r;
  // Codes 0..3: three named ones and one without a name.
  r.set_overall_code(static_cast<RateLimitResponse::Code>(request.hits_addend() % 4));
  for (const auto& d : request.descriptors()) {
    RateLimitResponse::DescriptorStatus* s = r.add_statuses();
    s->set_code(static_cast<RateLimitResponse::Code>(d.entries_size() % 4));
    if (d.has_limit()) {
      s->mutable_current_limit()->set_requests_per_unit(d.limit().requests_per_unit());
      s->mutable_current_limit()->set_unit(
          static_cast<RateLimitResponse::RateLimit::Unit>(d.limit().unit()));
    }
    for (const auto& e : d.entries()) {
      if (s->current_limit().name().empty()) s->mutable_current_limit()->set_name(e.key());
      auto* h = r.add_response_headers_to_add();
      h->set_key(e.key());
      h->set_value(e.value());
      r.add_request_headers_to_add()->set_raw_value(e.value());
    }
    if (d.has_hits_addend()) {
      // Seconds a little beyond both limits (315576000000) and nanos of either sign, so that
      // mismatched signs and out-of-range values occur too.
      const uint64_t v = d.hits_addend().value();
      s->set_limit_remaining(static_cast<uint32_t>(v));
      auto* reset = s->mutable_duration_until_reset();
      reset->set_seconds(static_cast<int64_t>(v % 631'152'000'004) - 315'576'000'002);
      reset->set_nanos(
          static_cast<int32_t>(static_cast<int64_t>((v / 7) % 2'000'000'001) - 1'000'000'000));
    }
  }
  r.set_raw_body(request.domain());
  return r;
}

}  // namespace
}  // namespace sluice::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::fuzz;  // NOLINT(google-build-using-namespace): a C entry point.
  const std::string body(reinterpret_cast<const char*>(data), size);

  RateLimitRequest reference;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto expected = google::protobuf::util::JsonStringToMessage(body, &reference, options);

  RateLimitRequest parsed;
  const absl::Status status = sluice::server::ParseRateLimitRequestJson(body, &parsed);
  SLUICE_FUZZ_CHECK(status.ok() == expected.ok(), "protobuf says '" << expected.message()
                                                                    << "', we say " << status
                                                                    << " for " << Printable(body));
  if (status.ok()) {
    SLUICE_FUZZ_CHECK(MessageDifferencer::Equals(parsed, reference),
                      "read " << parsed.ShortDebugString() << ", protobuf "
                              << reference.ShortDebugString() << " from " << Printable(body));
  } else {
    const std::string want = "bad RateLimitRequest JSON: " + std::string(expected.message());
    SLUICE_FUZZ_CHECK(std::string(status.message()) == want,
                      "message " << status << ", want " << want << " for " << Printable(body));
  }

  RateLimitRequest fast;
  if (sluice::internal::ParseRateLimitRequestJsonFast(body, &fast)) {
    SLUICE_FUZZ_CHECK(expected.ok(), "fast path accepted what protobuf rejects ("
                                         << expected.message() << "): " << Printable(body));
    SLUICE_FUZZ_CHECK(MessageDifferencer::Equals(fast, reference),
                      "fast path read " << fast.ShortDebugString() << ", protobuf "
                                        << reference.ShortDebugString() << " from "
                                        << Printable(body));
  }

  if (expected.ok()) {
    const RateLimitResponse response = ResponseFrom(reference);
    std::string want;
    google::protobuf::util::JsonPrintOptions print;
    print.preserve_proto_field_names = false;
    (void)google::protobuf::util::MessageToJsonString(response, &want, print);
    const std::string got = sluice::server::RateLimitResponseToJson(response);
    SLUICE_FUZZ_CHECK(got == want, "wrote " << Printable(got) << "\n  protobuf " << Printable(want)
                                            << "\n  for " << response.ShortDebugString());
  }
  return 0;
}
