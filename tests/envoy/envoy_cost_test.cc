// Charges known only after the response, as LLM tokens are, limited by a real Envoy with sluiced:
// each request peeks at its user's budget on the way in (hits_addend number 0), and the cost the
// upstream reported in its x-tokens response header is charged when the stream ends (hits_addend
// format "%RESP(x-tokens)%" with apply_on_stream_done), a second call Envoy does not wait for.
// The upstream answers each request with the cost the test asked for. Configs: configs/cost.yaml
// and configs/cost_rules.yaml, shown in docs/envoy.md.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/envoy/cost_upstream.h"
#include "tests/envoy/envoy_test_support.h"
#include "tests/testing/envoy_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

// What one request through Envoy got: its status, and the budget sluiced reported for the peek
// (x-ratelimit-remaining; "" when Envoy added none).
struct Answer {
  int status = 0;
  std::string remaining;
};

// What alice's responses cost, and bob's; the budget is 100 (cost_rules.yaml).
constexpr int64_t kCost = 60;
constexpr int64_t kBobCost = 30;

class EnvoyCostTest : public EnvoyTest {
 protected:
  void SetUp() override {
    EnvoyTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto redis = RedisServer::Start();
    ASSERT_TRUE(redis.ok()) << redis.status();
    redis_ = *std::move(redis);
    auto upstream = CostUpstream::Start();
    ASSERT_TRUE(upstream.ok()) << upstream.status();
    upstream_ = *std::move(upstream);
    auto sluiced = StartSluiced(EnvoyConfigPath("cost_rules.yaml"), redis_->Url(), dir_.path());
    ASSERT_TRUE(sluiced.ok()) << sluiced.status();
    sluiced_ = *std::move(sluiced);
    auto envoy =
        EnvoyProcess::Start({.config_template = EnvoyConfig("cost.yaml"),
                             .values = {{"SLUICED_GRPC_PORT", std::to_string(sluiced_->grpc_port)},
                                        {"UPSTREAM_PORT", std::to_string(upstream_->port())}},
                             .ports = {"LISTENER_PORT"}});
    ASSERT_TRUE(envoy.ok()) << envoy.status();
    envoy_ = *std::move(envoy);
  }

  // A request of `user` to `target` whose response costs `cost` tokens.
  Answer Send(const std::string& target, const std::string& user, int64_t cost = kCost) {
    absl::StatusOr<BeastResponse> answer =
        EnvoyGet(envoy_->port("LISTENER_PORT"), target,
                 {{"x-user", user}, {"x-cost", std::to_string(cost)}});
    EXPECT_TRUE(answer.ok()) << answer.status() << Logs();
    if (!answer.ok()) return {};
    return {.status = static_cast<int>(answer->result_int()),
            .remaining = std::string((*answer)["x-ratelimit-remaining"])};
  }

  // The hits sluiced has seen for the key of descriptor `key` and `user` (detailed_metric: one
  // series per user): every charge, recorded or refused; a peek adds 0.
  int64_t Charged(const std::string& key, const std::string& user) {
    const std::string series =
        absl::StrCat(R"(ratelimit_service_rate_limit_total_hits_total{domain="llm-tokens",key=")",
                     key, "_", user, R"("})");
    return SluicedCounter(sluiced_->http_port, series).value_or(-1);
  }

  // Waits until sluiced has seen `n` hits for `key` and `user`: Envoy sends a charge after the
  // client has its answer, so a request sent before it lands would race it.
  bool WaitForCharged(const std::string& key, const std::string& user, int64_t n) {
    return WaitFor([&] { return Charged(key, user) == n; }, 10'000);
  }

  std::string Logs() const {
    return "\nenvoy log:\n" + envoy_->Log() + "\nsluiced log:\n" + sluiced_->Log();
  }

  TempDir dir_{"sluice-envoy-cost"};
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<CostUpstream> upstream_;
  std::optional<SluicedProcess> sluiced_;
  std::unique_ptr<EnvoyProcess> envoy_;
};

// Verifies a charge past what remains is recorded (debt: true): the second request starts with 40
// of 100 left and costs 60, the budget goes to -20, and the third is refused by its peek.
TEST_F(EnvoyCostTest, TheRequestAfterTheOneThatOverspentIsRefused) {
  const Answer first = Send("/v1/chat", "alice");
  EXPECT_EQ(first.status, 200) << Logs();
  EXPECT_EQ(first.remaining, "100");  // the peek found an untouched budget
  ASSERT_TRUE(WaitForCharged("user_tokens", "alice", kCost))
      << Charged("user_tokens", "alice") << Logs();

  const Answer second = Send("/v1/chat", "alice");
  EXPECT_EQ(second.status, 200) << Logs();
  EXPECT_EQ(second.remaining, "40");
  ASSERT_TRUE(WaitForCharged("user_tokens", "alice", 2 * kCost))
      << Charged("user_tokens", "alice") << Logs();

  const Answer third = Send("/v1/chat", "alice");
  EXPECT_EQ(third.status, 429) << Logs();
  EXPECT_EQ(third.remaining, "0");
  EXPECT_EQ(upstream_->answered(), 2);
}

// Verifies one user's debt leaves another's budget alone, and that a refused request charges
// nothing: Envoy's 429 has no x-tokens, so Envoy sends no charge for it.
TEST_F(EnvoyCostTest, AnotherUserIsUnaffected) {
  for (int64_t i = 1; i <= 2; ++i) {
    EXPECT_EQ(Send("/v1/chat", "alice").status, 200) << Logs();
    ASSERT_TRUE(WaitForCharged("user_tokens", "alice", i * kCost)) << Logs();
  }
  EXPECT_EQ(Send("/v1/chat", "alice").status, 429) << Logs();

  const Answer bob = Send("/v1/chat", "bob", kBobCost);
  EXPECT_EQ(bob.status, 200) << Logs();
  EXPECT_EQ(bob.remaining, "100");
  // alice's 429 ended before bob's request began, so its charge, had Envoy sent one, went first.
  ASSERT_TRUE(WaitForCharged("user_tokens", "bob", kBobCost)) << Logs();
  // What alice was charged: the costs of the two requests that reached the upstream, no more.
  EXPECT_EQ(Charged("user_tokens", "alice"), 2 * kCost);
  EXPECT_EQ(upstream_->answered(), 3);
}

// Verifies why `debt` exists: on a rule without it, the second request's charge of 60 with 40 left
// is refused, so nothing of it is recorded, and the third request still passes: each response
// that costs more than what remains is free.
TEST_F(EnvoyCostTest, WithoutDebtAChargePastWhatRemainsIsDropped) {
  EXPECT_EQ(Send("/no-debt/chat", "alice").status, 200) << Logs();
  ASSERT_TRUE(WaitForCharged("user_tokens_no_debt", "alice", kCost)) << Logs();
  EXPECT_EQ(Send("/no-debt/chat", "alice").status, 200) << Logs();
  // sluiced saw the charge (total_hits counts refused hits too), and refused it.
  ASSERT_TRUE(WaitForCharged("user_tokens_no_debt", "alice", 2 * kCost)) << Logs();

  const Answer third = Send("/no-debt/chat", "alice");
  EXPECT_EQ(third.status, 200) << "the charge past what remained was recorded" << Logs();
  EXPECT_EQ(third.remaining, "40") << "only the first charge counts";
  EXPECT_EQ(upstream_->answered(), 3);
}

}  // namespace
}  // namespace sluice::testing
