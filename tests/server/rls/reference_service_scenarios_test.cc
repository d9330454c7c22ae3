// envoyproxy/ratelimit's service unit tests (test/service/ratelimit_test.go), ported as scenarios
// on sluice's RateLimitService over the memory store and real Redis servers. The reference drives
// its service with a mocked config and cache; here the same situations are reached with a real
// config and real counters, so each scenario states the config and the requests that lead to them.
// Counts and the list of what is not ported: docs/compatibility.md, "Reference scenarios".
#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "tests/server/rls/reference_scenario_fixture.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;

constexpr std::chrono::seconds kMinute{60};
constexpr std::chrono::seconds kHour{3600};

class ReferenceServiceScenarios : public ReferenceScenarioTest {};

constexpr const char* kDifferentDomain = R"yaml(
domain: different-domain
descriptors:
  - key: foo
    value: bar
    rate_limit: {unit: minute, requests_per_unit: 10, name: key_name}
)yaml";

constexpr const char* kFooBar = R"pb(domain: "different-domain"
                                     descriptors { entries { key: "foo" value: "bar" } })pb";
constexpr const char* kFooBarHelloWorld =
    R"pb(domain: "different-domain"
         descriptors { entries { key: "foo" value: "bar" } }
         descriptors { entries { key: "hello" value: "world" } })pb";
constexpr const char* kHelloWorldFooBar =
    R"pb(domain: "different-domain"
         descriptors { entries { key: "hello" value: "world" } }
         descriptors { entries { key: "foo" value: "bar" } })pb";

// Ports service/ratelimit_test.go TestService: an unmatched descriptor is OK without a limit; a
// request with one descriptor over its limit is OVER_LIMIT while the unmatched one stays OK; a
// config that fails to load leaves the previous one in force; descriptor order does not matter.
TEST_P(ReferenceServiceScenarios, Service) {
  EnsureWindowRoom(kMinute);
  Build(kDifferentDomain);
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "test-domain"
                descriptors { entries { key: "hello" value: "world" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ASSERT_EQ(r->statuses_size(), 1);
  ExpectNoLimit(r->statuses(0));

  Admit(kFooBar, 10);
  r = Call(kFooBarHelloWorld);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  ASSERT_EQ(r->statuses_size(), 2);
  ExpectStatus(r->statuses(0), RateLimitResponse::OVER_LIMIT, 10,
               RateLimitResponse::RateLimit::MINUTE, 0);
  EXPECT_EQ(r->statuses(0).current_limit().name(), "key_name");
  ExpectNoLimit(r->statuses(1));

  // A reload that fails never reaches the service (sluiced keeps the config it has). The
  // reference's config_load_success/error counts are sluiced's main loop's, not the service's (see
  // BasicReloadConfig in reference_integration_scenarios_test.cc).
  const ConfigSource bad{.name = "bad.yaml", .content = "domain: different-domain\nbogus: 1\n"};
  EXPECT_FALSE(ParseRateLimitConfig({&bad, 1}).ok());
  r = Call(kHelloWorldFooBar);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  ExpectNoLimit(r->statuses(0));
  ExpectStatus(r->statuses(1), RateLimitResponse::OVER_LIMIT, 10,
               RateLimitResponse::RateLimit::MINUTE, 0);
  EXPECT_EQ(Counter("ratelimit.service.global_shadow_mode"), 0u);
}

// Ports service/ratelimit_test.go TestServiceGlobalShadowMode (SHADOW_MODE=true): a descriptor over
// its limit keeps OVER_LIMIT in its status, the request is OK, global_shadow_mode counts it.
TEST_P(ReferenceServiceScenarios, ServiceGlobalShadowMode) {
  EnsureWindowRoom(kMinute);
  Build(kDifferentDomain, {.global_shadow_mode = true});
  Admit(kFooBar, 10);
  absl::StatusOr<RateLimitResponse> r = Call(kFooBarHelloWorld);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ExpectStatus(r->statuses(0), RateLimitResponse::OVER_LIMIT, 10,
               RateLimitResponse::RateLimit::MINUTE, 0);
  ExpectNoLimit(r->statuses(1));
  EXPECT_EQ(Counter("ratelimit.service.global_shadow_mode"), 1u);
}

constexpr const char* kShadowRules = R"yaml(
domain: different-domain
descriptors:
  - key: foo
    value: bar
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: hello
    value: world
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: normal
    value: world
    rate_limit: {unit: minute, requests_per_unit: 10}
)yaml";

// Ports service/ratelimit_test.go TestRuleShadowMode: both descriptors' rules are in shadow mode;
// over their limits, the request and both statuses stay OK, and global_shadow_mode is not counted.
TEST_P(ReferenceServiceScenarios, RuleShadowMode) {
  EnsureWindowRoom(kMinute);
  Build(kShadowRules);
  for (int i = 0; i < 12; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(kFooBarHelloWorld);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
    EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OK);
    EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OK);
    EXPECT_EQ(r->statuses(0).current_limit().requests_per_unit(), 10u);
  }
  EXPECT_EQ(Stat("different-domain.foo_bar", "shadow_mode"), 2u);
  EXPECT_EQ(Counter("ratelimit.service.global_shadow_mode"), 0u);
}

