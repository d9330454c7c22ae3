// EnvoyProcess: a real Envoy (the one scripts/install-envoy.sh puts in .deps/) for end-to-end
// tests, started from a config template on free loopback ports and stopped when destroyed.
//
// The template is a whole Envoy bootstrap in YAML with ${NAME} placeholders. The caller fills in
// the values it knows (a sluiced's gRPC port); EnvoyProcess picks a free loopback port for
// ${ADMIN_PORT} and for each name in `ports`, and picks them again when Envoy could not bind one
// (another process took it in between). Envoy runs with one worker, without hot restart, logging
// warnings and errors to a file that failure messages quote (Log()).
//
// Example:
//   auto envoy = EnvoyProcess::Start({.config_template = text,
//                                     .values = {{"SLUICED_GRPC_PORT", "8081"}},
//                                     .ports = {"LISTENER_PORT"}});
//   ASSERT_TRUE(envoy.ok()) << envoy.status();
//   HttpGet((*envoy)->port("LISTENER_PORT"), "/");
//
// Thread safety: not thread-safe; drive it from the test's main thread (the kernel kills Envoy when
// the thread that started it exits, so a crashed test leaves no Envoy behind).
#ifndef SLUICE_TESTS_TESTING_ENVOY_PROCESS_H_
#define SLUICE_TESTS_TESTING_ENVOY_PROCESS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include <sys/types.h>

#include "tests/testing/temp_dir.h"

namespace sluice::testing {

// EnvoyBinary()
//
// The Envoy to run: $SLUICE_ENVOY when set, else the pinned one in .deps/ (its path is compiled in
// from tests/testing/CMakeLists.txt). NotFound, saying how to install it, when it is not there.
absl::StatusOr<std::string> EnvoyBinary();

// FillPlaceholders()
//
// `text` with every ${NAME} replaced by values[NAME]; InvalidArgument naming the first placeholder
// without a value, so a template and its test cannot drift apart silently.
absl::StatusOr<std::string> FillPlaceholders(const std::string& text,
                                             const std::map<std::string, std::string>& values);

class EnvoyProcess {
 public:
  struct Options {
    // The bootstrap, with ${NAME} placeholders; ${ADMIN_PORT} is always filled in here.
    std::string config_template;
    // Values the caller fills in.
    std::map<std::string, std::string> values = {};
    // Placeholders to fill with free loopback ports, read back with port().
    std::vector<std::string> ports = {};
  };

  // EnvoyProcess::Start()
  //
  // Starts Envoy and waits until its admin /ready answers LIVE (at most 30 s). NotFound when there
  // is no Envoy binary (EnvoyBinary()); InvalidArgument for a placeholder without a value;
  // Unavailable, with Envoy's log, when it exits or is not ready in time.
  static absl::StatusOr<std::unique_ptr<EnvoyProcess>> Start(const Options& options);

  EnvoyProcess(const EnvoyProcess&) = delete;
  EnvoyProcess& operator=(const EnvoyProcess&) = delete;
  ~EnvoyProcess();

  // The port chosen for placeholder `name` (one of Options::ports, or "ADMIN_PORT"); 0 if none.
  int port(const std::string& name) const;
  int admin_port() const { return port("ADMIN_PORT"); }
  pid_t pid() const { return pid_; }
  // The config Envoy runs, placeholders filled in.
  const std::string& config() const { return config_; }

  // What Envoy wrote to stdout and stderr so far (its log: -l warning).
  std::string Log() const;

  // The value of the counter or gauge `name` in the admin /stats (e.g.
  // "cluster.upstream.ratelimit.ok"); NotFound when Envoy has no such statistic, which for some
  // (the rate limit filter's among them) means it was never counted: they appear at their first.
  absl::StatusOr<int64_t> Stat(const std::string& name) const;

  // SIGTERM, then SIGKILL when Envoy has not exited within 5 s; returns its exit status, or -1
  // when it had to be killed or was stopped already.
  int Stop();

 private:
  EnvoyProcess(std::unique_ptr<TempDir> dir, std::map<std::string, int> ports, std::string config,
               pid_t pid);

  std::unique_ptr<TempDir> dir_;
  std::map<std::string, int> ports_;
  std::string config_;
  pid_t pid_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_ENVOY_PROCESS_H_
