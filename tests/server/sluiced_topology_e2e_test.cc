// End-to-end tests of the sluiced binary on the distributed Redis topologies: two instances on
// one Redis Cluster share each limit exactly, with the keys of many users spread over every
// primary; an instance on a Sentinel-managed primary limits exactly and keeps deciding after the
// primary is killed and the Sentinels promote its replica. Real processes and real time: every
// wait is a bounded poll on an observable condition.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/grpc_probes.h"
#include "tests/testing/http_client.h"
#include "tests/testing/redis_cluster.h"
#include "tests/testing/redis_sentinel.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {
namespace {

constexpr int kLimit = 4;

std::string Config() {
  return absl::StrCat(
      "domain: topo\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: hour\n"
      "      requests_per_unit: ",
      kLimit, "\n");
}

class Workdir {
 public:
  Workdir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-topo-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
    std::ofstream(path_ / "topo.yaml") << Config();
  }
  Workdir(const Workdir&) = delete;
  Workdir& operator=(const Workdir&) = delete;
  ~Workdir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct Instance {
  std::unique_ptr<ChildProcess> process;
  int http_port = 0;
  int grpc_port = 0;
};

Instance StartSluiced(const Workdir& dir, const std::string& store, const std::string& name) {
  Instance s;
  s.http_port = *FreeLoopbackPort();
  s.grpc_port = *FreeLoopbackPort();
  const std::string log = (dir.path() / (name + ".log")).string();
  auto p = ChildProcess::Start({SLUICED_PATH, "--config", dir.path().string(), "--store", store,
                                "--http", absl::StrCat("127.0.0.1:", s.http_port), "--grpc",
                                absl::StrCat("127.0.0.1:", s.grpc_port), "--drain-ms", "0"},
                               log);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return s;
  s.process = *std::move(p);
  const int port = s.http_port;
  EXPECT_TRUE(WaitFor(
      [port] {
        auto r = HttpGet(port, "/healthcheck");
        return r.ok() && r->status == 200;
      },
      30'000))
      << "sluiced on " << store << " did not become healthy; log: " << log;
  return s;
}

std::string Request(const std::string& user) {
  return absl::StrCat(R"({"domain":"topo","descriptors":[{"entries":[{"key":"user","value":")",
                      user, R"("}]}]})");
}

int PostStatus(int port, const std::string& user) {
  absl::StatusOr<HttpResult> r = HttpPost(port, "/json", Request(user));
  return r.ok() ? r->status : -1;
}

int64_t KeysOn(RedisServer& server) {
  absl::StatusOr<std::string> n = server.Command({"DBSIZE"});
  return n.ok() ? std::stoll(*n) : -1;
}

// Verifies two instances on one Redis Cluster (one asked over /json, the other over gRPC) admit
// exactly the limit of every user between them, and that the users' keys land on every primary.
TEST(SluicedTopologyE2e, TwoInstancesShareEachLimitOnACluster) {
  auto cluster = RedisCluster::Start({.primaries = 3, .replicas_per_primary = 0});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Workdir dir;
  Instance a = StartSluiced(dir, (*cluster)->Url(), "a");
  Instance b = StartSluiced(dir, (*cluster)->Url(), "b");
  ASSERT_NE(a.process, nullptr);
  ASSERT_NE(b.process, nullptr);
  constexpr int kUsers = 24;
  for (int u = 0; u < kUsers; ++u) {
    const std::string user = absl::StrCat("user-", u);
    int admitted = 0;
    for (int i = 0; i < 3 * kLimit; ++i) {
      const int status = i % 2 == 0
                             ? PostStatus(a.http_port, user)
                             : testing::GrpcDecisionStatus(b.grpc_port, "topo", "user", user);
      ASSERT_TRUE(status == 200 || status == 429) << user << ": " << status;
      admitted += status == 200 ? 1 : 0;
    }
    EXPECT_EQ(admitted, kLimit) << user;
  }
  absl::StatusOr<std::vector<int>> primaries = (*cluster)->PrimaryPorts();
  ASSERT_TRUE(primaries.ok()) << primaries.status();
  ASSERT_EQ(primaries->size(), 3u);
  int64_t total = 0;
  for (int port : *primaries) {
    const int64_t keys = KeysOn((*cluster)->Node(port));
    EXPECT_GT(keys, 0) << "no limiter key on the primary on port " << port;
    total += keys;
  }
  EXPECT_EQ(total, kUsers);
}

// Verifies an instance on a Sentinel-managed primary limits exactly, and follows a failover: after
// the primary is killed, decisions come back within seconds from the promoted replica.
TEST(SluicedTopologyE2e, FollowsTheSentinelsPrimaryAcrossAFailover) {
  auto sentinel = RedisSentinel::Start({});
  ASSERT_TRUE(sentinel.ok()) << sentinel.status();
  Workdir dir;
  Instance s = StartSluiced(dir, (*sentinel)->Url(), "sentinel");
  ASSERT_NE(s.process, nullptr);
  int admitted = 0;
  for (int i = 0; i < 2 * kLimit; ++i) {
    const int status = PostStatus(s.http_port, "before");
    ASSERT_TRUE(status == 200 || status == 429) << status;
    admitted += status == 200 ? 1 : 0;
  }
  EXPECT_EQ(admitted, kLimit);

  const int old_primary = (*sentinel)->primary_port();
  (*sentinel)->KillPrimary();
  absl::StatusOr<int> new_primary = (*sentinel)->WaitForFailover(old_primary);
  ASSERT_TRUE(new_primary.ok()) << new_primary.status();
  // Decisions for a new user come back from the promoted replica within seconds.
  EXPECT_TRUE(WaitFor([&] { return PostStatus(s.http_port, "after") == 200; }, 20'000))
      << "no decision after the failover; log: " << (dir.path() / "sentinel.log").string();
  admitted = 1;
  for (int i = 0; i < 2 * kLimit; ++i) admitted += PostStatus(s.http_port, "after") == 200 ? 1 : 0;
  EXPECT_EQ(admitted, kLimit);
  EXPECT_GT(KeysOn((*sentinel)->Server(*new_primary)), 0);
}

}  // namespace
}  // namespace sluice::testing