// Ports service/ratelimit_test.go TestMixedRuleShadowMode: the first descriptor's rule is in shadow
// mode, the second's is not; both over their limits: the first OK, the second OVER_LIMIT, the
// request OVER_LIMIT.
TEST_P(ReferenceServiceScenarios, MixedRuleShadowMode) {
  EnsureWindowRoom(kMinute);
  Build(kShadowRules);
  constexpr const char* kMixed = R"pb(domain: "different-domain"
                                      descriptors { entries { key: "foo" value: "bar" } }
                                      descriptors { entries { key: "normal" value: "world" } })pb";
  Admit(kMixed, 10);
  absl::StatusOr<RateLimitResponse> r = Call(kMixed);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(Counter("ratelimit.service.global_shadow_mode"), 0u);
}

// Ports service/ratelimit_test.go TestServiceWithCustomRatelimitHeaders
// (LIMIT_RESPONSE_HEADERS_ENABLED with LIMIT_*_HEADER names): the over-limit descriptor's limit,
// remaining and reset. Documented difference: sluiced also adds Retry-After when over the limit; in
// exact-reference mode it does not (the reference's three headers).
TEST_P(ReferenceServiceScenarios, ServiceWithCustomRatelimitHeaders) {
  EnsureWindowRoom(kMinute);
  Build(kDifferentDomain, {.response_headers = true,
                           .header_names = {.limit = "A-Ratelimit-Limit",
                                            .remaining = "A-Ratelimit-Remaining",
                                            .reset = "A-Ratelimit-Reset"}});
  Admit(kFooBar, 10);
  absl::StatusOr<RateLimitResponse> r = Call(kFooBarHelloWorld);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(HeaderValue(*r, "A-Ratelimit-Limit"), "10");
  EXPECT_EQ(HeaderValue(*r, "A-Ratelimit-Remaining"), "0");
  if (exact()) {
    EXPECT_EQ(HeaderValue(*r, "Retry-After"), "<absent>");
    if (!redis()) {
      EXPECT_EQ(HeaderValue(*r, "A-Ratelimit-Reset"), "58");
    }
    EXPECT_EQ(r->response_headers_to_add_size(), 3);
    return;
  }
  if (!redis()) {
    EXPECT_EQ(HeaderValue(*r, "A-Ratelimit-Reset"), "58");
    EXPECT_EQ(HeaderValue(*r, "Retry-After"), "58");
  } else {
    EXPECT_NE(HeaderValue(*r, "A-Ratelimit-Reset"), "<absent>");
    EXPECT_NE(HeaderValue(*r, "Retry-After"), "<absent>");
  }
  EXPECT_EQ(r->response_headers_to_add_size(), 4);
}

