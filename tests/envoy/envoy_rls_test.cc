// sluiced behind a real Envoy's HTTP rate limit filter: descriptors from a request header, from the
// client's address and from a fixed key; Envoy's 429 at the limit; the X-RateLimit headers Envoy
// adds and the RateLimit headers sluiced asks it to add. Configs: configs/rls.yaml and
// configs/rules.yaml, shown in docs/envoy.md.
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "tests/envoy/envoy_test_support.h"
#include "tests/testing/envoy_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

class EnvoyRlsTest : public EnvoyTest {
 protected:
  void SetUp() override {
    EnvoyTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto redis = RedisServer::Start();
    ASSERT_TRUE(redis.ok()) << redis.status();
    redis_ = *std::move(redis);
    auto sluiced = StartSluiced(EnvoyConfigPath("rules.yaml"), redis_->Url(), dir_.path(),
                                {"--response-headers"});
    ASSERT_TRUE(sluiced.ok()) << sluiced.status();
    sluiced_ = *std::move(sluiced);
    auto envoy =
        EnvoyProcess::Start({.config_template = EnvoyConfig("rls.yaml"),
                             .values = {{"SLUICED_GRPC_PORT", std::to_string(sluiced_->grpc_port)}},
                             .ports = {"LISTENER_PORT", "UPSTREAM_PORT"}});
    ASSERT_TRUE(envoy.ok()) << envoy.status();
    envoy_ = *std::move(envoy);
  }

  // The answer through Envoy; a failed exchange fails the test and answers status 0.
  BeastResponse Get(const std::string& target, const Headers& headers = {}) {
    absl::StatusOr<BeastResponse> answer = EnvoyGet(envoy_->port("LISTENER_PORT"), target, headers);
    EXPECT_TRUE(answer.ok()) << answer.status() << Logs();
    return answer.ok() ? *std::move(answer) : BeastResponse{};
  }

  int Status(const std::string& target, const Headers& headers = {}) {
    return Get(target, headers).result_int();
  }

  std::string Logs() const {
    return "\nenvoy log:\n" + envoy_->Log() + "\nsluiced log:\n" + sluiced_->Log();
  }

  TempDir dir_{"sluice-envoy-rls"};
  std::unique_ptr<RedisServer> redis_;
  std::optional<SluicedProcess> sluiced_;
  std::unique_ptr<EnvoyProcess> envoy_;
};

int64_t SecondsIn(const BeastResponse& answer, const std::string& header) {
  int64_t seconds = -1;
  return absl::SimpleAtoi(std::string(answer[header]), &seconds) ? seconds : -1;
}

// Verifies each x-user value has its 3 an hour, the 4th is Envoy's 429, and Envoy reports each
// decision in X-RateLimit-* (draft 03), from sluiced's descriptor status.
TEST_F(EnvoyRlsTest, RequestHeaderDescriptorAdmitsTheLimitThenEnvoyAnswers429) {
  const Headers alice = {{"x-user", "alice"}};
  for (int i = 0; i < 3; ++i) {
    const BeastResponse answer = Get("/user", alice);
    ASSERT_EQ(answer.result_int(), 200) << "request " << i << Logs();
    EXPECT_EQ(answer.body(), "upstream\n");
    EXPECT_EQ(answer["x-ratelimit-limit"], "3, 3;w=3600");
    EXPECT_EQ(answer["x-ratelimit-remaining"], std::to_string(2 - i));
    EXPECT_GT(SecondsIn(answer, "x-ratelimit-reset"), 0);
    EXPECT_LE(SecondsIn(answer, "x-ratelimit-reset"), 3600);
  }
  const BeastResponse refused = Get("/user", alice);
  EXPECT_EQ(refused.result_int(), 429) << Logs();
  EXPECT_EQ(refused["x-envoy-ratelimited"], "true");
  EXPECT_EQ(refused["x-ratelimit-limit"], "3, 3;w=3600");
  EXPECT_EQ(refused["x-ratelimit-remaining"], "0");

  // Another user has a counter of its own.
  const BeastResponse bob = Get("/user", {{"x-user", "bob"}});
  EXPECT_EQ(bob.result_int(), 200);
  EXPECT_EQ(bob["x-ratelimit-remaining"], "2");

  // Without the header the action yields no descriptor, and Envoy does not call sluiced at all.
  for (int i = 0; i < 5; ++i) {
    const BeastResponse anonymous = Get("/user");
    EXPECT_EQ(anonymous.result_int(), 200);
    EXPECT_EQ(anonymous["x-ratelimit-limit"], "");
  }
  EXPECT_EQ(envoy_->Stat("cluster.upstream.ratelimit.ok").value_or(-1), 4);
  EXPECT_EQ(envoy_->Stat("cluster.upstream.ratelimit.over_limit").value_or(-1), 1);
  EXPECT_EQ(envoy_->Stat("cluster.upstream.ratelimit.error").value_or(0), 0);
}

