// Two sluiced behind one Envoy cluster (round robin), deciding in one redis-server: the limit holds
// in total, exactly, whichever instance each call reaches. Configs: configs/two_sluiced.yaml and
// configs/rules.yaml, shown in docs/envoy.md.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "tests/envoy/envoy_test_support.h"
#include "tests/testing/envoy_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

constexpr const char* kHits =
    "ratelimit_service_rate_limit_total_hits_total{domain=\"envoy-e2e\",key=\"generic_key_"
    "shared\"}";

class EnvoySharedLimitTest : public EnvoyTest {};

// Verifies 60 requests from 4 clients at once admit exactly the 20 an hour of the rule, with the
// calls spread over both sluiced.
TEST_F(EnvoySharedLimitTest, TwoSluicedOnOneRedisAdmitExactlyTheLimit) {
  TempDir dir("sluice-envoy-shared");
  auto redis = RedisServer::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  auto a = StartSluiced(EnvoyConfigPath("rules.yaml"), (*redis)->Url(), dir.path());
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = StartSluiced(EnvoyConfigPath("rules.yaml"), (*redis)->Url(), dir.path());
  ASSERT_TRUE(b.ok()) << b.status();
  auto envoy =
      EnvoyProcess::Start({.config_template = EnvoyConfig("two_sluiced.yaml"),
                           .values = {{"SLUICED_A_GRPC_PORT", std::to_string(a->grpc_port)},
                                      {"SLUICED_B_GRPC_PORT", std::to_string(b->grpc_port)}},
                           .ports = {"LISTENER_PORT", "UPSTREAM_PORT"}});
  ASSERT_TRUE(envoy.ok()) << envoy.status();
  const int port = (*envoy)->port("LISTENER_PORT");

  constexpr int kClients = 4;
  constexpr int kRequestsEach = 15;
  std::atomic<int> admitted = 0;
  std::atomic<int> refused = 0;
  std::atomic<int> other = 0;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < kRequestsEach; ++i) {
        absl::StatusOr<BeastResponse> answer = EnvoyGet(port, "/");
        const int status = answer.ok() ? answer->result_int() : 0;
        (status == 200 ? admitted : status == 429 ? refused : other)++;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const std::string logs = "\nenvoy log:\n" + (*envoy)->Log() + "\nsluiced a log:\n" + a->Log() +
                           "\nsluiced b log:\n" + b->Log();
  EXPECT_EQ(admitted, 20) << logs;
  EXPECT_EQ(refused, 40);
  EXPECT_EQ(other, 0);
  // No call failed open: each one was decided by a sluiced.
  EXPECT_EQ((*envoy)->Stat("cluster.upstream.ratelimit.error").value_or(0), 0) << logs;
  // Round robin over the two: each had half of the calls.
  EXPECT_EQ(SluicedCounter(a->http_port, kHits).value_or(-1), 30) << logs;
  EXPECT_EQ(SluicedCounter(b->http_port, kHits).value_or(-1), 30) << logs;
}

}  // namespace
}  // namespace sluice::testing
