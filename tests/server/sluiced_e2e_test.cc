// End-to-end tests of the sluiced binary: config validation, hot reload, shared limits over one
// redis-server, and health following Redis. Processes and real time are involved, so every wait is
// a bounded poll on an observable condition, never a fixed sleep.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "sluice/version.h"

#include "tests/testing/child_process.h"
#include "tests/testing/grpc_probes.h"
#include "tests/testing/http_client.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;

constexpr const char* kRequest =
    R"({"domain":"e2e","descriptors":[{"entries":[{"key":"user","value":"alice"}]}]})";

std::string ConfigWithLimit(int requests_per_hour) {
  return "domain: e2e\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: hour\n"
         "      requests_per_unit: " +
         std::to_string(requests_per_hour) + "\n";
}

struct Sluiced {
  std::unique_ptr<ChildProcess> process;
  int http_port = 0;
  int grpc_port = 0;
};

Sluiced StartSluiced(const std::filesystem::path& config, const std::string& store,
                     const std::string& log) {
  Sluiced s;
  s.http_port = *FreeLoopbackPort();
  const int grpc_port = *FreeLoopbackPort();
  s.grpc_port = grpc_port;
  auto p = ChildProcess::Start(
      {SLUICED_PATH, "--config", config.string(), "--store", store, "--http",
       "127.0.0.1:" + std::to_string(s.http_port), "--grpc",
       "127.0.0.1:" + std::to_string(grpc_port), "--config-poll-ms", "50", "--drain-ms", "0"},
      log);
  EXPECT_TRUE(p.ok());
  s.process = *std::move(p);
  const int port = s.http_port;
  EXPECT_TRUE(WaitFor(
      [port] {
        auto r = HttpGet(port, "/healthcheck");
        return r.ok() && r->status == 200;
      },
      30'000))
      << "sluiced did not become healthy; log: " << log;
  return s;
}

int PostStatus(int port) {
  absl::StatusOr<HttpResult> r = HttpPost(port, "/json", kRequest);
  return r.ok() ? r->status : -1;
}

TEST(SluicedE2e, ValidateAcceptsGoodAndRejectsBadConfigWithLocation) {
  TempDir dir("sluice-e2e");
  dir.Write("good.yaml", ConfigWithLimit(3));
  auto good = RunToExit({SLUICED_PATH, "--validate", (dir.path() / "good.yaml").string()}, 30'000);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->first, 0) << good->second;

  dir.Write("bad.yaml",
            "domain: e2e\ndescriptors:\n  - key: user\n    rate_limit:\n"
            "      unit: mintue\n      requests_per_unit: 1\n");
  auto bad = RunToExit({SLUICED_PATH, "--validate", (dir.path() / "bad.yaml").string()}, 30'000);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->first, 1);
  EXPECT_THAT(bad->second, HasSubstr("bad.yaml:5:"));
  EXPECT_THAT(bad->second, HasSubstr("unit"));
}

// Verifies a valid change is picked up, and a broken file keeps the previous config in force.
TEST(SluicedE2e, HotReloadAppliesValidConfigAndKeepsOldOnError) {
  TempDir dir("sluice-e2e");
  dir.Write("e2e.yaml", ConfigWithLimit(1));
  Sluiced s = StartSluiced(dir.path(), "memory", (dir.path() / "log").string());
  EXPECT_EQ(PostStatus(s.http_port), 200);
  EXPECT_EQ(PostStatus(s.http_port), 429);

  dir.Write("e2e.yaml", ConfigWithLimit(3));  // 1 used of 3 now.
  EXPECT_TRUE(WaitFor([&] { return PostStatus(s.http_port) == 200; }, 30'000));
  EXPECT_EQ(PostStatus(s.http_port), 200);
  EXPECT_EQ(PostStatus(s.http_port), 429);

  dir.Write("e2e.yaml", "domain: e2e\ndescriptors: [\n");  // Broken YAML.
  EXPECT_TRUE(WaitFor(
      [&] {
        auto m = HttpGet(s.http_port, "/metrics");
        return m.ok() &&
               m->body.find("ratelimit_service_config_load_error_total 1") != std::string::npos;
      },
      30'000));
  EXPECT_EQ(PostStatus(s.http_port), 429);  // Still the limit of 3, still counting.
  // The listeners' counters are exported: every request above came on a connection of its own.
  auto metrics = HttpGet(s.http_port, "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("sluice_listener_accepted_total{listener=\"http\"} "),
            std::string::npos);
  EXPECT_EQ(metrics->body.find("sluice_listener_accepted_total{listener=\"http\"} 0\n"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("sluice_grpc_in_flight 0\n"), std::string::npos);
  auto health = HttpGet(s.http_port, "/healthcheck");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);

  // SIGHUP reloads on demand too.
  dir.Write("e2e.yaml", ConfigWithLimit(10));
  s.process->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return PostStatus(s.http_port) == 200; }, 30'000));
}

TEST(SluicedE2e, SigtermTurnsHealthUnhealthyAndExitsCleanly) {
  TempDir dir("sluice-e2e");
  dir.Write("e2e.yaml", ConfigWithLimit(1));
  Sluiced s = StartSluiced(dir.path(), "memory", (dir.path() / "log").string());
  s.process->Signal(SIGTERM);
  EXPECT_EQ(s.process->Wait(30'000), 0);
}

// Verifies two instances sharing one Redis admit exactly the limit between them, one asked over
// HTTP and the other over gRPC.
TEST(SluicedE2e, TwoInstancesShareOneLimitThroughRedis) {
  auto redis = RedisServer::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  TempDir dir("sluice-e2e");
  dir.Write("e2e.yaml", ConfigWithLimit(10));
  Sluiced a = StartSluiced(dir.path(), (*redis)->Url(), (dir.path() / "a.log").string());
  Sluiced b = StartSluiced(dir.path(), (*redis)->Url(), (dir.path() / "b.log").string());
  int admitted = 0;
  for (int i = 0; i < 30; ++i) {
    const int status = i % 2 == 0
                           ? PostStatus(a.http_port)
                           : testing::GrpcDecisionStatus(b.grpc_port, "e2e", "user", "alice");
    ASSERT_TRUE(status == 200 || status == 429) << status;
    admitted += status == 200 ? 1 : 0;
  }
  EXPECT_EQ(admitted, 10);
}

// Verifies /healthcheck follows Redis: unhealthy when it dies, healthy again when it returns.
TEST(SluicedE2e, HealthFlipsWithRedis) {
  auto redis = RedisServer::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  TempDir dir("sluice-e2e");
  dir.Write("e2e.yaml", ConfigWithLimit(10));
  Sluiced s = StartSluiced(dir.path(), (*redis)->Url(), (dir.path() / "log").string());
  auto healthy = [&] {
    auto r = HttpGet(s.http_port, "/healthcheck");
    return r.ok() && r->status == 200;
  };
  (*redis)->Kill();
  EXPECT_TRUE(WaitFor([&] { return !healthy(); }, 30'000));
  EXPECT_EQ(PostStatus(s.http_port), 503);  // Default failure mode: the error is reported.
  ASSERT_TRUE((*redis)->Restart().ok());
  EXPECT_TRUE(WaitFor(healthy, 30'000));
  EXPECT_EQ(PostStatus(s.http_port), 200);
}

TEST(SluicedE2e, VersionPrintsTheProjectVersionAndExits) {
  auto run = RunToExit({SLUICED_PATH, "--version"}, 30'000);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->first, 0);
  EXPECT_THAT(run->second, HasSubstr(std::string("sluiced ") + SLUICE_VERSION_STRING));
}

// An unknown log level used to turn all logging off silently; it is refused at start.
TEST(SluicedE2e, RefusesAnUnknownLogLevel) {
  auto run =
      RunToExit({SLUICED_PATH, "--config", "/nonexistent", "--log-level", "verbose"}, 30'000);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_NE(run->first, 0);
  EXPECT_THAT(run->second, HasSubstr("log-level"));
}

// A bound of 0 decisions in flight would refuse every gRPC call; it is refused at start instead.
TEST(SluicedE2e, RefusesAZeroGrpcInFlightBound) {
  auto run =
      RunToExit({SLUICED_PATH, "--config", "/nonexistent", "--grpc-max-in-flight", "0"}, 30'000);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_NE(run->first, 0);
  EXPECT_THAT(run->second, HasSubstr("grpc-max-in-flight"));
}

// Streams per connection below 1, decision threads beyond 64 and a quota top-up interval beyond
// a minute are refused at start, by name.
TEST(SluicedE2e, RefusesOutOfRangeStreamsDecisionThreadsAndTopUps) {
  for (const auto& [flag, value] :
       {std::pair{"--grpc-max-concurrent-streams", "0"}, std::pair{"--grpc-decision-threads", "65"},
        std::pair{"--rlqs-top-up-interval-ms", "60001"}}) {
    auto run = RunToExit({SLUICED_PATH, "--config", "/nonexistent", flag, value}, 30'000);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_NE(run->first, 0) << flag;
    EXPECT_THAT(run->second, HasSubstr(flag));
  }
}

// Verifies SLUICE_GRPC_ENGINE=nghttp2 serves the gRPC API on the lean engine: decisions and the
// health service, as on gRPC C++.
TEST(SluicedE2e, ServesGrpcOnTheNghttp2EngineChosenByTheEnvironment) {
  TempDir dir("sluice-e2e");
  dir.Write("e2e.yaml", ConfigWithLimit(1));
  const std::string log = (dir.path() / "log").string();
  const int http_port = *FreeLoopbackPort();
  const int grpc_port = *FreeLoopbackPort();
  auto p = ChildProcess::Start({SLUICED_PATH, "--config", dir.path().string(), "--store", "memory",
                                "--http", "127.0.0.1:" + std::to_string(http_port), "--grpc",
                                "127.0.0.1:" + std::to_string(grpc_port), "--drain-ms", "0"},
                               log, std::vector<std::string>{"SLUICE_GRPC_ENGINE=nghttp2"});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = HttpGet(http_port, "/healthcheck");
        return r.ok() && r->status == 200;
      },
      30'000));
  EXPECT_EQ(GrpcDecisionStatus(grpc_port, "e2e", "user", "alice"), 200);
  EXPECT_EQ(GrpcDecisionStatus(grpc_port, "e2e", "user", "alice"), 429);
  EXPECT_EQ(GrpcHealthStatus(LoopbackChannel(grpc_port), "ratelimit"), 1);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("(nghttp2 engine)"));
}

// Verifies the nghttp2 engine refuses at start what it cannot serve, saying what to use instead,
// and that an unknown engine is refused.
TEST(SluicedE2e, Nghttp2EngineRefusesAUnixSocketAndUnknownEnginesAreRefused) {
  TempDir dir("sluice-e2e");
  dir.Write("e2e.yaml", ConfigWithLimit(1));
  auto unix_socket = RunToExit(
      {SLUICED_PATH, "--config", dir.path().string(), "--store", "memory", "--http", "127.0.0.1:0",
       "--grpc", "unix:" + (dir.path() / "grpc.sock").string(), "--grpc-engine", "nghttp2"},
      30'000);
  ASSERT_TRUE(unix_socket.ok()) << unix_socket.status();
  EXPECT_NE(unix_socket->first, 0);
  EXPECT_THAT(unix_socket->second, HasSubstr("--grpc-engine grpc"));
  auto unknown =
      RunToExit({SLUICED_PATH, "--config", "/nonexistent", "--grpc-engine", "fast"}, 30'000);
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_NE(unknown->first, 0);
  EXPECT_THAT(unknown->second, HasSubstr("grpc-engine"));
  auto env = RunToExit({SLUICED_PATH, "--config", dir.path().string(), "--store", "memory"}, 30'000,
                       std::vector<std::string>{"SLUICE_GRPC_ENGINE=fast"});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_NE(env->first, 0);
  EXPECT_THAT(env->second, HasSubstr("SLUICE_GRPC_ENGINE"));
}

}  // namespace
}  // namespace sluice::testing
