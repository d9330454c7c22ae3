// ServerSettings from envoyproxy/ratelimit's environment variables (src/server/settings.h).
#include "src/server/settings.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/store_url.h"

#include "src/server/go_values.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// The reference's way: no --config. A Redis store is needed (its default backend), over TCP.
const std::map<std::string, std::string> kRedisTcp = {{"REDIS_SOCKET_TYPE", "tcp"},
                                                      {"REDIS_URL", "redis.internal:6379"}};

absl::StatusOr<ServerSettings> Apply(std::map<std::string, std::string> vars,
                                     absl::flat_hash_set<std::string> flags = {},
                                     ServerSettings settings = {}) {
  absl::Status s = ApplyReferenceEnvironment(Env(std::move(vars)), flags, settings);
  if (!s.ok()) return s;
  return settings;
}

TEST(Settings, StartedTheReferencesWayListensWhereTheReferenceListens) {
  absl::StatusOr<ServerSettings> s = Apply(kRedisTcp);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->http, "0.0.0.0:8080");
  EXPECT_EQ(s->grpc, "0.0.0.0:8081");
  EXPECT_EQ(s->debug, "0.0.0.0:6070");
  EXPECT_EQ(s->config, "/srv/runtime_data/current/config");
  EXPECT_EQ(s->log_level, "warn");
  EXPECT_TRUE(s->statsd.enabled);
  EXPECT_EQ(s->statsd.host, "localhost");
  EXPECT_EQ(s->statsd.port, 8125);
  EXPECT_EQ(s->statsd.flush_interval, std::chrono::seconds(10));
  EXPECT_FALSE(s->ignore_dotfiles);
  EXPECT_EQ(s->grpc_max_connection_age, std::chrono::hours(24));
  EXPECT_EQ(s->grpc_max_connection_age_grace, std::chrono::hours(1));
  EXPECT_EQ(s->store, "redis://redis.internal:6379?timeout_ms=10000&connect_timeout_ms=10000");
}

TEST(Settings, WithConfigFlagOnlySetVariablesApply) {
  ServerSettings flags_applied;
  flags_applied.config = "/etc/sluice";
  absl::StatusOr<ServerSettings> s = Apply({{"PORT", "9000"}}, {"--config"}, flags_applied);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->http, "127.0.0.1:9000");
  EXPECT_EQ(s->grpc, "127.0.0.1:8081");
  EXPECT_EQ(s->store, "memory");
  EXPECT_FALSE(s->statsd.enabled);
  EXPECT_EQ(s->log_level, "info");
  EXPECT_EQ(s->config, "/etc/sluice");
}

TEST(Settings, FlagsWinOverVariables) {
  ServerSettings flags_applied;
  flags_applied.http = "127.0.0.1:1234";
  flags_applied.store = "memory";
  auto vars = kRedisTcp;
  vars["PORT"] = "9000";
  vars["REDIS_URL"] = "elsewhere:6379";
  absl::StatusOr<ServerSettings> s = Apply(vars, {"--http", "--store"}, flags_applied);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->http, "127.0.0.1:1234");
  EXPECT_EQ(s->store, "memory");
}