// Ports service/ratelimit_test.go TestServiceWithDefaultRatelimitHeaders: the same under the
// default RateLimit-* names.
TEST_P(ReferenceServiceScenarios, ServiceWithDefaultRatelimitHeaders) {
  EnsureWindowRoom(kMinute);
  Build(kDifferentDomain, {.response_headers = true});
  Admit(kFooBar, 10);
  absl::StatusOr<RateLimitResponse> r = Call(kFooBarHelloWorld);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(HeaderValue(*r, "RateLimit-Limit"), "10");
  EXPECT_EQ(HeaderValue(*r, "RateLimit-Remaining"), "0");
  if (!redis()) {
    EXPECT_EQ(HeaderValue(*r, "RateLimit-Reset"), "58");
  }
}

// Ports service/ratelimit_test.go TestEmptyDomain: refused, counted as a service error.
// Documented difference in form: INVALID_ARGUMENT with sluice's message.
TEST_P(ReferenceServiceScenarios, EmptyDomain) {
  Build(kDifferentDomain);
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: ""
                descriptors { entries { key: "hello" value: "world" } })pb");
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("domain"));
  EXPECT_EQ(Counter("ratelimit.service.call.should_rate_limit.service_error"), 1u);
}

// Ports service/ratelimit_test.go TestEmptyDescriptors.
TEST_P(ReferenceServiceScenarios, EmptyDescriptors) {
  Build(kDifferentDomain);
  absl::StatusOr<RateLimitResponse> r = Call(R"pb(domain: "test-domain")pb");
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("descriptor"));
  EXPECT_EQ(Counter("ratelimit.service.call.should_rate_limit.service_error"), 1u);
}

// Ports service/ratelimit_test.go TestCacheError: the store fails, the call fails and counts a
// redis_error. Documented difference: UNAVAILABLE (the reference's error is UNKNOWN).
TEST_P(ReferenceServiceScenarios, CacheError) {
  Build(kDifferentDomain);
  store_->Fail(absl::UnavailableError("cache error"));
  absl::StatusOr<RateLimitResponse> r = Call(kFooBar);
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("cache error"));
  EXPECT_EQ(Counter("ratelimit.service.call.should_rate_limit.redis_error"), 1u);
}

// Ports service/ratelimit_test.go TestUnlimited: a limited, an unmatched and an unlimited
// descriptor; the unlimited one reports 4294967295 remaining and never reaches the store.
TEST_P(ReferenceServiceScenarios, Unlimited) {
  EnsureWindowRoom(kMinute);
  Build(R"yaml(
domain: some-domain
descriptors:
  - key: foo
    value: bar
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: baz
    value: qux
    rate_limit: {unlimited: true}
)yaml");
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "some-domain"
                descriptors { entries { key: "foo" value: "bar" } }
                descriptors { entries { key: "hello" value: "world" } }
                descriptors { entries { key: "baz" value: "qux" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ASSERT_EQ(r->statuses_size(), 3);
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 10, RateLimitResponse::RateLimit::MINUTE, 9);
  ExpectNoLimit(r->statuses(1));
  ExpectNoLimit(r->statuses(2), std::numeric_limits<uint32_t>::max());
  store_->Fail(absl::UnavailableError("down"));
  r = Call(R"pb(domain: "some-domain"
                descriptors { entries { key: "baz" value: "qux" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(store_->failed(), 0);
}

constexpr const char* kQuotaDomain = R"yaml(
domain: quota-domain
descriptors:
  - key: regular
    value: limit
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: quota
    value: limit
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: quota1
    value: limit
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: quota2
    value: limit
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 3}
)yaml";

constexpr const char* kRegular =
    R"pb(domain: "quota-domain"
         descriptors { entries { key: "regular" value: "limit" } })pb";
constexpr const char* kQuota = R"pb(domain: "quota-domain"
                                    descriptors { entries { key: "quota" value: "limit" } })pb";
constexpr const char* kRegularQuota =
    R"pb(domain: "quota-domain"
         descriptors { entries { key: "regular" value: "limit" } }
         descriptors { entries { key: "quota" value: "limit" } })pb";
constexpr const char* kQuota1Quota2 =
    R"pb(domain: "quota-domain"
         descriptors { entries { key: "quota1" value: "limit" } }
         descriptors { entries { key: "quota2" value: "limit" } })pb";

