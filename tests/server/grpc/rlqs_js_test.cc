// sluiced's Rate Limit Quota Service under grpc-js, the Node.js gRPC implementation: two streams
// that report as Envoy's filter does (several buckets, time_elapsed 0 first), unknown buckets and
// an unknown domain. grpc-js comes from npm into a temporary directory when the suite starts;
// without node, npm or the network the suite is skipped, saying why.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/grpc/grpc_server.h"
#include "src/server/grpc/rlqs_grpc_service.h"
#include "src/server/grpc/rls_grpc_service.h"
#include "src/server/rlqs/memory_quota_allocator.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/child_process.h"
#include "tests/testing/manual_clock.h"
#include "tests/testing/skip_or_fail.h"
#include "tests/testing/temp_dir.h"

namespace sluice::server {
namespace {

const std::string kSource = SLUICE_SOURCE_DIR;

constexpr char kConfig[] = R"(domain: quota
descriptors:
  - key: name
    value: api
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: name
    value: free
    rate_limit: {unlimited: true}
)";

TEST(RlqsJsTest, ServesGrpcJsStreams) {
  testing::TempDir temp("sluice-rlqs-js");
  ASSERT_FALSE(temp.path().empty());
  const std::string dir = temp.path().string();
  if (std::system("command -v node >/dev/null && command -v npm >/dev/null") != 0) {
    SLUICE_SKIP_OR_FAIL("node or npm is not installed");
  }
  absl::StatusOr<std::pair<int, std::string>> npm =
      testing::RunToExit({"/usr/bin/env", "npm", "install", "--prefix", dir, "--no-audit",
                          "--no-fund", "--loglevel=error", "@grpc/grpc-js", "@grpc/proto-loader"},
                         180'000);
  if (!npm.ok() || npm->first != 0) {
    SLUICE_SKIP_OR_FAIL(
        "npm could not install @grpc/grpc-js and @grpc/proto-loader (no network?): " +
        (npm.ok() ? npm->second : std::string(npm.status().message())));
  }

  auto memory = MemoryStore::Create({});
  ASSERT_TRUE(memory.ok());
  Metrics metrics;
  RateLimitService service(**memory, metrics, RateLimitServiceOptions{});
  const ConfigSource source{.name = "quota.yaml", .content = kConfig};
  service.SetConfig(*ParseRateLimitConfig({&source, 1}));
  RlsGrpcService rls(service, RlsGrpcServiceOptions{});
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  RlqsGrpcService rlqs(service, allocator, {.clock = &clock});
  GrpcServer server(GrpcServerOptions{.address = "127.0.0.1:0"},
                    std::vector<GrpcService*>{&rls, &rlqs});
  ASSERT_TRUE(server.Start().ok());

  std::vector<std::string> env = {"NODE_PATH=" + dir + "/node_modules"};
  if (const char* path = std::getenv("PATH")) env.push_back(std::string("PATH=") + path);
  absl::StatusOr<std::pair<int, std::string>> run = testing::RunToExit(
      {"/usr/bin/env", "node", kSource + "/tests/server/grpc/grpc_js/rlqs_client.js",
       std::to_string(server.port()), kSource + "/proto"},
      60'000, env);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->first, 0) << run->second;
  const std::string& out = run->second;
  for (const char* line :
       {"js-a name=api token_bucket 10 15\n", "js-a name=nope abandon - -\n",
        "js-a name=free ALLOW_ALL - 15\n", "js-b name=api DENY_ALL - 15\n", "done\n"}) {
    EXPECT_NE(out.find(line), std::string::npos) << "no \"" << line << "\" in:\n" << out;
  }
  // The unknown domain's bucket: abandoned on js-a's stream, after its first report.
  EXPECT_EQ(rlqs.Stats().buckets_abandoned, 3u) << out;
  EXPECT_EQ(rlqs.Stats().reports, 3u);
}

}  // namespace
}  // namespace sluice::server
