// sluiced's HTTP listener when file descriptors run out (issue 13, point 1: the accept loop part).
// At a low RLIMIT_NOFILE, idle connections exhaust the descriptors: the accept loop must back off
// instead of spinning, and the port must serve again once they are released. Real processes and
// sockets: every wait is a bounded poll; the one fixed interval (a second of holding) is what is
// measured.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include <unistd.h>

#include "sluice/clock.h"

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/idle_connections.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {
namespace {

bool Healthy(int port) {
  absl::StatusOr<HttpResult> r = HttpGet(port, "/healthcheck");
  return r.ok() && r->status == 200;
}

TEST(SluicedFdExhaustion, HttpAcceptLoopBacksOffAndRecovers) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-fd-XXXXXX").string();
  const std::filesystem::path dir = mkdtemp(tmpl.data());
  std::ofstream(dir / "config.yaml") << "domain: d\ndescriptors:\n  - key: k\n    rate_limit: "
                                        "{unit: second, requests_per_unit: 1}\n";
  const int http_port = *FreeLoopbackPort();
  const int grpc_port = *FreeLoopbackPort();
  const std::string log = (dir / "sluiced.log").string();
  absl::StatusOr<std::unique_ptr<ChildProcess>> sluiced = ChildProcess::Start(
      {"/bin/sh", "-c", "ulimit -n 128 && exec \"$0\" \"$@\"", SLUICED_PATH, "--config",
       (dir / "config.yaml").string(), "--http", "127.0.0.1:" + std::to_string(http_port),
       "--grpc", "127.0.0.1:" + std::to_string(grpc_port), "--drain-ms", "0"},
      log);
  ASSERT_TRUE(sluiced.ok()) << sluiced.status();
  ASSERT_TRUE(WaitFor([&] { return Healthy(http_port); }, 10'000)) << "log: " << log;

  {
    IdleConnections held(http_port, 400);
    ASSERT_EQ(held.size(), 400u);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // Reach EMFILE.
    const double cpu_before = ProcessCpuSeconds((*sluiced)->pid());
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double cpu_used = ProcessCpuSeconds((*sluiced)->pid()) - cpu_before;
    ASSERT_GE(cpu_before, 0);
    EXPECT_LT(cpu_used, 0.1) << "the accept loop spins; log: " << log;
    RecordProperty("cpu_seconds_while_held", std::to_string(cpu_used));
  }
  const auto start = Clock::Real().Now();
  EXPECT_TRUE(WaitFor([&] { return Healthy(http_port); }, 5'000))
      << "the port did not serve again; log: " << log;
  RecordProperty("recovery_ms",
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    Clock::Real().Now() - start)
                                    .count()));
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("http: accept failed (Too many open files)"), std::string::npos) << text;
  (*sluiced).reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace sluice::testing
