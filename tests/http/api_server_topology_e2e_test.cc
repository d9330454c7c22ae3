// End-to-end tests of examples/api_server (the middleware in a Beast server) on the distributed
// Redis topologies: a request that several limits govern stays all-or-nothing on a Redis Cluster
// (the middleware tags every key of one identity with the same hash tag, so they share a slot and
// one script), and the server limits exactly on a Sentinel-managed primary. Real processes and
// real time; every wait is a bounded poll.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/redis_cluster.h"
#include "tests/testing/redis_sentinel.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {
namespace {

// One route under two limits; the burst limit binds first. `burst` differs between the two
// servers of a test, `hourly` does not, so both servers count the hourly limit under one key.
std::string Rules(int burst) {
  return absl::StrCat(R"(area: topo
identity:
  trusted_proxies: []
  anonymous_tier: anonymous
routes:
  - name: list-items
    method: GET
    path: /api/items
    tiers:
      anonymous:
        - {name: items-burst, limit: )",
                      burst, R"(, period: 1h}
        - {name: items-hourly, limit: 4, period: 1h}
)");
}

class ApiServerTopologyE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-api-topo-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }

  void TearDown() override {
    servers_.clear();  // SIGKILL and reap every child.
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Starts api_server on `store` with Rules(burst) and returns its port once it answers.
  int StartServer(const std::string& store, int burst) {
    const int port = FreeLoopbackPort().value();
    const std::filesystem::path rules = dir_ / absl::StrCat("rules-", port, ".yaml");
    std::ofstream(rules) << Rules(burst);
    const std::string log = (dir_ / absl::StrCat("server-", port, ".log")).string();
    absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Start(
        {API_SERVER_PATH, "--store", store, "--port", absl::StrCat(port), "--rules",
         rules.string()},
        log);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return -1;
    servers_.push_back(*std::move(process));
    EXPECT_TRUE(WaitFor(
        [port] {
          auto r = HttpGet(port, "/healthz");
          return r.ok() && r->status == 200;
        },
        20'000))
        << "api_server on " << store << " did not start; log: " << log;
    return port;
  }

  static int Items(int port) {
    absl::StatusOr<HttpResult> r = HttpGet(port, "/api/items");
    return r.ok() ? r->status : -1;
  }

  // Sends `n` requests and returns how many were admitted; any answer but 200 or 429 fails.
  static int Admitted(int port, int n) {
    int admitted = 0;
    for (int i = 0; i < n; ++i) {
      const int status = Items(port);
      EXPECT_TRUE(status == 200 || status == 429) << status;
      admitted += status == 200 ? 1 : 0;
    }
    return admitted;
  }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<ChildProcess>> servers_;
};

// Verifies a two-limit request is all-or-nothing on a cluster: the denied requests consumed
// nothing of the hourly limit. The first server admits 3 (its burst limit); a second server with
// a larger burst limit shares the hourly key, so it admits exactly 4 - 3 = 1 more. Had the denied
// requests counted against the hourly limit, it would admit none; had the keys spanned slots, the
// cluster would have refused the script.
TEST_F(ApiServerTopologyE2eTest, MultiLimitRequestIsAllOrNothingOnACluster) {
  auto cluster = RedisCluster::Start({.primaries = 3, .replicas_per_primary = 0});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const int first = StartServer((*cluster)->Url(), /*burst=*/3);
  ASSERT_GT(first, 0);
  EXPECT_EQ(Admitted(first, 10), 3);
  const int second = StartServer((*cluster)->Url(), /*burst=*/100);
  ASSERT_GT(second, 0);
  EXPECT_EQ(Admitted(second, 10), 1);
  // Every key of the one identity is on one primary.
  absl::StatusOr<std::vector<int>> primaries = (*cluster)->PrimaryPorts();
  ASSERT_TRUE(primaries.ok()) << primaries.status();
  int holding = 0;
  for (int port : *primaries) {
    absl::StatusOr<std::string> n = (*cluster)->Node(port).Command({"DBSIZE"});
    ASSERT_TRUE(n.ok()) << n.status();
    holding += *n != "0" ? 1 : 0;
  }
  EXPECT_EQ(holding, 1);
}

// Verifies the server limits exactly on a Sentinel-managed primary.
TEST_F(ApiServerTopologyE2eTest, LimitsExactlyOnASentinelSet) {
  auto sentinel = RedisSentinel::Start({});
  ASSERT_TRUE(sentinel.ok()) << sentinel.status();
  const int port = StartServer((*sentinel)->Url(), /*burst=*/3);
  ASSERT_GT(port, 0);
  EXPECT_EQ(Admitted(port, 10), 3);
  absl::StatusOr<std::string> n =
      (*sentinel)->Server((*sentinel)->primary_port()).Command({"DBSIZE"});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_NE(*n, "0");
}

}  // namespace
}  // namespace sluice::testing
