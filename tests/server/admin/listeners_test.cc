// The debug and Prometheus listeners' handlers, and listen addresses (src/server/listeners.h).
#include "src/server/admin/listeners.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/stats/metrics.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;

HttpResponse Get(const HttpServer::Handler& handler, std::string target) {
  HttpResponse out{.status = 0};
  handler(HttpRequest{.method = "GET", .target = std::move(target)},
          [&out](HttpResponse r) { out = std::move(r); });
  return out;
}

TEST(ParseListenAddress, SplitsHostAndPortAndNamesTheFlagOnError) {
  absl::StatusOr<ListenAddress> a = ParseListenAddress("--http", "0.0.0.0:8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 8080);
  a = ParseListenAddress("--http", "[::1]:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 0);
  for (const char* bad : {"8080", ":8080", "host:", "host:65536", "host:-1", "host:http"}) {
    a = ParseListenAddress("--debug", bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(a.status()));
    EXPECT_THAT(std::string(a.status().message()), HasSubstr("--debug"));
  }
}

TEST(DebugHandler, ServesTheLoadedRulesAndItsIndex) {
  auto store = MemoryStore::Create({});
  ASSERT_TRUE(store.ok());
  Metrics metrics;
  RateLimitService service(**store, metrics, {});
  const HttpServer::Handler handler = DebugHandler(service);
  EXPECT_EQ(Get(handler, "/rlconfig").body, "");  // No config yet.
  const ConfigSource source{
      .name = "d.yaml",
      .content =
          "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, "
          "requests_per_unit: 1}\n"};
  auto config = ParseRateLimitConfig({&source, 1});
  ASSERT_TRUE(config.ok());
  service.SetConfig(*config);
  HttpResponse r = Get(handler, "/rlconfig");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("d.k"));
  // Where the config came from, when the service was told, as a comment line first.
  service.SetConfig(*config, "xds 127.0.0.1:18000 version v7");
  EXPECT_THAT(Get(handler, "/rlconfig").body,
              ::testing::StartsWith("# config: xds 127.0.0.1:18000 version v7\nd.k"));
  EXPECT_THAT(Get(handler, "/").body, HasSubstr("/rlconfig"));
  EXPECT_EQ(Get(handler, "/json").status, 404);
}

TEST(PrometheusHandler, ServesMetricsAtItsPathOnly) {
  Metrics metrics;
  metrics.CountConfigLoad(true);
  const HttpServer::Handler handler = PrometheusHandler(metrics, "/stats/prometheus");
  HttpResponse r = Get(handler, "/stats/prometheus?x=1");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.content_type, HasSubstr("text/plain"));
  EXPECT_THAT(r.body, HasSubstr("config_load_success"));
  EXPECT_EQ(Get(handler, "/metrics").status, 404);
}

}  // namespace
}  // namespace sluice::server
