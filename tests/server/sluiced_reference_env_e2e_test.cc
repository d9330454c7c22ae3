// End-to-end tests of sluiced started as envoyproxy/ratelimit is started: no flags, only the
// reference's environment variables (src/server/settings.h), and of gRPC health following
// /healthcheck. Processes and real time are involved, so every wait is a bounded poll on an
// observable condition, never a fixed sleep.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "boost/json/parse.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/grpc_probes.h"
#include "tests/testing/http_client.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;

constexpr const char* kConfig =
    "domain: e2e\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: hour\n"
    "      requests_per_unit: 2\n";
constexpr const char* kRequest =
    R"({"domain":"e2e","descriptors":[{"entries":[{"key":"user","value":"alice"}]}]})";

// A UDP socket on a free loopback port, standing in for statsd.
class StatsdListener {
 public:
  StatsdListener() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  StatsdListener(const StatsdListener&) = delete;
  StatsdListener& operator=(const StatsdListener&) = delete;
  ~StatsdListener() { close(fd_); }
  int port() const { return port_; }

  // Reads what arrived within `timeout_ms`, adding each `name:value|c` line to `totals`.
  void Drain(std::map<std::string, int64_t>& totals, int timeout_ms) {
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    while (poll(&p, 1, timeout_ms) > 0) {
      char buf[65536];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return;
      for (absl::string_view line : absl::StrSplit(absl::string_view(buf, n), '\n')) {
        const size_t colon = line.rfind(':');
        const size_t bar = line.rfind('|');
        int64_t value = 0;
        if (colon == absl::string_view::npos || bar == absl::string_view::npos || bar < colon ||
            !absl::SimpleAtoi(line.substr(colon + 1, bar - colon - 1), &value)) {
          continue;
        }
        totals[std::string(line.substr(0, colon))] += value;
      }
      timeout_ms = 0;
    }
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

int HealthcheckStatus(int port) {
  absl::StatusOr<HttpResult> r = HttpGet(port, "/healthcheck");
  return r.ok() ? r->status : -1;
}

int PostStatus(int port) {
  absl::StatusOr<HttpResult> r = HttpPost(port, "/json", kRequest);
  return r.ok() ? r->status : -1;
}

// Verifies a deployment of the reference starts sluiced unchanged: no flag, only its variables.
// Listeners come from HOST/PORT, GRPC_HOST/GRPC_PORT and DEBUG_HOST/DEBUG_PORT, the config from
// RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config, the store from REDIS_*, counters go to statsd under the
// reference's names every STATS_FLUSH_INTERVAL, and LOG_FORMAT=json makes every log line JSON.
TEST(SluicedReferenceEnvironment, StartsFromTheReferencesVariablesAlone) {
  auto redis = RedisServer::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  TempDir dir("sluice-refenv");
  std::filesystem::create_directories(dir.path() / "runtime" / "ratelimit" / "config");
  std::ofstream(dir.path() / "runtime" / "ratelimit" / "config" / "e2e.yaml") << kConfig;
  StatsdListener statsd;
  const int http_port = *FreeLoopbackPort();
  const int grpc_port = *FreeLoopbackPort();
  const int debug_port = *FreeLoopbackPort();
  const std::vector<std::string> env = {
      "RUNTIME_ROOT=" + (dir.path() / "runtime").string(),
      "RUNTIME_SUBDIRECTORY=ratelimit",
      "HOST=127.0.0.1",
      "PORT=" + std::to_string(http_port),
      "GRPC_HOST=127.0.0.1",
      "GRPC_PORT=" + std::to_string(grpc_port),
      "DEBUG_HOST=127.0.0.1",
      "DEBUG_PORT=" + std::to_string(debug_port),
      "USE_STATSD=true",
      "STATSD_HOST=127.0.0.1",
      "STATSD_PORT=" + std::to_string(statsd.port()),
      "STATS_FLUSH_INTERVAL=100ms",
      "LOG_FORMAT=json",
      "LOG_LEVEL=info",
      "BACKEND_TYPE=redis",
      "REDIS_SOCKET_TYPE=tcp",
      "REDIS_TYPE=SINGLE",
      "REDIS_URL=127.0.0.1:" + std::to_string((*redis)->port()),
  };
  const std::filesystem::path log = dir.path() / "log";
  auto process = ChildProcess::Start({SLUICED_PATH}, log.string(), env);
  ASSERT_TRUE(process.ok()) << process.status();
  ASSERT_TRUE(WaitFor([&] { return HealthcheckStatus(http_port) == 200; }, 30'000))
      << "sluiced did not become healthy; log: " << ReadFile(log);

  EXPECT_EQ(PostStatus(http_port), 200);
  EXPECT_EQ(PostStatus(http_port), 200);
  EXPECT_EQ(PostStatus(http_port), 429);
  EXPECT_EQ(GrpcDecisionStatus(grpc_port, "e2e", "user", "alice"),
            429);  // One limit, shared by both listeners.
  absl::StatusOr<HttpResult> rlconfig = HttpGet(debug_port, "/rlconfig");
  ASSERT_TRUE(rlconfig.ok()) << rlconfig.status();
  EXPECT_THAT(rlconfig->body, HasSubstr("e2e.user"));

  std::map<std::string, int64_t> totals;
  const std::string prefix = "ratelimit.service.rate_limit.e2e.user.";
  EXPECT_TRUE(WaitFor(
      [&] {
        statsd.Drain(totals, 100);
        return totals[prefix + "total_hits"] == 4 && totals[prefix + "over_limit"] == 2;
      },
      30'000))
      << "total_hits " << totals[prefix + "total_hits"] << ", over_limit "
      << totals[prefix + "over_limit"];
  EXPECT_EQ(totals[prefix + "within_limit"], 2);

  (*process)->Signal(SIGTERM);
  EXPECT_EQ((*process)->Wait(30'000), 0);

  const std::string text = ReadFile(log);
  int lines = 0;
  bool saw_serving = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++lines;
    boost::system::error_code error;
    const boost::json::value v = boost::json::parse({line.data(), line.size()}, error);
    ASSERT_FALSE(error) << "not JSON: " << line;
    ASSERT_TRUE(v.is_object()) << line;
    EXPECT_TRUE(v.as_object().contains("@timestamp")) << line;
    EXPECT_TRUE(v.as_object().contains("level")) << line;
    ASSERT_TRUE(v.as_object().contains("@message")) << line;
    saw_serving =
        saw_serving || std::string_view(v.at("@message").as_string()).find("sluiced serving") !=
                           std::string_view::npos;
  }
  EXPECT_GT(lines, 3);
  EXPECT_TRUE(saw_serving) << text;
}

// Verifies more of the reference's variables reach what they configure: a Prometheus listener at
// its path instead of statsd, the per-second Redis (REDIS_PERSECOND) holding the one-second limits
// and the main Redis the others, both under CACHE_KEY_PREFIX, and response headers by their names.
TEST(SluicedReferenceEnvironment, PrometheusPerSecondRedisKeyPrefixAndHeaders) {
  auto main_redis = RedisServer::Start();
  ASSERT_TRUE(main_redis.ok()) << main_redis.status();
  auto per_second_redis = RedisServer::Start();
  ASSERT_TRUE(per_second_redis.ok()) << per_second_redis.status();
  TempDir dir("sluice-refenv");
  std::filesystem::create_directories(dir.path() / "config");
  std::ofstream(dir.path() / "config" / "e2e.yaml")
      << "domain: e2e\ndescriptors:\n"
         "  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 2}\n"
         "  - key: burst\n    rate_limit: {unit: second, requests_per_unit: 5}\n";
  const int http_port = *FreeLoopbackPort();
  const int prometheus_port = *FreeLoopbackPort();
  const std::vector<std::string> env = {
      "RUNTIME_ROOT=" + dir.path().string(),
      "HOST=127.0.0.1",
      "PORT=" + std::to_string(http_port),
      "GRPC_HOST=127.0.0.1",
      "GRPC_PORT=" + std::to_string(*FreeLoopbackPort()),
      "DEBUG_HOST=127.0.0.1",
      "DEBUG_PORT=" + std::to_string(*FreeLoopbackPort()),
      "USE_STATSD=false",
      "USE_PROMETHEUS=true",
      "PROMETHEUS_ADDR=127.0.0.1:" + std::to_string(prometheus_port),
      "PROMETHEUS_PATH=/stats",
      "REDIS_SOCKET_TYPE=tcp",
      "REDIS_URL=127.0.0.1:" + std::to_string((*main_redis)->port()),
      "REDIS_PERSECOND=true",
      "REDIS_PERSECOND_SOCKET_TYPE=tcp",
      "REDIS_PERSECOND_URL=127.0.0.1:" + std::to_string((*per_second_redis)->port()),
      "CACHE_KEY_PREFIX=migrated_",
      "LIMIT_RESPONSE_HEADERS_ENABLED=true",
      "LIMIT_REMAINING_HEADER=X-Left",
  };
  const std::filesystem::path log = dir.path() / "log";
  auto process = ChildProcess::Start({SLUICED_PATH}, log.string(), env);
  ASSERT_TRUE(process.ok()) << process.status();
  ASSERT_TRUE(WaitFor([&] { return HealthcheckStatus(http_port) == 200; }, 30'000))
      << ReadFile(log);

  absl::StatusOr<HttpResult> burst =
      HttpPost(http_port, "/json",
               R"({"domain":"e2e","descriptors":[{"entries":[{"key":"burst","value":"b"}]}]})");
  ASSERT_TRUE(burst.ok()) << burst.status();
  EXPECT_EQ(burst->status, 200) << burst->body;
  EXPECT_THAT(burst->body, HasSubstr("X-Left"));
  EXPECT_THAT(*(*per_second_redis)->Command({"KEYS", "migrated_*"}), HasSubstr("migrated_"));
  EXPECT_EQ(*(*main_redis)->Command({"KEYS", "*"}), "");

  EXPECT_EQ(PostStatus(http_port), 200);  // The hourly limit: the main Redis.
  EXPECT_THAT(*(*main_redis)->Command({"KEYS", "migrated_*"}), HasSubstr("migrated_"));

  absl::StatusOr<HttpResult> metrics = HttpGet(prometheus_port, "/stats");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("ratelimit_service_rate_limit_total_hits_total"));
  absl::StatusOr<HttpResult> elsewhere = HttpGet(prometheus_port, "/metrics");
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_EQ(elsewhere->status, 404);
}

// Verifies a variable whose behaviour sluiced cannot give is refused by name at start, with exit
// status 2, instead of being ignored; every refusal is named at once.
TEST(SluicedReferenceEnvironment, RefusesUnsupportedVariablesByName) {
  TempDir dir("sluice-refenv");
  const std::vector<std::string> env = {
      "RUNTIME_ROOT=" + dir.path().string(),
      "BACKEND_TYPE=memcache",
      "MEMCACHE_HOST_PORT=127.0.0.1:11211",
      "TRACING_ENABLED=true",
  };
  auto run = RunToExit({SLUICED_PATH}, 30'000, env);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->first, 2) << run->second;
  EXPECT_THAT(run->second, HasSubstr("BACKEND_TYPE: memcache is not supported"));
  EXPECT_THAT(run->second, HasSubstr("TRACING_ENABLED: tracing"));
}

// Verifies a flag wins over the variable it maps to, and that with --config only the variables
// that are set apply: PORT moves the HTTP listener, nothing else of the reference's defaults does.
TEST(SluicedReferenceEnvironment, FlagsWinAndConfigFlagKeepsSluicedDefaults) {
  TempDir dir("sluice-refenv");
  std::ofstream(dir.path() / "e2e.yaml") << kConfig;
  const int http_port = *FreeLoopbackPort();
  const int grpc_port = *FreeLoopbackPort();
  const std::vector<std::string> env = {
      "PORT=" + std::to_string(http_port),
      "GRPC_PORT=1",  // Overridden by --grpc below.
      "LOG_LEVEL=debug",
  };
  const std::filesystem::path log = dir.path() / "log";
  auto process = ChildProcess::Start(
      {SLUICED_PATH, "--config", dir.path().string(), "--grpc",
       "127.0.0.1:" + std::to_string(grpc_port), "--log-level", "warn", "--drain-ms", "0"},
      log.string(), env);
  ASSERT_TRUE(process.ok()) << process.status();
  ASSERT_TRUE(WaitFor([&] { return HealthcheckStatus(http_port) == 200; }, 30'000))
      << ReadFile(log);
  EXPECT_EQ(GrpcDecisionStatus(grpc_port, "e2e", "user", "alice"), 200);
  (*process)->Signal(SIGTERM);
  EXPECT_EQ((*process)->Wait(30'000), 0);
  // --log-level warn won over LOG_LEVEL=debug: no info line ("sluiced serving") was written.
  EXPECT_THAT(ReadFile(log), ::testing::Not(HasSubstr("sluiced serving")));
}

// Verifies grpc.health.v1 follows /healthcheck: serving while healthy, not serving while Redis is
// down, serving again when it returns, and not serving at once on SIGTERM, while draining.
TEST(SluicedHealth, GrpcHealthFollowsHealthcheck) {
  auto redis = RedisServer::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  TempDir dir("sluice-refenv");
  std::ofstream(dir.path() / "e2e.yaml") << kConfig;
  const int http_port = *FreeLoopbackPort();
  const int grpc_port = *FreeLoopbackPort();
  const std::filesystem::path log = dir.path() / "log";
  auto process = ChildProcess::Start(
      {SLUICED_PATH, "--config", dir.path().string(), "--store", (*redis)->Url(), "--http",
       "127.0.0.1:" + std::to_string(http_port), "--grpc", "127.0.0.1:" + std::to_string(grpc_port),
       "--config-poll-ms", "50", "--drain-ms", "20000"},
      log.string(), std::vector<std::string>{});
  ASSERT_TRUE(process.ok()) << process.status();
  ASSERT_TRUE(WaitFor([&] { return HealthcheckStatus(http_port) == 200; }, 30'000))
      << ReadFile(log);
  // grpc.health.v1 for "ratelimit", the reference's service name.
  auto grpc_health = [&] {
    return GrpcHealthStatus(LoopbackChannel(grpc_port), "ratelimit", std::chrono::seconds(5));
  };
  EXPECT_TRUE(WaitFor([&] { return grpc_health() == 1; }, 30'000)) << ReadFile(log);

  (*redis)->Kill();
  EXPECT_TRUE(WaitFor([&] { return grpc_health() == 2; }, 30'000)) << ReadFile(log);
  EXPECT_EQ(HealthcheckStatus(http_port), 500);
  ASSERT_TRUE((*redis)->Restart().ok());
  EXPECT_TRUE(WaitFor([&] { return grpc_health() == 1; }, 30'000)) << ReadFile(log);
  EXPECT_EQ(HealthcheckStatus(http_port), 200);

  (*process)->Signal(SIGTERM);
  // Draining for 20 s: the listeners still answer, and both say unhealthy.
  EXPECT_TRUE(WaitFor([&] { return grpc_health() == 2; }, 10'000)) << ReadFile(log);
  EXPECT_EQ(HealthcheckStatus(http_port), 500);
  // The process is killed when `process` goes, without waiting out the drain.
}

}  // namespace
}  // namespace sluice::testing