// Ports service/ratelimit_test.go TestServicePerDescriptorQuotaMode: the regular limit over and the
// quota-mode one under: OVER_LIMIT overall, the quota-mode descriptor OK.
TEST_P(ReferenceServiceScenarios, ServicePerDescriptorQuotaMode) {
  EnsureWindowRoom(kMinute);
  Build(kQuotaDomain);
  Admit(kRegular, 5);
  absl::StatusOr<RateLimitResponse> r = Call(kRegularQuota);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  ExpectStatus(r->statuses(0), RateLimitResponse::OVER_LIMIT, 5,
               RateLimitResponse::RateLimit::MINUTE, 0);
  ExpectStatus(r->statuses(1), RateLimitResponse::OK, 3, RateLimitResponse::RateLimit::MINUTE, 2);
}

// Ports service/ratelimit_test.go TestServiceMixedPerDescriptorModes: the regular limit under, the
// only quota-mode descriptor over: every quota-mode descriptor is over, so OVER_LIMIT overall.
// Documented difference (all-or-nothing): the rejected request consumes nothing of the regular
// limit, which still has all 5 left. In exact-reference mode the hit is counted, as the reference
// counts it: 4 left (the reference's mocked cache answers 0 there; a real counter has 4).
TEST_P(ReferenceServiceScenarios, ServiceMixedPerDescriptorModes) {
  EnsureWindowRoom(kMinute);
  Build(kQuotaDomain);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(kQuota).ok());
  absl::StatusOr<RateLimitResponse> r = Call(kRegularQuota);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 5, RateLimitResponse::RateLimit::MINUTE,
               exact() ? 4 : 5);
  ExpectStatus(r->statuses(1), RateLimitResponse::OVER_LIMIT, 3,
               RateLimitResponse::RateLimit::MINUTE, 0);
}

// Ports service/ratelimit_test.go TestServiceMixedPerDescriptorModesUnderLimit: both under, OK.
TEST_P(ReferenceServiceScenarios, ServiceMixedPerDescriptorModesUnderLimit) {
  EnsureWindowRoom(kMinute);
  Build(kQuotaDomain);
  absl::StatusOr<RateLimitResponse> r = Call(kRegularQuota);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 5, RateLimitResponse::RateLimit::MINUTE, 4);
  ExpectStatus(r->statuses(1), RateLimitResponse::OK, 3, RateLimitResponse::RateLimit::MINUTE, 2);
}

// Ports service/ratelimit_test.go TestServiceQuotaModeOnlyAllOverTheLimit: two quota-mode
// descriptors, both over: OVER_LIMIT.
TEST_P(ReferenceServiceScenarios, ServiceQuotaModeOnlyAllOverTheLimit) {
  EnsureWindowRoom(kMinute);
  Build(kQuotaDomain);
  Admit(kQuota1Quota2, 3);  // quota2 (3 per minute) is now exhausted, quota1 has 2 left.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(Call(kQuota1Quota2).ok());
  absl::StatusOr<RateLimitResponse> r = Call(kQuota1Quota2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OVER_LIMIT);
  ExpectStatus(r->statuses(0), RateLimitResponse::OVER_LIMIT, 5,
               RateLimitResponse::RateLimit::MINUTE, 0);
  ExpectStatus(r->statuses(1), RateLimitResponse::OVER_LIMIT, 3,
               RateLimitResponse::RateLimit::MINUTE, 0);
}

