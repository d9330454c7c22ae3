// ChildProcess: a program started for an end-to-end test, killed when the test ends.
//
// Example:
//   auto p = ChildProcess::Start({"/path/sluiced", "--config", dir}, log_path);
//
// Thread safety: not thread-safe.
#ifndef SLUICE_TESTS_TESTING_CHILD_PROCESS_H_
#define SLUICE_TESTS_TESTING_CHILD_PROCESS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include <sys/types.h>

namespace sluice::testing {

class ChildProcess {
 public:
  // Starts `argv` with stdout and stderr appended to `log_path`, in this process's environment or,
  // when given, in exactly `env` ("NAME=value" each).
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv, const std::string& log_path,
      const std::optional<std::vector<std::string>>& env = std::nullopt);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Sends `signal` (e.g. SIGHUP, SIGTERM).
  void Signal(int signal) const;
  // Waits for exit (at most `timeout_ms`, then SIGKILL) and returns the exit status, or -1.
  int Wait(int timeout_ms);

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
};

// RunToExit()
//
// Runs `argv` to completion (killed after `timeout_ms`) and returns {exit status, combined output};
// `env` as for ChildProcess::Start().
absl::StatusOr<std::pair<int, std::string>> RunToExit(
    const std::vector<std::string>& argv, int timeout_ms,
    const std::optional<std::vector<std::string>>& env = std::nullopt);

// Polls `condition` every 20 ms until it is true or `timeout_ms` passes; returns its last value.
// For waiting on another process (a server starting, a file being reloaded), where no clock can be
// injected; real time here is a bound, never the thing under test.
bool WaitFor(const std::function<bool()>& condition, int timeout_ms);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_CHILD_PROCESS_H_
