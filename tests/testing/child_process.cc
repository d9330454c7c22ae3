#include "tests/testing/child_process.h"

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace sluice::testing {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::string& log_path,
    const std::optional<std::vector<std::string>>& env) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  args.reserve(copy.size() + 1);
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_copy = env.value_or(std::vector<std::string>{});
  std::vector<char*> env_ptrs;
  for (std::string& e : env_copy) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(),
                             env.has_value() ? env_ptrs.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return absl::InternalError(absl::StrCat("cannot spawn ", argv[0]));
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid));
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

void ChildProcess::Signal(int signal) const {
  if (pid_ > 0) kill(pid_, signal);
}

int ChildProcess::Wait(int timeout_ms) {
  int status = 0;
  const bool exited = WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout_ms);
  if (!exited) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  if (!exited) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

absl::StatusOr<std::pair<int, std::string>> RunToExit(
    const std::vector<std::string>& argv, int timeout_ms,
    const std::optional<std::vector<std::string>>& env) {
  std::string tmpl = "/tmp/sluice-run-XXXXXX";
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) return absl::InternalError("mkstemp failed");
  close(fd);
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(argv, tmpl, env);
  if (!child.ok()) return child.status();
  const int code = (*child)->Wait(timeout_ms);
  std::ifstream in(tmpl);
  std::stringstream out;
  out << in.rdbuf();
  unlink(tmpl.c_str());
  return std::make_pair(code, out.str());
}

bool WaitFor(const std::function<bool()>& condition, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace sluice::testing
