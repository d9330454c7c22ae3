// What a real Envoy answers when sluiced cannot: gone (stopped), or too slow for the filter's
// timeout (SIGSTOP), on a listener with failure_mode_deny: true (500) and one without (the request
// goes on). Configs: configs/failure_mode.yaml and configs/rules.yaml, shown in docs/envoy.md.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "gtest/gtest.h"

#include "tests/envoy/envoy_test_support.h"
#include "tests/testing/envoy_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

// The filter's timeout in failure_mode.yaml.
constexpr std::chrono::milliseconds kTimeout{500};

// Whether every thread of `pid` is stopped: kill() only queues SIGSTOP, and a thread busy on
// another core may still answer a call before it takes it.
bool AllThreadsStopped(pid_t pid) {
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream stat(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // "tid (comm) S ...": the state follows the last ')', as comm may hold one.
    const size_t close = text.rfind(')');
    if (close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'T') {
      return false;
    }
  }
  return !ec;
}

class EnvoyFailureModeTest : public EnvoyTest {
 protected:
  void SetUp() override {
    EnvoyTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto redis = RedisServer::Start();
    ASSERT_TRUE(redis.ok()) << redis.status();
    redis_ = *std::move(redis);
    auto sluiced = StartSluiced(EnvoyConfigPath("rules.yaml"), redis_->Url(), dir_.path());
    ASSERT_TRUE(sluiced.ok()) << sluiced.status();
    sluiced_ = *std::move(sluiced);
    auto envoy =
        EnvoyProcess::Start({.config_template = EnvoyConfig("failure_mode.yaml"),
                             .values = {{"SLUICED_GRPC_PORT", std::to_string(sluiced_->grpc_port)}},
                             .ports = {"DENY_PORT", "ALLOW_PORT", "UPSTREAM_PORT"}});
    ASSERT_TRUE(envoy.ok()) << envoy.status();
    envoy_ = *std::move(envoy);
  }

  void TearDown() override {
    // A stopped sluiced cannot take SIGTERM's way out.
    if (sluiced_.has_value() && sluiced_->process != nullptr) sluiced_->process->Signal(SIGCONT);
  }

  // The status of one request on `listener` ("DENY_PORT" or "ALLOW_PORT"), each from a user of its
  // own so that no limit is ever reached; 0 when the exchange failed.
  int Status(const std::string& listener) {
    absl::StatusOr<BeastResponse> answer =
        EnvoyGet(envoy_->port(listener), "/", {{"x-user", "user-" + std::to_string(++users_)}});
    EXPECT_TRUE(answer.ok()) << answer.status() << Logs();
    return answer.ok() ? answer->result_int() : 0;
  }

  std::string Logs() const {
    return "\nenvoy log:\n" + envoy_->Log() + "\nsluiced log:\n" + sluiced_->Log();
  }

  TempDir dir_{"sluice-envoy-failure"};
  std::unique_ptr<RedisServer> redis_;
  std::optional<SluicedProcess> sluiced_;
  std::unique_ptr<EnvoyProcess> envoy_;
  int users_ = 0;
};

// Verifies that with sluiced gone, failure_mode_deny: true answers 500 and false lets the request
// through, and that Envoy counts both as rate limit errors.
TEST_F(EnvoyFailureModeTest, SluicedStoppedGives500WhenDenyingAndPassesWhenNot) {
  EXPECT_EQ(Status("DENY_PORT"), 200) << Logs();
  EXPECT_EQ(Status("ALLOW_PORT"), 200);
  sluiced_->Stop();
  EXPECT_EQ(Status("DENY_PORT"), 500);
  EXPECT_EQ(Status("ALLOW_PORT"), 200);
  EXPECT_EQ(envoy_->Stat("cluster.upstream.ratelimit.error").value_or(-1), 2) << Logs();
  EXPECT_EQ(envoy_->Stat("cluster.upstream.ratelimit.failure_mode_allowed").value_or(-1), 1);
}

// Verifies that a sluiced which accepts but does not answer (stopped with SIGSTOP: its sockets
// stay open) costs each request the filter's timeout, after which failure_mode_deny decides; and
// that requests are decided again once it answers.
TEST_F(EnvoyFailureModeTest, SluicedTooSlowTimesOutAndFailureModeDecides) {
  EXPECT_EQ(Status("DENY_PORT"), 200) << Logs();
  EXPECT_EQ(Status("ALLOW_PORT"), 200);
  sluiced_->process->Signal(SIGSTOP);
  ASSERT_TRUE(WaitFor([&] { return AllThreadsStopped(sluiced_->process->pid()); }, 10'000));
  for (const auto& [listener, expected] :
       {std::pair{"DENY_PORT", 500}, std::pair{"ALLOW_PORT", 200}}) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(Status(listener), expected) << listener;
    const auto waited = std::chrono::steady_clock::now() - start;
    // At least the timeout (less a little for clock granularity), and not much more.
    EXPECT_GE(waited, kTimeout - std::chrono::milliseconds(50)) << listener;
    EXPECT_LT(waited, kTimeout + std::chrono::seconds(5)) << listener;
  }
  EXPECT_EQ(envoy_->Stat("cluster.upstream.ratelimit.error").value_or(-1), 2) << Logs();
  sluiced_->process->Signal(SIGCONT);
  EXPECT_TRUE(WaitFor([&] { return Status("DENY_PORT") == 200; }, 10'000)) << Logs();
}

}  // namespace
}  // namespace sluice::testing