// Ports service/ratelimit_test.go TestServiceQuotaModeOnlySomeOverTheLimit: one of two quota-mode
// descriptors over: OK overall, the over one OVER_LIMIT in its status.
TEST_P(ReferenceServiceScenarios, ServiceQuotaModeOnlySomeOverTheLimit) {
  EnsureWindowRoom(kMinute);
  Build(kQuotaDomain);
  Admit(kQuota1Quota2, 3);
  absl::StatusOr<RateLimitResponse> r = Call(kQuota1Quota2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  ExpectStatus(r->statuses(0), RateLimitResponse::OK, 5, RateLimitResponse::RateLimit::MINUTE, 1);
  ExpectStatus(r->statuses(1), RateLimitResponse::OVER_LIMIT, 3,
               RateLimitResponse::RateLimit::MINUTE, 0);
}

// Ports service/ratelimit_test.go TestServiceQuotaModeWithShadowMode: global shadow mode over two
// quota-mode descriptors that are both over: OK overall, both statuses OVER_LIMIT, counted once.
TEST_P(ReferenceServiceScenarios, ServiceQuotaModeWithShadowMode) {
  EnsureWindowRoom(kMinute);
  Build(kQuotaDomain, {.global_shadow_mode = true});
  Admit(kQuota1Quota2, 5);
  absl::StatusOr<RateLimitResponse> r = Call(kQuota1Quota2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(Counter("ratelimit.service.global_shadow_mode"), 1u);
}

// Ports service/ratelimit_test.go TestServiceMixedModeWithShadowMode: global shadow mode over a
// regular and a quota-mode descriptor, both over: OK overall, both statuses OVER_LIMIT.
TEST_P(ReferenceServiceScenarios, ServiceMixedModeWithShadowMode) {
  EnsureWindowRoom(kMinute);
  Build(kQuotaDomain, {.global_shadow_mode = true});
  Admit(kRegular, 5);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(kQuota).ok());
  const uint64_t shadowed_before = Counter("ratelimit.service.global_shadow_mode");
  absl::StatusOr<RateLimitResponse> r = Call(kRegularQuota);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(Counter("ratelimit.service.global_shadow_mode"), shadowed_before + 1);
}

constexpr const char* kMetadataDomain = R"yaml(
domain: quota-domain
descriptors:
  - key: regular
    value: limit
    rate_limit: {unit: minute, requests_per_unit: 10}
    metadata: {name: service_1}
  - key: quota
    value: limit
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
    metadata: {name: service_2}
  - key: other
    value: limit
    rate_limit: {unit: minute, requests_per_unit: 5}
    metadata: {some_other_name: service_2}
)yaml";

// The response's metadata object (dynamic_metadata.metadata), which must be present.
const google::protobuf::Struct& PassedMetadata(const RateLimitResponse& r) {
  EXPECT_TRUE(r.has_dynamic_metadata());
  const auto& fields = r.dynamic_metadata().fields();
  static const google::protobuf::Struct kEmpty;
  auto it = fields.find("metadata");
  if (it == fields.end() || !it->second.has_struct_value()) {
    ADD_FAILURE() << "no metadata in " << r.dynamic_metadata().DebugString();
    return kEmpty;
  }
  return it->second.struct_value();
}

std::string StringField(const google::protobuf::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "<absent>" : it->second.string_value();
}