// Verifies every flag that sluiced adds for a reference setting wins over its variable.
TEST(Settings, NewFlagsWinOverTheirVariables) {
  ServerSettings flags_applied;
  flags_applied.statsd = StatsdSettings{
      .enabled = true, .host = "10.0.0.9", .port = 9999, .flush_interval = std::chrono::seconds(3)};
  flags_applied.near_limit_ratio = 0.5f;
  flags_applied.key_prefix = "flag_";
  flags_applied.force_start = true;
  flags_applied.healthy_with_one_config = false;
  flags_applied.ignore_dotfiles = true;
  flags_applied.prometheus = "127.0.0.1:9102";
  flags_applied.prometheus_path = "/m";
  flags_applied.grpc_max_connection_age = std::chrono::minutes(5);
  flags_applied.redis_startup_max_elapsed = std::chrono::seconds(7);
  auto vars = kRedisTcp;
  vars.insert({{"USE_STATSD", "false"},
               {"STATSD_HOST", "elsewhere"},
               {"STATSD_PORT", "1"},
               {"STATS_FLUSH_INTERVAL", "1s"},
               {"NEAR_LIMIT_RATIO", "0.9"},
               {"CACHE_KEY_PREFIX", "env_"},
               {"FORCE_START_WITHOUT_INITIAL_CONFIG", "false"},
               {"HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "true"},
               {"RUNTIME_IGNOREDOTFILES", "false"},
               {"PROMETHEUS_PATH", "/env"},
               {"GRPC_MAX_CONNECTION_AGE", "1h"},
               {"REDIS_STARTUP_MAX_ELAPSED_TIME", "1m"}});
  absl::StatusOr<ServerSettings> s =
      Apply(vars,
            {"--statsd", "--statsd-flush-ms", "--near-limit-ratio", "--key-prefix", "--force-start",
             "--healthy-with-one-config", "--ignore-dotfiles", "--prometheus", "--prometheus-path",
             "--grpc-max-connection-age-ms", "--redis-startup-max-elapsed-ms"},
            flags_applied);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->statsd.enabled);
  EXPECT_EQ(s->statsd.host, "10.0.0.9");
  EXPECT_EQ(s->statsd.port, 9999);
  EXPECT_EQ(s->statsd.flush_interval, std::chrono::seconds(3));
  EXPECT_FLOAT_EQ(s->near_limit_ratio, 0.5f);
  EXPECT_EQ(s->key_prefix, "flag_");
  EXPECT_TRUE(s->force_start);
  EXPECT_FALSE(s->healthy_with_one_config);
  EXPECT_TRUE(s->ignore_dotfiles);
  EXPECT_EQ(s->prometheus, "127.0.0.1:9102");
  EXPECT_EQ(s->prometheus_path, "/m");
  EXPECT_EQ(s->grpc_max_connection_age, std::chrono::minutes(5));
  EXPECT_EQ(s->redis_startup_max_elapsed, std::chrono::seconds(7));
}

TEST(Settings, DisableStatsTurnsStatsdAndPrometheusOff) {
  auto vars = kRedisTcp;
  vars.insert({{"DISABLE_STATS", "true"}, {"USE_PROMETHEUS", "true"}});
  absl::StatusOr<ServerSettings> s = Apply(vars);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->disable_stats);
  EXPECT_FALSE(s->statsd.enabled);
  EXPECT_TRUE(s->prometheus.empty());
}

TEST(Settings, ListenersStatsAndRuntimeFromVariables) {
  auto vars = kRedisTcp;
  vars.insert({{"HOST", "127.0.0.1"},
               {"PORT", "18080"},
               {"GRPC_UDS", "/tmp/rl.sock"},
               {"DEBUG_PORT", "16070"},
               {"RUNTIME_ROOT", "/data"},
               {"RUNTIME_SUBDIRECTORY", "ratelimit"},
               {"RUNTIME_APPDIRECTORY", "rules"},
               {"RUNTIME_IGNOREDOTFILES", "true"},
               {"MERGE_DOMAIN_CONFIG", "true"},
               {"USE_STATSD", "true"},
               {"STATSD_HOST", "127.0.0.1"},
               {"STATSD_PORT", "9125"},
               {"EXTRA_TAGS", "env:prod,zone:a"},
               {"STATS_FLUSH_INTERVAL", "1.5s"},
               {"LOG_LEVEL", "debug"},
               {"LOG_FORMAT", "json"},
               {"NEAR_LIMIT_RATIO", "0.9"},
               {"SHADOW_MODE", "true"},
               {"QUOTA_MODE", "1"},
               {"RESPONSE_DYNAMIC_METADATA", "true"},
               {"LIMIT_RESPONSE_HEADERS_ENABLED", "true"},
               {"LIMIT_REMAINING_HEADER", "X-Left"},
               {"LOCAL_CACHE_SIZE_IN_BYTES", "1048576"},
               {"CACHE_KEY_PREFIX", "rl_"},
               {"GRPC_MAX_CONNECTION_AGE", "1h30m"}});
  absl::StatusOr<ServerSettings> s = Apply(vars);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->http, "127.0.0.1:18080");
  EXPECT_EQ(s->grpc, "unix:/tmp/rl.sock");
  EXPECT_EQ(s->debug, "0.0.0.0:16070");  // HOST is the HTTP listener's; DEBUG_HOST defaults.
  EXPECT_EQ(s->config, "/data/ratelimit/rules");
  EXPECT_TRUE(s->ignore_dotfiles);
  EXPECT_TRUE(s->merge_domains);
  EXPECT_EQ(s->statsd.host, "127.0.0.1");
  EXPECT_EQ(s->statsd.port, 9125);
  EXPECT_THAT(s->statsd.tags,
              ::testing::ElementsAre(std::pair<std::string, std::string>("env", "prod"),
                                     std::pair<std::string, std::string>("zone", "a")));
  EXPECT_EQ(s->statsd.flush_interval, std::chrono::milliseconds(1500));
  EXPECT_EQ(s->log_level, "debug");
  EXPECT_EQ(s->log_format, "json");
  EXPECT_FLOAT_EQ(s->near_limit_ratio, 0.9f);
  EXPECT_TRUE(s->shadow_mode);
  EXPECT_TRUE(s->quota_mode);
  EXPECT_TRUE(s->response_dynamic_metadata);
  EXPECT_TRUE(s->response_headers);
  EXPECT_EQ(s->header_names.remaining, "X-Left");
  EXPECT_EQ(s->header_names.limit, "RateLimit-Limit");
  EXPECT_EQ(s->local_cache_bytes, 1048576u);
  EXPECT_EQ(s->key_prefix, "rl_");
  EXPECT_EQ(s->grpc_max_connection_age, std::chrono::minutes(90));
}

