#include "tests/envoy/envoy_test_support.h"

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#include "tests/testing/envoy_process.h"
#include "tests/testing/redis_server.h"

#ifndef SLUICED_PATH
#error "SLUICED_PATH and SLUICE_ENVOY_CONFIGS are defined by tests/envoy/CMakeLists.txt"
#endif

namespace sluice::testing {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::filesystem::path EnvoyConfigPath(const std::string& name) {
  return std::filesystem::path(SLUICE_ENVOY_CONFIGS) / name;
}

std::string EnvoyConfig(const std::string& name) { return ReadFile(EnvoyConfigPath(name)); }

std::string SluicedProcess::Log() const { return ReadFile(log_path); }

void SluicedProcess::Stop() {
  if (process == nullptr) return;
  process->Signal(SIGTERM);
  process->Wait(10'000);
  process.reset();
}

absl::StatusOr<SluicedProcess> StartSluiced(const std::filesystem::path& rules,
                                            const std::string& store,
                                            const std::filesystem::path& dir,
                                            const std::vector<std::string>& extra_args) {
  absl::StatusOr<int> http_port = FreeLoopbackPort();
  absl::StatusOr<int> grpc_port = FreeLoopbackPort();
  if (!http_port.ok()) return http_port.status();
  if (!grpc_port.ok()) return grpc_port.status();
  SluicedProcess s{.http_port = *http_port,
                   .grpc_port = *grpc_port,
                   .log_path = dir / absl::StrCat("sluiced-", *grpc_port, ".log")};
  std::vector<std::string> argv = {SLUICED_PATH,
                                   "--config",
                                   rules.string(),
                                   "--store",
                                   store,
                                   "--http",
                                   absl::StrCat("127.0.0.1:", s.http_port),
                                   "--grpc",
                                   absl::StrCat("127.0.0.1:", s.grpc_port),
                                   "--drain-ms",
                                   "0"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  absl::StatusOr<std::unique_ptr<ChildProcess>> process =
      ChildProcess::Start(argv, s.log_path.string());
  if (!process.ok()) return process.status();
  s.process = *std::move(process);
  const int port = s.http_port;
  if (!WaitFor(
          [port] {
            absl::StatusOr<HttpResult> r = HttpGet(port, "/healthcheck");
            return r.ok() && r->status == 200;
          },
          30'000)) {
    return absl::UnavailableError(
        absl::StrCat("sluiced did not become healthy; its log:\n", s.Log()));
  }
  return s;
}

absl::StatusOr<int64_t> SluicedCounter(int http_port, const std::string& series) {
  absl::StatusOr<HttpResult> metrics = HttpGet(http_port, "/metrics");
  if (!metrics.ok()) return metrics.status();
  const std::string prefix = series + " ";
  for (absl::string_view line : absl::StrSplit(metrics->body, '\n')) {
    int64_t value = 0;
    if (absl::ConsumePrefix(&line, prefix) && absl::SimpleAtoi(line, &value)) return value;
  }
  return 0;
}

absl::StatusOr<BeastResponse> EnvoyGet(
    int port, const std::string& target,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  BeastRequest request{boost::beast::http::verb::get, target, 11};
  request.set(boost::beast::http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) request.set(name, value);
  return HttpExchange(port, std::move(request));
}

void EnvoyTest::SetUp() {
  const absl::StatusOr<std::string> envoy = EnvoyBinary();
  if (envoy.ok()) return;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && *ci != '\0') {
    FAIL() << envoy.status() << " (CI is set: a test that needs Envoy fails without it)";
  }
  GTEST_SKIP() << envoy.status();
}

}  // namespace sluice::testing