// Ports service/ratelimit_test.go TestMetadataReturnedForPassedDescriptors (QUOTA_MODE and
// RESPONSE_DYNAMIC_METADATA): the first descriptor passes, the second is over: only the first's
// metadata is returned, and the request is OK (not every quota descriptor is over).
TEST_P(ReferenceServiceScenarios, MetadataReturnedForPassedDescriptors) {
  EnsureWindowRoom(kMinute);
  Build(kMetadataDomain, {.global_quota_mode = true, .response_dynamic_metadata = true});
  Admit(R"pb(domain: "quota-domain"
             descriptors { entries { key: "quota" value: "limit" } })pb",
        5);
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "quota-domain"
                descriptors { entries { key: "regular" value: "limit" } }
                descriptors { entries { key: "quota" value: "limit" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(r->statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(StringField(PassedMetadata(*r), "name"), "service_1");
}

// Ports service/ratelimit_test.go TestMetadataReturnedForAllPassedDescriptors: both pass; their
// metadata merge.
TEST_P(ReferenceServiceScenarios, MetadataReturnedForAllPassedDescriptors) {
  EnsureWindowRoom(kMinute);
  Build(kMetadataDomain, {.global_quota_mode = true, .response_dynamic_metadata = true});
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "quota-domain"
                descriptors { entries { key: "regular" value: "limit" } }
                descriptors { entries { key: "other" value: "limit" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->overall_code(), RateLimitResponse::OK);
  const google::protobuf::Struct& passed = PassedMetadata(*r);
  EXPECT_EQ(StringField(passed, "name"), "service_1");
  EXPECT_EQ(StringField(passed, "some_other_name"), "service_2");
}

// Ports service/ratelimit_test.go TestOverlappingMetadataReturnsTheFirstValue: both pass and set
// the same key: the first descriptor's value wins.
TEST_P(ReferenceServiceScenarios, OverlappingMetadataReturnsTheFirstValue) {
  EnsureWindowRoom(kMinute);
  Build(kMetadataDomain, {.global_quota_mode = true, .response_dynamic_metadata = true});
  absl::StatusOr<RateLimitResponse> r =
      Call(R"pb(domain: "quota-domain"
                descriptors { entries { key: "regular" value: "limit" } }
                descriptors { entries { key: "quota" value: "limit" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(StringField(PassedMetadata(*r), "name"), "service_1");
  r = Call(R"pb(domain: "quota-domain"
                descriptors { entries { key: "quota" value: "limit" } }
                descriptors { entries { key: "regular" value: "limit" } })pb");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(StringField(PassedMetadata(*r), "name"), "service_2");
}

// Ports the reference's integration script multiservice-tokenquota.sh (examples/ratelimit/config
// example.yaml, examples/envoy/proxy.yaml): on the request path Envoy checks (service, service_1)
// and (service, service_2) with 0 hits, both quota-mode, and routes to the service named by the
// returned metadata; on the response path it debits the service that answered with 1 hit.
// service_1 has 1 per minute, service_2 has 2. The reference (and exact-reference mode) serves 1,
// 1, 2, 2, 2 and rejects the 6th, as the script expects: its 0-hit check passes at exactly the
// limit, so each service serves one more request than its limit. Documented difference: by
// default a 0-hit check is over once the limit is used up, so the services serve 1, 2, 2 and the
// 4th request is rejected: each exactly its limit.
TEST_P(ReferenceServiceScenarios, MultiserviceTokenQuota) {
  EnsureWindowRoom(kMinute);
  Build(R"yaml(
domain: rl
descriptors:
  - key: service
    value: service_1
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
    metadata: {service_with_quota: {name: service_1}}
  - key: service
    value: service_2
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
    metadata: {service_with_quota: {name: service_2}}
)yaml",
        {.response_dynamic_metadata = true});
  std::vector<std::string> served;
  for (int i = 0; i < 6; ++i) {
    absl::StatusOr<RateLimitResponse> r = Call(R"pb(
      domain: "rl"
      descriptors {
        entries { key: "service" value: "service_1" }
        hits_addend { value: 0 }
      }
      descriptors {
        entries { key: "service" value: "service_2" }
        hits_addend { value: 0 }
      })pb");
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->overall_code() == RateLimitResponse::OVER_LIMIT) {
      served.push_back("rejected");
      continue;
    }
    const std::string name = r->dynamic_metadata()
                                 .fields()
                                 .at("metadata")
                                 .struct_value()
                                 .fields()
                                 .at("service_with_quota")
                                 .struct_value()
                                 .fields()
                                 .at("name")
                                 .string_value();
    served.push_back(name);
    // The response path's debit; its answer does not matter to Envoy.
    ASSERT_TRUE(Call(absl::StrCat(R"pb(domain: "rl"
                                       descriptors { entries { key: "service" value: ")pb",
                                  name, R"pb(" } })pb"))
                    .ok());
  }
  if (exact()) {
    EXPECT_THAT(served, ::testing::ElementsAre("service_1", "service_1", "service_2", "service_2",
                                               "service_2", "rejected"));
  } else {
    EXPECT_THAT(served, ::testing::ElementsAre("service_1", "service_2", "service_2", "rejected",
                                               "rejected", "rejected"));
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, ReferenceServiceScenarios, kAllStores, StoreName);

}  // namespace
}  // namespace sluice::server
