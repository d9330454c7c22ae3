// sluiced's dashboard in a real browser: headless Chromium, driven over the DevTools protocol by
// puppeteer-core (dashboard_browser.js), against sluiced started as a child process. The page is
// loaded first, then traffic is driven; the denied descriptors must appear without a reload, the
// attacker-chosen values as text, with no console error and every request same-origin and
// answered. Screenshots go to the test's output directory (docs/img/dashboard.png is one).
//
// puppeteer-core (which downloads no browser) comes from npm into a temporary directory; without
// node, npm, chromium or the network the test is skipped, saying why.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/skip_or_fail.h"

extern char** environ;

namespace sluice::testing {
namespace {

constexpr char kConfig[] = R"(domain: edge
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 5
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 100
)";

constexpr char kApiConfig[] = R"(domain: api
descriptors:
  - key: client_id
    value: batch-export
    rate_limit:
      unit: minute
      requests_per_unit: 2
  - key: client_id
    rate_limit:
      unit: minute
      requests_per_unit: 1000
)";

std::string Chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

// This process's environment plus `extra`.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Starts sluiced on the memory store with the configs in `config_dir`, its HTTP API on `http_port`
// and a gRPC listener of its own, plus `extra` flags, logging to `log`; returns it once
// /healthcheck answers 200.
absl::StatusOr<std::unique_ptr<ChildProcess>> StartSluiced(const std::filesystem::path& config_dir,
                                                           const std::filesystem::path& log,
                                                           int http_port,
                                                           const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {SLUICED_PATH,
                                   "--config",
                                   config_dir.string(),
                                   "--store",
                                   "memory",
                                   "--http",
                                   "127.0.0.1:" + std::to_string(http_port),
                                   "--grpc",
                                   "127.0.0.1:" + std::to_string(*FreeLoopbackPort()),
                                   "--drain-ms",
                                   "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto sluiced = ChildProcess::Start(argv, log.string());
  if (!sluiced.ok()) return sluiced.status();
  const bool healthy = WaitFor(
      [&] {
        auto r = HttpGet(http_port, "/healthcheck");
        return r.ok() && r->status == 200;
      },
      30'000);
  if (!healthy) return absl::DeadlineExceededError("sluiced did not become healthy in 30 s");
  return sluiced;
}

TEST(DashboardBrowserTest, ShowsDenialsLiveAsTextInHeadlessChromium) {
  const std::string chromium = Chromium();
  if (chromium.empty()) SLUICE_SKIP_OR_FAIL("chromium is not installed (scripts/install-deps.sh)");
  if (std::system("command -v node >/dev/null && command -v npm >/dev/null") != 0) {
    SLUICE_SKIP_OR_FAIL("node or npm is not installed");
  }
  TempDir temp("sluice-dashboard");
  ASSERT_FALSE(temp.path().empty());
  const std::filesystem::path& dir = temp.path();
  auto npm = RunToExit({"/usr/bin/env", "npm", "install", "--prefix", dir.string(), "--no-audit",
                        "--no-fund", "--loglevel=error", "puppeteer-core"},
                       180'000, EnvironmentWith({"PUPPETEER_SKIP_DOWNLOAD=1"}));
  if (!npm.ok() || npm->first != 0) {
    SLUICE_SKIP_OR_FAIL("npm could not install puppeteer-core (no network?): " +
                        (npm.ok() ? npm->second : std::string(npm.status().message())));
  }

  std::filesystem::create_directory(dir / "config");
  std::ofstream(dir / "config" / "edge.yaml") << kConfig;
  std::ofstream(dir / "config" / "api.yaml") << kApiConfig;
  const int http_port = *FreeLoopbackPort();
  auto sluiced = StartSluiced(dir / "config", dir / "sluiced.log", http_port, {});
  ASSERT_TRUE(sluiced.ok()) << sluiced.status();

  auto run = RunToExit(
      {"/usr/bin/env", "node",
       std::string(SLUICE_SOURCE_DIR) + "/tests/server/dashboard/dashboard_browser.js"},
      120'000,
      EnvironmentWith({"NODE_PATH=" + (dir / "node_modules").string(),
                       "SLUICED_URL=http://127.0.0.1:" + std::to_string(http_port),
                       "CHROMIUM=" + chromium, std::string("OUT_DIR=") + DASHBOARD_OUT_DIR}));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->first, 0) << run->second;
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(DASHBOARD_OUT_DIR) / "dashboard.png"));
}

// The debug listener serves the dashboard too, with the same headers.
TEST(DashboardBrowserTest, TheDebugListenerServesItToo) {
  TempDir temp("sluice-dashboard-debug");
  ASSERT_FALSE(temp.path().empty());
  const std::filesystem::path& dir = temp.path();
  std::ofstream(dir / "edge.yaml") << kConfig;
  const int http_port = *FreeLoopbackPort();
  const int debug_port = *FreeLoopbackPort();
  auto sluiced = StartSluiced(dir, dir / "sluiced.log", http_port,
                              {"--debug", "127.0.0.1:" + std::to_string(debug_port)});
  ASSERT_TRUE(sluiced.ok()) << sluiced.status();
  auto page = HttpGet(debug_port, "/dashboard");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("/dashboard/app.js"), std::string::npos);
  auto feed = HttpGet(debug_port, "/dashboard/feed.json");
  ASSERT_TRUE(feed.ok());
  EXPECT_EQ(feed->status, 200);
  EXPECT_NE(feed->body.find("\"version\":1"), std::string::npos);
}

// With --dashboard=false there is no dashboard, and /json still answers.
TEST(DashboardBrowserTest, TheFlagTurnsItOff) {
  TempDir temp("sluice-dashboard-off");
  ASSERT_FALSE(temp.path().empty());
  const std::filesystem::path& dir = temp.path();
  std::ofstream(dir / "edge.yaml") << kConfig;
  const int http_port = *FreeLoopbackPort();
  auto sluiced = StartSluiced(dir, dir / "sluiced.log", http_port, {"--dashboard=false"});
  ASSERT_TRUE(sluiced.ok()) << sluiced.status();
  auto page = HttpGet(http_port, "/dashboard");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->status, 404);
  auto feed = HttpGet(http_port, "/dashboard/feed.json");
  ASSERT_TRUE(feed.ok());
  EXPECT_EQ(feed->status, 404);
  auto decision =
      HttpPost(http_port, "/json",
               R"({"domain":"edge","descriptors":[{"entries":[{"key":"user","value":"a"}]}]})");
  ASSERT_TRUE(decision.ok());
  EXPECT_EQ(decision->status, 200);
}

}  // namespace
}  // namespace sluice::testing
