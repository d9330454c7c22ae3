// What the tests of sluiced behind a real Envoy share: the configs under tests/envoy/configs/, a
// sluiced started on free loopback ports, sluiced's Prometheus counters, requests through Envoy,
// and EnvoyTest, the fixture that skips or fails when there is no Envoy.
//
// Example:
//   TEST_F(EnvoyTest, Something) {
//     auto redis = RedisServer::Start();
//     auto sluiced = StartSluiced(EnvoyConfigPath("rules.yaml"), (*redis)->Url(), dir);
//     auto envoy = EnvoyProcess::Start({.config_template = EnvoyConfig("rls.yaml"), ...});
//     auto answer = EnvoyGet(envoy->port("LISTENER_PORT"), "/user", {{"x-user", "alice"}});
//   }
//
// Thread safety: the free functions are thread-safe; SluicedProcess is not.
#ifndef SLUICE_TESTS_ENVOY_ENVOY_TEST_SUPPORT_H_
#define SLUICE_TESTS_ENVOY_ENVOY_TEST_SUPPORT_H_

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"

namespace sluice::testing {

// The path and the text of tests/envoy/configs/`name`.
std::filesystem::path EnvoyConfigPath(const std::string& name);
std::string EnvoyConfig(const std::string& name);

// A sluiced started by StartSluiced(), killed when destroyed.
struct SluicedProcess {
  std::unique_ptr<ChildProcess> process = nullptr;
  int http_port = 0;
  int grpc_port = 0;
  std::filesystem::path log_path = {};

  // What it logged so far, for failure messages.
  std::string Log() const;
  // SIGTERM, and waits for it to exit (no drain: it is started with --drain-ms 0).
  void Stop();
};

// StartSluiced()
//
// Starts sluiced with `rules` (a file or directory) on `store`, its HTTP and gRPC listeners on free
// loopback ports, logging to `dir`/sluiced-<grpc port>.log, plus `extra_args`; waits until
// /healthcheck answers 200. Unavailable, with its log, when it does not within 30 s.
absl::StatusOr<SluicedProcess> StartSluiced(const std::filesystem::path& rules,
                                            const std::string& store,
                                            const std::filesystem::path& dir,
                                            const std::vector<std::string>& extra_args = {});

// SluicedCounter()
//
// The value of the Prometheus series `series` (name and labels exactly as sluiced writes them,
// e.g. `ratelimit_service_rate_limit_total_hits_total{domain="d",key="k"}`) on the sluiced whose
// HTTP listener is `http_port`; 0 when sluiced has no such series yet.
absl::StatusOr<int64_t> SluicedCounter(int http_port, const std::string& series);

// EnvoyGet()
//
// GET `target` on 127.0.0.1:`port` with `headers`; the whole answer, headers included.
absl::StatusOr<BeastResponse> EnvoyGet(
    int port, const std::string& target,
    const std::vector<std::pair<std::string, std::string>>& headers = {});

// EnvoyTest: a test that needs Envoy. Without the binary it is skipped, saying why, or fails when
// the environment variable CI is set (where skipping would hide that nothing ran).
class EnvoyTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_ENVOY_ENVOY_TEST_SUPPORT_H_
