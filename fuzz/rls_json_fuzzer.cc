// Fuzz target: sluiced's POST /json, from the request body to the HTTP answer.
//
// Input: a request body. It goes through HttpApi::Handle() (protobuf JSON parsing, then
// RateLimitService on a MemoryStore under a manual clock) three times: twice at one instant, so
// that small limits go over, and once a second later.
//
// Properties:
// - nothing crashes, and each request is answered exactly once, before Handle() returns (the
//   memory store completes inline);
// - the status is 200, 429 or 400: a memory store never fails, so 5xx would be a bug (a request
//   the service cannot handle must be a 400, never a 500 or a 503);
// - a 200 or 429 body is a RateLimitResponse with one status per request descriptor, and its
//   overall code is OVER_LIMIT exactly when the status is 429.
//
// Each input gets a fresh store, service and metrics, so an input replays the same way alone.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_support.h"
#include <google/protobuf/util/json_util.h>

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/admin/http_api.h"
#include "src/server/grpc/rls_proto.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/manual_clock.h"

namespace sluice::fuzz {
namespace {

using server::HttpRequest;
using server::HttpResponse;
using server::RateLimitRequest;
using server::RateLimitResponse;

// Small limits of every kind, so that a few requests reach every branch: exact and wildcard
// values, a shared wildcard counter, nesting, several limits on one node, `replaces`, deny-all,
// unlimited and shadow mode.
constexpr std::string_view kConfig = R"yaml(
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: path
    value: /login
    rate_limit: {name: login, unit: minute, requests_per_unit: 1, algorithm: gcra, burst: 2}
  - key: path
    value: /api/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 3, algorithm: sliding_window}
  - key: user
    descriptors:
      - key: tier
        value: free
        rate_limits:
          - {name: free_s, unit: second, requests_per_unit: 1, algorithm: token_bucket}
          - {name: free_d, unit: day, requests_per_unit: 5, algorithm: sliding_log}
      - key: tier
        value: paid
        rate_limit: {unit: second, requests_per_unit: 100, replaces: [{name: login}]}
  - key: blocked
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: internal
    rate_limit: {unlimited: true}
  - key: canary
    shadow_mode: true
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 1}
)yaml";

std::shared_ptr<const RateLimitConfig> Config() {
  static const std::shared_ptr<const RateLimitConfig> config = [] {
    const ConfigSource source{.name = "edge.yaml", .content = std::string(kConfig)};
    absl::StatusOr<std::shared_ptr<const RateLimitConfig>> parsed =
        ParseRateLimitConfig({&source, 1});
    SLUICE_FUZZ_CHECK(parsed.ok(), parsed.status());
    return *std::move(parsed);
  }();
  return config;
}

void CheckResponse(std::string_view body, const HttpResponse& response) {
  SLUICE_FUZZ_CHECK(response.status == 200 || response.status == 429 || response.status == 400,
                    "status " << response.status << " (" << Printable(response.body)
                              << ") for body " << Printable(body));
  if (response.status == 400) {
    SLUICE_FUZZ_CHECK(!response.body.empty(), "400 without a body");
    return;
  }
  // A 200 or 429 was a valid request; both bodies are the proto3 JSON of a response.
  RateLimitRequest request;
  SLUICE_FUZZ_CHECK(google::protobuf::util::JsonStringToMessage(std::string(body), &request).ok(),
                    "answered " << response.status << " to an unparsable body");
  RateLimitResponse parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(response.body, &parsed);
  SLUICE_FUZZ_CHECK(status.ok(), "response body does not parse: " << Printable(response.body));
  SLUICE_FUZZ_CHECK(parsed.statuses_size() == request.descriptors_size(),
                    parsed.statuses_size()
                        << " statuses for " << request.descriptors_size() << " descriptors");
  SLUICE_FUZZ_CHECK(
      (parsed.overall_code() == RateLimitResponse::OVER_LIMIT) == (response.status == 429),
      "status " << response.status << " with body " << Printable(response.body));
}

}  // namespace
}  // namespace sluice::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::fuzz;  // NOLINT(google-build-using-namespace): a C entry point.
  const std::string body(reinterpret_cast<const char*>(data), size);

  sluice::testing::ManualClock clock;
  absl::StatusOr<std::unique_ptr<sluice::MemoryStore>> store =
      sluice::MemoryStore::Create({.clock = &clock, .max_entries = 1024});
  SLUICE_FUZZ_CHECK(store.ok(), store.status());
  sluice::server::Metrics metrics;
  sluice::server::RateLimitService service(
      **store, metrics,
      {.clock = &clock, .response_headers = true, .over_limit_cache_entries = 64});
  service.SetConfig(Config());
  sluice::server::HttpApi api(service, metrics, **store);

  for (int round = 0; round < 3; ++round) {
    if (round == 2) clock.Advance(std::chrono::seconds(1));
    int answers = 0;
    std::optional<HttpResponse> response;
    api.Handle(HttpRequest{.method = "POST", .target = "/json", .body = body}, [&](HttpResponse r) {
      ++answers;
      response = std::move(r);
    });
    SLUICE_FUZZ_CHECK(answers == 1, answers << " answers to one request");
    CheckResponse(body, *response);
  }
  return 0;
}