// Verifies remote_address is the connection's peer: with use_remote_address, a forged
// X-Forwarded-For does not buy a new counter.
TEST_F(EnvoyRlsTest, RemoteAddressDescriptorIsTheConnectionsPeer) {
  EXPECT_EQ(Status("/ip"), 200) << Logs();
  EXPECT_EQ(Status("/ip"), 200);
  EXPECT_EQ(Status("/ip"), 429);
  EXPECT_EQ(Status("/ip", {{"x-forwarded-for", "203.0.113.7"}}), 429);
  // The nested rule matched: generic_key=per-ip, then remote_address=127.0.0.1.
  EXPECT_EQ(SluicedCounter(sluiced_->http_port,
                           "ratelimit_service_rate_limit_over_limit_total{domain=\"envoy-e2e\","
                           "key=\"generic_key_per-ip.remote_address\"}")
                .value_or(-1),
            2)
      << Logs();
}

// Verifies a generic_key descriptor counts every request of its route together, whoever sends it.
TEST_F(EnvoyRlsTest, GenericKeyDescriptorCountsTheWholeRoute) {
  EXPECT_EQ(Status("/global", {{"x-user", "alice"}}), 200) << Logs();
  EXPECT_EQ(Status("/global", {{"x-user", "bob"}}), 200);
  EXPECT_EQ(Status("/global"), 200);
  EXPECT_EQ(Status("/global", {{"x-user", "carol"}}), 200);
  EXPECT_EQ(Status("/global", {{"x-user", "dave"}}), 429);
  // The other routes' counters are untouched.
  EXPECT_EQ(Status("/user", {{"x-user", "alice"}}), 200);
  EXPECT_EQ(Status("/ip"), 200);
}

// Verifies what sluiced --response-headers adds reaches the client through Envoy: RateLimit-*
// on every answer and, on the 429, Retry-After until the window ends.
TEST_F(EnvoyRlsTest, SluicedResponseHeadersReachTheClient) {
  const Headers erin = {{"x-user", "erin"}};
  const BeastResponse first = Get("/user", erin);
  ASSERT_EQ(first.result_int(), 200) << Logs();
  EXPECT_EQ(first["ratelimit-limit"], "3");
  EXPECT_EQ(first["ratelimit-remaining"], "2");
  EXPECT_GT(SecondsIn(first, "ratelimit-reset"), 0);
  EXPECT_EQ(first["retry-after"], "");
  Get("/user", erin);
  Get("/user", erin);
  const BeastResponse refused = Get("/user", erin);
  ASSERT_EQ(refused.result_int(), 429);
  EXPECT_EQ(refused["ratelimit-remaining"], "0");
  const int64_t retry_after = SecondsIn(refused, "retry-after");
  EXPECT_GT(retry_after, 0);
  EXPECT_LE(retry_after, 3600);
  EXPECT_EQ(retry_after, SecondsIn(refused, "ratelimit-reset"));
}

}  // namespace
}  // namespace sluice::testing
