// Envoy's quota filter (envoy.filters.http.rate_limit_quota) reporting to sluiced's Rate Limit
// Quota Service: the filter enforces, in Envoy, the token buckets sluiced assigns per bucket
// (docs/rlqs.md). Envoy 1.40 reports every 5 s whatever reporting_interval says, so each test
// waits for reports by sluiced's counters and measures over a few seconds after them. Configs:
// configs/rlqs.yaml, configs/rlqs_rules.yaml and configs/rlqs_rules_lowered.yaml, shown in
// docs/envoy.md.
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

#include "tests/envoy/envoy_test_support.h"
#include "tests/testing/child_process.h"
#include "tests/testing/envoy_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

#ifndef SLUICED_PATH
#error "SLUICED_PATH is defined by tests/envoy/CMakeLists.txt"
#endif

namespace sluice::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kLimit = 10;        // rlqs_rules.yaml: requests a second per bucket
constexpr int kLoweredLimit = 3;  // rlqs_rules_lowered.yaml
// How long each test counts answers once the quota is settled. Envoy refills continuously, so
// what it admits over kMeasure is the rate times kMeasure plus what its bucket held at the start.
constexpr milliseconds kMeasure{4'000};
// Envoy reports every 5 s; a report is due within this.
constexpr int kReportWaitMs = 12'000;
// The client's pace: well over any quota here, and light for a 2-core machine.
constexpr milliseconds kPause{25};

constexpr const char* kReports = "sluice_rlqs_reports_total";

// Requests of one user sent one after another on a thread of its own, every kPause, until
// destroyed; each answer's status is kept with the time it arrived.
class Load {
 public:
  Load(int port, std::string target, std::string user)
      : thread_([this, port, target = std::move(target), user = std::move(user)] {
          while (!stop_.load()) {
            absl::StatusOr<BeastResponse> answer = EnvoyGet(port, target, {{"x-user", user}});
            const int status = answer.ok() ? answer->result_int() : 0;
            {
              absl::MutexLock lock(&mu_);
              answers_.emplace_back(Clock::now(), status);
            }
            std::this_thread::sleep_for(kPause);
          }
        }) {}
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;
  ~Load() {
    stop_ = true;
    thread_.join();
  }

  // The answers that arrived in [from, to), by status.
  std::map<int, int> Between(Clock::time_point from, Clock::time_point to) const {
    absl::MutexLock lock(&mu_);
    std::map<int, int> counts;
    for (const auto& [at, status] : answers_) {
      if (at >= from && at < to) ++counts[status];
    }
    return counts;
  }

  // The 200s of each whole second from `from` to `to`, for failure messages and the report.
  std::string AdmittedPerSecond(Clock::time_point from, Clock::time_point to) const {
    std::vector<int> admitted;
    for (Clock::time_point t = from; t + std::chrono::seconds(1) <= to;
         t += std::chrono::seconds(1)) {
      admitted.push_back(Between(t, t + std::chrono::seconds(1))[200]);
    }
    return absl::StrCat("200s per second: ", absl::StrJoin(admitted, " "));
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::pair<Clock::time_point, int>> answers_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_ = false;
  std::thread thread_;
};

std::string Describe(const std::map<int, int>& counts) {
  return absl::StrJoin(counts, ", ", absl::PairFormatter(": "));
}

// Waits until the sluiced on `http_port` has answered at least `n` usage reports.
bool WaitForReports(int http_port, int64_t n, int timeout_ms = kReportWaitMs) {
  return WaitFor([&] { return SluicedCounter(http_port, kReports).value_or(0) >= n; }, timeout_ms);
}

// A sluiced on the gRPC port `grpc_port` (StartSluiced() picks its own): the one that replaces a
// stopped sluiced, where the Envoy still points.
absl::StatusOr<SluicedProcess> StartSluicedOnGrpcPort(const std::filesystem::path& rules,
                                                      const std::filesystem::path& dir,
                                                      int grpc_port) {
  absl::StatusOr<int> http_port = FreeLoopbackPort();
  if (!http_port.ok()) return http_port.status();
  SluicedProcess s{.http_port = *http_port,
                   .grpc_port = grpc_port,
                   .log_path = dir / absl::StrCat("sluiced-", grpc_port, "-again.log")};
  absl::StatusOr<std::unique_ptr<ChildProcess>> process =
      ChildProcess::Start({SLUICED_PATH, "--config", rules.string(), "--store", "memory", "--http",
                           absl::StrCat("127.0.0.1:", s.http_port), "--grpc",
                           absl::StrCat("127.0.0.1:", grpc_port), "--drain-ms", "0"},
                          s.log_path.string());
  if (!process.ok()) return process.status();
  s.process = *std::move(process);
  const int port = s.http_port;
  if (!WaitFor(
          [port] {
            absl::StatusOr<HttpResult> r = HttpGet(port, "/healthcheck");
            return r.ok() && r->status == 200;
          },
          30'000)) {
    return absl::UnavailableError(absl::StrCat("sluiced did not become healthy:\n", s.Log()));
  }
  return s;
}

class EnvoyRlqsTest : public EnvoyTest {
 protected:
  // Starts an Envoy with rlqs.yaml reporting to `grpc_port` as `client_id`; without one, the
  // Envoy sends no x-sluice-rlqs-client, and sluiced tells Envoys apart by their connections.
  std::unique_ptr<EnvoyProcess> StartEnvoy(int grpc_port,
                                           const std::optional<std::string>& client_id) {
    std::string config = EnvoyConfig("rlqs.yaml");
    if (!client_id.has_value()) {
      const int replaced = absl::StrReplaceAll(
          {{R"(initial_metadata: [{key: x-sluice-rlqs-client, value: "${RLQS_CLIENT}"}])",
            "initial_metadata: []"}},
          &config);
      EXPECT_EQ(replaced, 1) << "rlqs.yaml no longer has the initial_metadata line this replaces";
    }
    auto envoy = EnvoyProcess::Start({.config_template = config,
                                      .values = {{"SLUICED_GRPC_PORT", std::to_string(grpc_port)},
                                                 {"RLQS_CLIENT", client_id.value_or("")}},
                                      .ports = {"LISTENER_PORT"}});
    EXPECT_TRUE(envoy.ok()) << envoy.status();
    return envoy.ok() ? *std::move(envoy) : nullptr;
  }

  absl::StatusOr<SluicedProcess> Sluiced(const std::string& store) {
    return StartSluiced(EnvoyConfigPath("rlqs_rules.yaml"), store, dir_.path());
  }

  int Status(const EnvoyProcess& envoy, const std::string& target, const std::string& user) {
    absl::StatusOr<BeastResponse> answer =
        EnvoyGet(envoy.port("LISTENER_PORT"), target, {{"x-user", user}});
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? answer->result_int() : 0;
  }

  // Two Envoys, each reporting to a sluiced of its own, both on one redis-server, send requests of
  // one user as fast as kPause lets them: each is admitted its max-min share (half the limit, as
  // both want more), and both together at most the limit.
  void ExpectTwoEnvoysShareOneQuota(const std::optional<std::string>& id_a,
                                    const std::optional<std::string>& id_b) {
    auto redis = RedisServer::Start();
    ASSERT_TRUE(redis.ok()) << redis.status();
    auto sluiced_a = Sluiced((*redis)->Url());
    ASSERT_TRUE(sluiced_a.ok()) << sluiced_a.status();
    auto sluiced_b = Sluiced((*redis)->Url());
    ASSERT_TRUE(sluiced_b.ok()) << sluiced_b.status();
    std::unique_ptr<EnvoyProcess> envoy_a = StartEnvoy(sluiced_a->grpc_port, id_a);
    std::unique_ptr<EnvoyProcess> envoy_b = StartEnvoy(sluiced_b->grpc_port, id_b);
    ASSERT_TRUE(envoy_a != nullptr && envoy_b != nullptr);
    const auto logs = [&] {
      return absl::StrCat("\nenvoy a log:\n", envoy_a->Log(), "\nenvoy b log:\n", envoy_b->Log(),
                          "\nsluiced a log:\n", sluiced_a->Log(), "\nsluiced b log:\n",
                          sluiced_b->Log());
    };

    Load load_a(envoy_a->port("LISTENER_PORT"), "/", "shared");
    Load load_b(envoy_b->port("LISTENER_PORT"), "/", "shared");
    // Each Envoy's first report asks for the whole limit: the first to arrive gets it, the other
    // nothing (DENY_ALL). At their second reports (5 s later), with the demands measured, the
    // first's grant falls to its share; the other's rises to its own at the next top-up (1 s).
    ASSERT_TRUE(WaitForReports(sluiced_a->http_port, 2)) << logs();
    ASSERT_TRUE(WaitForReports(sluiced_b->http_port, 2)) << logs();
    std::this_thread::sleep_for(milliseconds(1'500));

    const Clock::time_point from = Clock::now();
    std::this_thread::sleep_for(kMeasure);
    const Clock::time_point to = Clock::now();
    const std::map<int, int> a = load_a.Between(from, to);
    const std::map<int, int> b = load_b.Between(from, to);
    const double seconds = std::chrono::duration<double>(to - from).count();
    const std::string numbers = absl::StrCat("over ", seconds, " s: envoy a {", Describe(a), "} ",
                                             load_a.AdmittedPerSecond(from, to), "; envoy b {",
                                             Describe(b), "} ", load_b.AdmittedPerSecond(from, to));
    std::cout << numbers << "\n";

    // Each Envoy's share is kLimit / 2 a second, its bucket at most that many tokens (max_tokens
    // is never above the grant): over the measure, at most share * seconds + share. At least half
    // of share * seconds, so that a share held at DENY_ALL (or a starved Envoy) fails.
    constexpr double kShare = kLimit / 2.0;
    for (const auto& [name, counts] : {std::pair{"a", a}, std::pair{"b", b}}) {
      const int admitted = counts.count(200) ? counts.at(200) : 0;
      EXPECT_LE(admitted, kShare * seconds + kShare) << "envoy " << name << " " << numbers;
      EXPECT_GE(admitted, kShare * seconds / 2) << "envoy " << name << " " << numbers << logs();
      // Refused with the default status, 429, and nothing else went wrong.
      EXPECT_GT(counts.count(429) ? counts.at(429) : 0, 0) << numbers;
      EXPECT_EQ(counts.size(), 2u) << numbers;
    }
    // Together: the limit's rate plus one unit's burst (the buckets' max_tokens sum to at most
    // the limit). Two Envoys each enforcing the whole limit would admit about twice the rate.
    const int together = (a.count(200) ? a.at(200) : 0) + (b.count(200) ? b.at(200) : 0);
    EXPECT_LE(together, kLimit * seconds + kLimit) << numbers << logs();

    // sluiced counts the two as two clients of the bucket, and their grants within the limit.
    for (const SluicedProcess* s : {&*sluiced_a, &*sluiced_b}) {
      const std::string labels = R"({domain="rlqs-e2e",bucket="rlqs-e2e.user"})";
      EXPECT_EQ(SluicedCounter(s->http_port, absl::StrCat("sluice_rlqs_bucket_clients", labels))
                    .value_or(-1),
                2);
      EXPECT_LE(SluicedCounter(s->http_port, absl::StrCat("sluice_rlqs_bucket_assigned", labels))
                    .value_or(-1),
                kLimit);
    }
  }

  TempDir dir_{"sluice-envoy-rlqs"};
};

// Verifies one Envoy admits a user at most the rule's 10 a second once sluiced has assigned the
// bucket, while the client asks for 40.
TEST_F(EnvoyRlqsTest, OneEnvoyIsHeldToTheRule) {
  auto sluiced = Sluiced("memory");
  ASSERT_TRUE(sluiced.ok()) << sluiced.status();
  std::unique_ptr<EnvoyProcess> envoy = StartEnvoy(sluiced->grpc_port, "edge-1");
  ASSERT_TRUE(envoy != nullptr);
  const auto logs = [&] {
    return absl::StrCat("\nenvoy log:\n", envoy->Log(), "\nsluiced log:\n", sluiced->Log());
  };

  Load load(envoy->port("LISTENER_PORT"), "/", "alice");
  // The bucket's first request sends the first report; the second comes 5 s later. By then the
  // token bucket (10 tokens, 10 a second) has been emptied by the load, and the second report's
  // answer is the same bucket, which Envoy keeps.
  ASSERT_TRUE(WaitForReports(sluiced->http_port, 2)) << logs();
  const Clock::time_point from = Clock::now();
  std::this_thread::sleep_for(kMeasure);
  const Clock::time_point to = Clock::now();
  const std::map<int, int> counts = load.Between(from, to);
  const double seconds = std::chrono::duration<double>(to - from).count();
  const std::string numbers = absl::StrCat("over ", seconds, " s: {", Describe(counts), "} ",
                                           load.AdmittedPerSecond(from, to));
  std::cout << numbers << "\n";

  // At most the rule's rate over the measure plus a full bucket (max_tokens = the grant = 10):
  // the bucket refills continuously and can hold no more than that at the start. At least half
  // the rate, so that a bucket at DENY_ALL fails.
  const int admitted = counts.count(200) ? counts.at(200) : 0;
  EXPECT_LE(admitted, kLimit * seconds + kLimit) << numbers << logs();
  EXPECT_GE(admitted, kLimit * seconds / 2) << numbers << logs();
  EXPECT_GT(counts.count(429) ? counts.at(429) : 0, 0) << numbers;
  EXPECT_EQ(counts.size(), 2u) << "only 200s and 429s: " << numbers;
}

// Verifies no_assignment_behavior before sluiced's first answer for a bucket: a new bucket's first
// request is let through under ALLOW_ALL and refused under DENY_ALL (with deny_response_settings'
// 503), and once sluiced has answered both are decided by its token bucket.
TEST_F(EnvoyRlqsTest, NoAssignmentBehaviorDecidesABucketsFirstRequest) {
  auto sluiced = Sluiced("memory");
  ASSERT_TRUE(sluiced.ok()) << sluiced.status();
  std::unique_ptr<EnvoyProcess> envoy = StartEnvoy(sluiced->grpc_port, "edge-1");
  ASSERT_TRUE(envoy != nullptr);

  EXPECT_EQ(Status(*envoy, "/", "bob"), 200);
  EXPECT_EQ(Status(*envoy, "/strict/", "bob"), 503);
  // sluiced answers each first report at once; from then on the new bucket's 10 tokens admit.
  EXPECT_TRUE(WaitFor([&] { return Status(*envoy, "/strict/", "bob") == 200; }, 3'000))
      << envoy->Log() << sluiced->Log();
  EXPECT_EQ(Status(*envoy, "/", "bob"), 200);
}

// Verifies no_assignment_behavior while sluiced cannot be reached: ALLOW_ALL lets every request
// through, DENY_ALL refuses every one, across one of Envoy's failed attempts to reopen the stream
// (at 5 s).
TEST_F(EnvoyRlqsTest, NoAssignmentBehaviorHoldsWhileSluicedIsDown) {
  absl::StatusOr<int> nobody = FreeLoopbackPort();
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  std::unique_ptr<EnvoyProcess> envoy = StartEnvoy(*nobody, "edge-1");
  ASSERT_TRUE(envoy != nullptr);

  const Clock::time_point from = Clock::now();
  std::map<int, int> lenient;
  std::map<int, int> strict;
  while (Clock::now() - from < milliseconds(6'000)) {
    ++lenient[Status(*envoy, "/", "carol")];
    ++strict[Status(*envoy, "/strict/", "carol")];
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(lenient.size(), 1u) << Describe(lenient) << envoy->Log();
  EXPECT_GT(lenient[200], 20) << Describe(lenient);
  EXPECT_EQ(strict.size(), 1u) << Describe(strict);
  EXPECT_GT(strict[503], 20) << Describe(strict);
}

// Verifies two Envoys, each naming itself with x-sluice-rlqs-client, share one bucket's limit.
TEST_F(EnvoyRlqsTest, TwoEnvoysWithClientIdsShareTheLimit) {
  ExpectTwoEnvoysShareOneQuota("edge-a", "edge-b");
}

// Verifies two Envoys without x-sluice-rlqs-client, both connecting from 127.0.0.1, are two
// clients (told apart by their connections): their grants sum to at most the limit. When sluiced
// named a client by its address alone, each was granted the whole limit.
TEST_F(EnvoyRlqsTest, TwoEnvoysWithoutClientIdsShareTheLimit) {
  ExpectTwoEnvoysShareOneQuota(std::nullopt, std::nullopt);
}

// Verifies an Envoy whose sluiced restarts reopens its stream, reports to the new sluiced and is
// limited by its assignment: the new sluiced's rules lower the quota to 3 a second, so the admitted
// rate shows whose assignment Envoy enforces. Meanwhile it keeps the old one (TTL 15 s).
TEST_F(EnvoyRlqsTest, AnEnvoyFollowsARestartedSluiced) {
  auto first = Sluiced("memory");
  ASSERT_TRUE(first.ok()) << first.status();
  const int grpc_port = first->grpc_port;
  std::unique_ptr<EnvoyProcess> envoy = StartEnvoy(grpc_port, "edge-1");
  ASSERT_TRUE(envoy != nullptr);

  Load load(envoy->port("LISTENER_PORT"), "/", "dave");
  // Assigned: the load is refused past the bucket.
  ASSERT_TRUE(WaitFor([&] { return load.Between(Clock::time_point(), Clock::now())[429] > 0; },
                      kReportWaitMs))
      << envoy->Log() << first->Log();
  const Clock::time_point stopping = Clock::now();
  first->Stop();
  const Clock::time_point stopped = Clock::now();
  auto second =
      StartSluicedOnGrpcPort(EnvoyConfigPath("rlqs_rules_lowered.yaml"), dir_.path(), grpc_port);
  ASSERT_TRUE(second.ok()) << second.status();
  const auto logs = [&] {
    return absl::StrCat("\nenvoy log:\n", envoy->Log(), "\nfirst sluiced log:\n", first->Log(),
                        "\nsecond sluiced log:\n", second->Log());
  };
  // Envoy reopens its stream at its next report, every 5 s.
  ASSERT_TRUE(WaitForReports(second->http_port, 1)) << logs();
  const Clock::time_point reported = Clock::now();
  std::cout << "sluiced took "
            << std::chrono::duration_cast<milliseconds>(stopped - stopping).count()
            << " ms to stop; Envoy reported to the new one "
            << std::chrono::duration_cast<milliseconds>(reported - stopped).count()
            << " ms after\n";

  // Without sluiced, Envoy went on with the old assignment (10 a second): limited, not unlimited.
  std::map<int, int> gap = load.Between(stopping, reported);
  const double gap_seconds = std::chrono::duration<double>(reported - stopping).count();
  EXPECT_LE(gap[200], kLimit * gap_seconds + kLimit)
      << "gap of " << gap_seconds << " s: " << Describe(gap) << logs();
  EXPECT_GT(gap[429], 0) << Describe(gap);

  // The new assignment: 3 a second, its bucket at most 3 tokens.
  std::this_thread::sleep_for(milliseconds(200));
  const Clock::time_point from = Clock::now();
  std::this_thread::sleep_for(kMeasure);
  const Clock::time_point to = Clock::now();
  const std::map<int, int> counts = load.Between(from, to);
  const double seconds = std::chrono::duration<double>(to - from).count();
  const std::string numbers =
      absl::StrCat("after the restart, over ", seconds, " s: {", Describe(counts), "} ",
                   load.AdmittedPerSecond(from, to));
  std::cout << numbers << "\n";
  const int admitted = counts.count(200) ? counts.at(200) : 0;
  EXPECT_LE(admitted, kLoweredLimit * seconds + kLoweredLimit) << numbers << logs();
  EXPECT_GE(admitted, kLoweredLimit * seconds / 2) << numbers << logs();
}

}  // namespace
}  // namespace sluice::testing
