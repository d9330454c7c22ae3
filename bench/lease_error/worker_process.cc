#include "bench/lease_error/worker_process.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "bench/lease_error/realtime_clock.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::lease_error {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

absl::StatusOr<WorkerProcess> WorkerProcess::Spawn(const std::string& binary,
                                                   const std::vector<std::string>& args) {
  std::array<int, 2> to_child{};
  std::array<int, 2> from_child{};
  if (pipe2(to_child.data(), O_CLOEXEC) != 0) return absl::InternalError("pipe2() failed");
  if (pipe2(from_child.data(), O_CLOEXEC) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return absl::InternalError("pipe2() failed");
  }
  std::vector<std::string> all = {binary};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(all.size() + 1);
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::UnavailableError("cannot fork a worker");
  if (pid == 0) {
    // Only async-signal-safe calls until exec. dup2() clears close-on-exec on the new fds.
    if (dup2(to_child[0], STDIN_FILENO) < 0 || dup2(from_child[1], STDOUT_FILENO) < 0) _exit(126);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent) {
      execv(argv[0], argv.data());
    }
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  return WorkerProcess(pid, to_child[1], from_child[0]);
}

WorkerProcess::WorkerProcess(pid_t pid, int to_child, int from_child)
    : pid_(pid), to_child_(to_child), from_child_(from_child) {}

WorkerProcess::WorkerProcess(WorkerProcess&& other) noexcept
    : pid_(other.pid_),
      to_child_(other.to_child_),
      from_child_(other.from_child_),
      exited_(other.exited_),
      code_(other.code_) {
  other.pid_ = -1;
  other.to_child_ = -1;
  other.from_child_ = -1;
  other.exited_ = true;
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0 && !exited_) {
    Kill();
    Reap(/*block=*/true);
  }
  CloseFd(to_child_);
  CloseFd(from_child_);
}

bool WorkerProcess::Reap(bool block) {
  if (exited_) return true;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r != pid_) return false;
  exited_ = true;
  code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

absl::Status WorkerProcess::WaitReady(int64_t deadline_us) {
  std::string got;
  while (true) {
    const int64_t left_ms = (deadline_us - RealtimeClock::NowMicros()) / 1000;
    if (left_ms <= 0) return absl::DeadlineExceededError("worker not ready in time");
    pollfd p{.fd = from_child_, .events = POLLIN, .revents = 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    std::array<char, 64> buffer{};
    const ssize_t r = read(from_child_, buffer.data(), buffer.size());
    if (r <= 0) {
      // The pipe closed: the worker exited (it says why on stderr).
      Reap(/*block=*/true);
      return absl::UnavailableError(absl::StrCat("worker exited with code ", code_));
    }
    got.append(buffer.data(), static_cast<size_t>(r));
    if (got.find("ready\n") != std::string::npos) return absl::OkStatus();
  }
}

void WorkerProcess::Start(const std::string& line) {
  const std::string text = line + "\n";
  [[maybe_unused]] const ssize_t n = write(to_child_, text.data(), text.size());
  CloseFd(to_child_);
  CloseFd(from_child_);
}

void WorkerProcess::Kill() {
  if (pid_ > 0 && !exited_) kill(pid_, SIGKILL);
}

int WorkerProcess::Wait(int64_t deadline_us) {
  while (!Reap(/*block=*/false)) {
    if (RealtimeClock::NowMicros() >= deadline_us) {
      Kill();
      Reap(/*block=*/true);
      break;
    }
    const timespec ts{.tv_sec = 0, .tv_nsec = 5'000'000};
    nanosleep(&ts, nullptr);
  }
  return code_;
}

}  // namespace sluice::lease_error