TEST(Settings, RedisTypesBecomeStoreUrls) {
  absl::StatusOr<ServerSettings> cluster = Apply({{"REDIS_SOCKET_TYPE", "tcp"},
                                                  {"REDIS_TYPE", "CLUSTER"},
                                                  {"REDIS_URL", "10.0.0.1:7000,10.0.0.2:7000"},
                                                  {"REDIS_AUTH", "user:p@ss"},
                                                  {"REDIS_POOL_SIZE", "4"},
                                                  {"REDIS_TIMEOUT", "250ms"}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->store,
            "redis-cluster://user:p%40ss@10.0.0.1:7000,10.0.0.2:7000"
            "?connections=4&timeout_ms=250&connect_timeout_ms=250");
  absl::StatusOr<StoreUrl> parsed = ParseStoreUrl(cluster->store);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->kind, StoreUrl::Kind::kRedisCluster);
  EXPECT_EQ(parsed->password, "p@ss");

  absl::StatusOr<ServerSettings> sentinel =
      Apply({{"REDIS_SOCKET_TYPE", "tcp"},
             {"REDIS_TYPE", "sentinel"},
             {"REDIS_URL", "mymaster,10.0.0.1:26379,10.0.0.2:26379"},
             {"REDIS_AUTH", "secret"},
             {"REDIS_SENTINEL_AUTH", "sentinel-secret"},
             {"REDIS_TLS", "true"},
             {"REDIS_TLS_CACERT", "/etc/ca.pem"}});
  ASSERT_TRUE(sentinel.ok()) << sentinel.status();
  parsed = ParseStoreUrl(sentinel->store);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << " " << sentinel->store;
  EXPECT_EQ(parsed->kind, StoreUrl::Kind::kRedisSentinel);
  EXPECT_TRUE(parsed->tls);
  EXPECT_EQ(parsed->primary_name, "mymaster");
  EXPECT_EQ(parsed->nodes.size(), 2u);
  EXPECT_EQ(parsed->password, "secret");
  EXPECT_EQ(parsed->sentinel_password, "sentinel-secret");

  absl::StatusOr<ServerSettings> per_second = Apply({{"REDIS_SOCKET_TYPE", "tcp"},
                                                     {"REDIS_URL", "main:6379"},
                                                     {"REDIS_PERSECOND", "true"},
                                                     {"REDIS_PERSECOND_SOCKET_TYPE", "tcp"},
                                                     {"REDIS_PERSECOND_URL", "fast:6379"}});
  ASSERT_TRUE(per_second.ok()) << per_second.status();
  EXPECT_THAT(per_second->per_second_store, ::testing::StartsWith("redis://fast:6379"));
}

