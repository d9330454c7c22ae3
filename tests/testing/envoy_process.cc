#include "tests/testing/envoy_process.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testing/child_process.h"
#include "tests/testing/http_client.h"
#include "tests/testing/redis_server.h"

#ifndef SLUICE_ENVOY_PATH
#error "SLUICE_ENVOY_PATH (the pinned Envoy in .deps/) is defined by tests/testing/CMakeLists.txt"
#endif

namespace sluice::testing {
namespace {

constexpr int kReadyTimeoutMs = 30'000;
constexpr int kStopTimeoutMs = 5'000;
constexpr int kStartAttempts = 3;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Starts `argv` with stdout and stderr appended to `log_path`, killed by the kernel when the
// calling thread exits. Not ChildProcess: posix_spawn cannot set PR_SET_PDEATHSIG, and an Envoy
// orphaned by a crashed test would hold its ports until someone noticed.
absl::StatusOr<pid_t> SpawnLogged(std::vector<std::string> argv, const std::string& log_path) {
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::InternalError(absl::StrCat("cannot open ", log_path));
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::UnavailableError("cannot fork to start envoy");
  }
  if (pid == 0) {
    // The child of a possibly multithreaded parent: only async-signal-safe calls until exec.
    // getppid() catches a parent that died before prctl() took effect.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent && dup2(log_fd, 1) == 1 &&
        dup2(log_fd, 2) == 2) {
      execv(args[0], args.data());
    }
    constexpr char kFailed[] = "envoy_process: could not exec envoy\n";
    [[maybe_unused]] const ssize_t written = write(log_fd, kFailed, sizeof(kFailed) - 1);
    _exit(127);
  }
  close(log_fd);
  return pid;
}

// Free loopback ports for ADMIN_PORT and each of `names`, all different.
absl::StatusOr<std::map<std::string, int>> ChoosePorts(const std::vector<std::string>& names) {
  std::map<std::string, int> ports;
  std::set<int> taken;
  std::vector<std::string> all = {"ADMIN_PORT"};
  all.insert(all.end(), names.begin(), names.end());
  for (const std::string& name : all) {
    absl::StatusOr<int> port = FreeLoopbackPort();
    while (port.ok() && taken.contains(*port)) port = FreeLoopbackPort();
    if (!port.ok()) return port.status();
    taken.insert(*port);
    ports[name] = *port;
  }
  return ports;
}

}  // namespace

absl::StatusOr<std::string> EnvoyBinary() {
  const char* from_env = std::getenv("SLUICE_ENVOY");
  const std::string path = from_env != nullptr && *from_env != '\0' ? from_env : SLUICE_ENVOY_PATH;
  if (access(path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("no Envoy at ", path,
                     ": run scripts/install-envoy.sh (make test runs it "
                     "through scripts/install-deps.sh), or set SLUICE_ENVOY"));
  }
  return path;
}

absl::StatusOr<std::string> FillPlaceholders(const std::string& text,
                                             const std::map<std::string, std::string>& values) {
  std::string out;
  size_t from = 0;
  while (true) {
    const size_t open = text.find("${", from);
    if (open == std::string::npos) break;
    const size_t close = text.find('}', open);
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("unterminated ${ at offset ", open));
    }
    const std::string name = text.substr(open + 2, close - open - 2);
    const auto value = values.find(name);
    if (value == values.end()) {
      return absl::InvalidArgumentError(absl::StrCat("no value for ${", name, "}"));
    }
    out.append(text, from, open - from);
    out += value->second;
    from = close + 1;
  }
  out.append(text, from);
  return out;
}

EnvoyProcess::EnvoyProcess(std::unique_ptr<TempDir> dir, std::map<std::string, int> ports,
                           std::string config, pid_t pid)
    : dir_(std::move(dir)), ports_(std::move(ports)), config_(std::move(config)), pid_(pid) {}

EnvoyProcess::~EnvoyProcess() { Stop(); }

absl::StatusOr<std::unique_ptr<EnvoyProcess>> EnvoyProcess::Start(const Options& options) {
  absl::StatusOr<std::string> binary = EnvoyBinary();
  if (!binary.ok()) return binary.status();
  absl::Status last = absl::UnavailableError("envoy did not start");
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    absl::StatusOr<std::map<std::string, int>> ports = ChoosePorts(options.ports);
    if (!ports.ok()) return ports.status();
    std::map<std::string, std::string> values = options.values;
    for (const auto& [name, port] : *ports) values[name] = absl::StrCat(port);
    absl::StatusOr<std::string> config = FillPlaceholders(options.config_template, values);
    if (!config.ok()) return config.status();

    auto dir = std::make_unique<TempDir>("sluice-envoy");
    if (dir->path().empty()) return absl::InternalError("cannot make a directory for envoy");
    dir->Write("envoy.yaml", *config);
    // Tests run in parallel: without hot restart no two Envoys share a memory region, and a
    // dynamic base id keeps them apart all the same.
    absl::StatusOr<pid_t> pid =
        SpawnLogged({*binary, "-c", (dir->path() / "envoy.yaml").string(), "--concurrency", "1",
                     "--disable-hot-restart", "--use-dynamic-base-id", "-l", "warning"},
                    (dir->path() / "envoy.log").string());
    if (!pid.ok()) return pid.status();
    std::unique_ptr<EnvoyProcess> envoy(
        new EnvoyProcess(std::move(dir), *std::move(ports), *std::move(config), *pid));

    int status = 0;
    bool exited = false;
    const bool done = WaitFor(
        [&] {
          if (waitpid(envoy->pid_, &status, WNOHANG) == envoy->pid_) {
            exited = true;
            envoy->pid_ = -1;
            return true;
          }
          absl::StatusOr<HttpResult> ready = HttpGet(envoy->admin_port(), "/ready");
          return ready.ok() && ready->status == 200 && absl::StartsWith(ready->body, "LIVE");
        },
        kReadyTimeoutMs);
    if (done && !exited) return envoy;
    const std::string log = envoy->Log();
    last = absl::UnavailableError(absl::StrCat(
        "envoy ",
        exited ? absl::StrCat("exited with status ", WIFEXITED(status) ? WEXITSTATUS(status) : -1)
               : "was not ready within 30 s",
        "; its log:\n", log));
    // A port taken between choosing it and Envoy binding it is worth another try; nothing else is.
    if (!exited || !absl::StrContains(log, "Address already in use")) return last;
  }
  return last;
}

int EnvoyProcess::port(const std::string& name) const {
  const auto it = ports_.find(name);
  return it == ports_.end() ? 0 : it->second;
}

std::string EnvoyProcess::Log() const { return ReadFile(dir_->path() / "envoy.log"); }

absl::StatusOr<int64_t> EnvoyProcess::Stat(const std::string& name) const {
  absl::StatusOr<HttpResult> stats = HttpGet(admin_port(), "/stats");
  if (!stats.ok()) return stats.status();
  const std::string prefix = name + ": ";
  for (absl::string_view line : absl::StrSplit(stats->body, '\n')) {
    int64_t value = 0;
    if (absl::StartsWith(line, prefix) && absl::SimpleAtoi(line.substr(prefix.size()), &value)) {
      return value;
    }
  }
  return absl::NotFoundError(absl::StrCat("envoy has no statistic ", name));
}

int EnvoyProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  const bool exited =
      WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, kStopTimeoutMs);
  if (!exited) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  return exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace sluice::testing