// Verifies every refusal names its variable, and all of them are reported at once.
TEST(Settings, RefusesWhatItCannotHonourByName) {
  absl::StatusOr<ServerSettings> s = Apply({{"BACKEND_TYPE", "memcache"},
                                            {"CONFIG_TYPE", "CONSUL"},
                                            {"TRACING_ENABLED", "true"},
                                            {"LOG_LEVEL", "loud"},
                                            {"USE_DOG_STATSD", "true"},
                                            {"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "false"},
                                            {"EXPIRATION_JITTER_MAX_SECONDS", "60"},
                                            {"GRPC_MAX_CONNECTION_AGE", "soon"}});
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
  const std::string message(s.status().message());
  for (const char* name :
       {"BACKEND_TYPE: memcache", "CONFIG_TYPE: unknown type 'CONSUL'",
        "TRACING_ENABLED:", "LOG_LEVEL: unknown level 'loud'",
        "USE_DOG_STATSD:", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT:",
        "EXPIRATION_JITTER_MAX_SECONDS:", "GRPC_MAX_CONNECTION_AGE: invalid duration"}) {
    EXPECT_THAT(message, HasSubstr(name));
  }
}

// Verifies the exact-reference switch: off by default, on through the variable (or the flag, which
// wins), and STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT honoured with the reference's meaning under it
// (false or unset counts rejected hits) while false stays refused without it.
TEST(Settings, ReferenceSemanticsHonourStopCacheKeyIncrementWhenOverlimit) {
  absl::StatusOr<ServerSettings> s = Apply(kRedisTcp);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->reference_semantics);

  auto with = [](std::map<std::string, std::string> vars) {
    vars.insert(kRedisTcp.begin(), kRedisTcp.end());
    return vars;
  };
  s = Apply(with({{"SLUICE_REFERENCE_SEMANTICS", "true"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->reference_semantics);
  EXPECT_FALSE(s->stop_increment_when_over_limit);

  s = Apply(with({{"SLUICE_REFERENCE_SEMANTICS", "true"},
                  {"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "false"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->stop_increment_when_over_limit);

  s = Apply(with(
      {{"SLUICE_REFERENCE_SEMANTICS", "1"}, {"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->reference_semantics);
  EXPECT_TRUE(s->stop_increment_when_over_limit);

  // The flag wins over the variable.
  ServerSettings flagged;
  flagged.reference_semantics = true;
  s = Apply(with({{"SLUICE_REFERENCE_SEMANTICS", "false"},
                  {"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "false"}}),
            {"--reference-semantics"}, flagged);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->reference_semantics);

  s = Apply(with({{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "false"}}));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: sluiced never counts"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--reference-semantics"));
  s = Apply(with({{"SLUICE_REFERENCE_SEMANTICS", "maybe"}}));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("SLUICE_REFERENCE_SEMANTICS:"));
}

TEST(Settings, XdsTakesTheReferencesDefaults) {
  auto vars = kRedisTcp;
  vars["CONFIG_TYPE"] = "GRPC_XDS_SOTW";
  absl::StatusOr<ServerSettings> s = Apply(vars);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->xds);
  const XdsSettings& x = s->xds_settings;
  EXPECT_EQ(x.server_url, "localhost:18000");
  EXPECT_EQ(x.node_id, "default");
  EXPECT_THAT(x.node_metadata, IsEmpty());
  EXPECT_THAT(x.additional_headers, IsEmpty());
  EXPECT_EQ(x.connect_retry_interval, std::chrono::seconds(3));
  EXPECT_FALSE(x.use_tls);
  EXPECT_EQ(x.backoff_initial, std::chrono::seconds(10));
  EXPECT_EQ(x.backoff_max, std::chrono::seconds(60));
  EXPECT_EQ(x.backoff_factor, 0.5);
  EXPECT_TRUE(x.backoff_jitter);
  EXPECT_EQ(x.max_message_bytes, 0u);
  EXPECT_FALSE(x.merge_domains);
  EXPECT_FALSE(s->force_start);
}

TEST(Settings, XdsHonoursEveryVariable) {
  auto vars = kRedisTcp;
  vars.insert(
      {{"CONFIG_TYPE", "grpc_xds_sotw"},
       {"CONFIG_GRPC_XDS_SERVER_URL", "eg.envoy-gateway-system:18001"},
       {"CONFIG_GRPC_XDS_NODE_ID", "rl"},
       {"CONFIG_GRPC_XDS_NODE_METADATA", "zone=eu,a=b=c,key1:val1"},
       {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "500ms"},
       {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "X-Tenant:blue,authorization:Bearer t"},
       {"CONFIG_GRPC_XDS_SERVER_USE_TLS", "true"},
       {"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "/c.pem"},
       {"CONFIG_GRPC_XDS_CLIENT_TLS_KEY", "/c.key"},
       {"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "/ca.pem"},
       {"CONFIG_GRPC_XDS_SERVER_TLS_SAN", "eg.local"},
       {"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "1s"},
       {"XDS_CLIENT_BACKOFF_MAX_INTERVAL", "2m"},
       {"XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "1.5"},
       {"XDS_CLIENT_BACKOFF_JITTER", "false"},
       {"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", "8388608"},
       {"MERGE_DOMAIN_CONFIG", "true"},
       {"FORCE_START_WITHOUT_INITIAL_CONFIG", "true"}});
  absl::StatusOr<ServerSettings> s = Apply(vars);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->xds);
  const XdsSettings& x = s->xds_settings;
  EXPECT_EQ(x.server_url, "eg.envoy-gateway-system:18001");
  EXPECT_EQ(x.node_id, "rl");
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  // Split at the first '=', as the reference; an item without one is skipped (and noted).
  EXPECT_EQ(x.node_metadata, (Pairs{{"zone", "eu"}, {"a", "b=c"}}));
  EXPECT_THAT(absl::StrJoin(s->notes, "\n"), HasSubstr("'key1:val1' has no '='"));
  EXPECT_EQ(x.additional_headers, (Pairs{{"x-tenant", "blue"}, {"authorization", "Bearer t"}}));
  EXPECT_EQ(x.connect_retry_interval, std::chrono::milliseconds(500));
  EXPECT_TRUE(x.use_tls);
  EXPECT_EQ(x.client_tls_cert, "/c.pem");
  EXPECT_EQ(x.client_tls_key, "/c.key");
  EXPECT_EQ(x.server_tls_ca, "/ca.pem");
  EXPECT_EQ(x.server_tls_san, "eg.local");
  EXPECT_EQ(x.backoff_initial, std::chrono::seconds(1));
  EXPECT_EQ(x.backoff_max, std::chrono::minutes(2));
  EXPECT_EQ(x.backoff_factor, 1.5);
  EXPECT_FALSE(x.backoff_jitter);
  EXPECT_EQ(x.max_message_bytes, 8u << 20);
  EXPECT_TRUE(x.merge_domains);
  EXPECT_TRUE(s->force_start);
}

// Verifies sluiced starts from the environment Envoy Gateway writes into its envoy-ratelimit
// Deployment (envoyproxy/gateway internal/infrastructure/kubernetes/ratelimit, testdata
// deployments/default.yaml): xDS with mTLS to the controller, gRPC over TLS, statsd to the
// exporter beside it, the runtime variables it still sets, and GRPC_SERVER_TLS_CA_CERT, which is
// not one of the reference's variables (the reference ignores it, so does sluiced).
TEST(Settings, EnvoyGatewaysRateLimitDeploymentStarts) {
  absl::StatusOr<ServerSettings> s =
      Apply({{"RUNTIME_ROOT", "/data"},
             {"RUNTIME_SUBDIRECTORY", "ratelimit"},
             {"RUNTIME_IGNOREDOTFILES", "true"},
             {"RUNTIME_WATCH_ROOT", "false"},
             {"LOG_LEVEL", "info"},
             {"USE_STATSD", "true"},
             {"STATSD_PORT", "9125"},
             {"CONFIG_TYPE", "GRPC_XDS_SOTW"},
             {"CONFIG_GRPC_XDS_SERVER_URL", "envoy-gateway:18001"},
             {"CONFIG_GRPC_XDS_NODE_ID", "envoy-ratelimit"},
             {"GRPC_SERVER_USE_TLS", "true"},
             {"GRPC_SERVER_TLS_CERT", "/certs/tls.crt"},
             {"GRPC_SERVER_TLS_KEY", "/certs/tls.key"},
             {"GRPC_SERVER_TLS_CA_CERT", "/certs/ca.crt"},
             {"CONFIG_GRPC_XDS_SERVER_USE_TLS", "true"},
             {"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "/certs/tls.crt"},
             {"CONFIG_GRPC_XDS_CLIENT_TLS_KEY", "/certs/tls.key"},
             {"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "/certs/ca.crt"},
             {"FORCE_START_WITHOUT_INITIAL_CONFIG", "true"},
             {"REDIS_SOCKET_TYPE", "tcp"},
             {"REDIS_URL", "redis.redis.svc:6379"}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->xds);
  EXPECT_EQ(s->xds_settings.server_url, "envoy-gateway:18001");
  EXPECT_EQ(s->xds_settings.node_id, "envoy-ratelimit");
  EXPECT_TRUE(s->xds_settings.use_tls);
  EXPECT_EQ(s->xds_settings.server_tls_ca, "/certs/ca.crt");
  EXPECT_TRUE(s->force_start);
  EXPECT_EQ(s->grpc_tls_cert, "/certs/tls.crt");
  EXPECT_EQ(s->grpc_tls_client_ca, "");  // Envoy's client certificates are not required.
  EXPECT_EQ(s->http, "0.0.0.0:8080");    // Its probes: GET /healthcheck on 8080.
  EXPECT_EQ(s->grpc, "0.0.0.0:8081");
  EXPECT_TRUE(s->statsd.enabled);
  EXPECT_EQ(s->statsd.port, 9125);
  EXPECT_THAT(s->store, HasSubstr("redis.redis.svc:6379"));
}

TEST(Settings, XdsRefusesBadValuesByName) {
  auto vars = kRedisTcp;
  vars.insert({{"CONFIG_TYPE", "GRPC_XDS_SOTW"},
               {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "0s"},
               {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "novalue"},
               {"CONFIG_GRPC_XDS_SERVER_USE_TLS", "maybe"},
               {"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "10"},
               {"XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "half"},
               {"XDS_CLIENT_BACKOFF_JITTER", "sometimes"},
               {"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", "-1"}});
  absl::StatusOr<ServerSettings> s = Apply(vars);
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
  const std::string message(s.status().message());
  for (const char* name :
       {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: must be positive",
        "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS:", "CONFIG_GRPC_XDS_SERVER_USE_TLS:",
        "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL:", "XDS_CLIENT_BACKOFF_RANDOM_FACTOR: 'half'",
        "XDS_CLIENT_BACKOFF_JITTER:", "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES:"}) {
    EXPECT_THAT(message, HasSubstr(name));
  }
  vars = kRedisTcp;
  vars.insert({{"CONFIG_TYPE", "GRPC_XDS_SOTW"},
               {"CONFIG_GRPC_XDS_SERVER_USE_TLS", "true"},
               {"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "/c.pem"},
               {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "grpc-timeout:1"}});
  const std::string tls(Apply(vars).status().message());
  EXPECT_THAT(tls, HasSubstr("CONFIG_GRPC_XDS_CLIENT_TLS_CERT and _KEY go together"));
  EXPECT_THAT(tls, HasSubstr("'grpc-timeout' is not a valid gRPC metadata key"));
}

TEST(Settings, XdsVariablesAreNotedAsUnusedWithFiles) {
  auto vars = kRedisTcp;
  vars["CONFIG_GRPC_XDS_SERVER_URL"] = "x:1";
  absl::StatusOr<ServerSettings> s = Apply(vars);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->xds);
  EXPECT_THAT(absl::StrJoin(s->notes, "\n"),
              HasSubstr("CONFIG_GRPC_XDS_SERVER_URL is set but unused"));
  ServerSettings with_config;
  with_config.config = "/etc/sluice";
  EXPECT_THAT(
      std::string(
          Apply({{"CONFIG_TYPE", "GRPC_XDS_SOTW"}}, {"--config"}, with_config).status().message()),
      HasSubstr("do not give --config too"));
}

TEST(Settings, TheReferencesUnixSocketDefaultIsRefusedUnlessAStoreIsGiven) {
  absl::StatusOr<ServerSettings> s = Apply({});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("REDIS_SOCKET_TYPE: unix sockets"));
  ServerSettings with_store;
  with_store.store = "memory";
  EXPECT_TRUE(Apply({}, {"--store"}, with_store).ok());
}

TEST(Settings, UnusedFeatureVariablesAreNotedNotIgnored) {
  auto vars = kRedisTcp;
  vars["MEMCACHE_HOST_PORT"] = "mc:11211";
  vars["TRACING_SERVICE_NAME"] = "rl";
  absl::StatusOr<ServerSettings> s = Apply(vars);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->notes, ::testing::Contains(HasSubstr("MEMCACHE_HOST_PORT is set but unused")));
  EXPECT_THAT(s->notes, ::testing::Contains(HasSubstr("TRACING_SERVICE_NAME is set but unused")));
}

TEST(Settings, GrpcTlsNeedsCertAndKey) {
  auto vars = kRedisTcp;
  vars["GRPC_SERVER_USE_TLS"] = "true";
  vars["GRPC_SERVER_TLS_CERT"] = "/c.pem";
  EXPECT_THAT(std::string(Apply(vars).status().message()), HasSubstr("GRPC_SERVER_USE_TLS: needs"));
  vars["GRPC_SERVER_TLS_KEY"] = "/k.pem";
  vars["GRPC_CLIENT_TLS_CACERT"] = "/ca.pem";
  absl::StatusOr<ServerSettings> s = Apply(vars);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->grpc_tls_cert, "/c.pem");
  EXPECT_EQ(s->grpc_tls_client_ca, "/ca.pem");
}

TEST(Settings, ReferenceVariableNamesAreAllKnown) {
  EXPECT_EQ(ReferenceVariableNames().size(), 114u);  // Every envconfig tag of settings.go.
  // Each variable set to an empty string changes nothing (an empty value is unset).
  std::map<std::string, std::string> empty;
  for (std::string_view name : ReferenceVariableNames()) empty[std::string(name)] = "";
  ServerSettings settings;
  settings.config = "/c";
  EXPECT_TRUE(Apply(empty, {"--config"}, settings).ok());
}

// Verifies docs/compatibility.md's migration table has a row for every variable of the reference.
TEST(Settings, EveryReferenceVariableHasAMigrationRow) {
  std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/docs/compatibility.md");
  ASSERT_TRUE(in.good());
  std::stringstream doc;
  doc << in.rdbuf();
  for (std::string_view name : ReferenceVariableNames()) {
    EXPECT_THAT(doc.str(), HasSubstr("\n| `" + std::string(name) + "` |")) << name;
  }
}

TEST(GoValues, DurationsBoolsAndMaps) {
  EXPECT_EQ(*ParseGoDuration("300ms"), std::chrono::milliseconds(300));
  EXPECT_EQ(*ParseGoDuration("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(*ParseGoDuration("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(*ParseGoDuration("0"), std::chrono::nanoseconds(0));
  EXPECT_EQ(*ParseGoDuration("2us"), std::chrono::microseconds(2));
  EXPECT_FALSE(ParseGoDuration("10").ok());
  EXPECT_FALSE(ParseGoDuration("1d").ok());
  EXPECT_FALSE(ParseGoDuration("").ok());
  EXPECT_TRUE(*ParseGoBool("True"));
  EXPECT_FALSE(*ParseGoBool("0"));
  EXPECT_FALSE(ParseGoBool("yes").ok());
  EXPECT_THAT(*ParseGoStringMap(""), IsEmpty());
  EXPECT_FALSE(ParseGoStringMap("novalue").ok());
}

// Verifies the dashboard switch: on by default, off through SLUICE_DASHBOARD, and the flag wins.
TEST(Settings, DashboardFollowsItsVariableUnlessTheFlagIsGiven) {
  absl::StatusOr<ServerSettings> s = Apply(kRedisTcp);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->dashboard);
  std::map<std::string, std::string> off = kRedisTcp;
  off["SLUICE_DASHBOARD"] = "false";
  s = Apply(off);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->dashboard);
  s = Apply(off, {"--dashboard"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->dashboard);
}

}  // namespace
}  // namespace sluice::server
