#include "tests/testing/redis_server.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::testing {
namespace {

// SpawnTiedToParent() with `argv` null-terminated. posix_spawn cannot set PR_SET_PDEATHSIG, hence
// fork and exec.
absl::StatusOr<pid_t> SpawnArgvTiedToParent(const std::vector<char*>& argv) {
  // A close-on-exec pipe: it closes unread when exec succeeds, or carries the child's errno.
  std::array<int, 2> report{};
  if (pipe2(report.data(), O_CLOEXEC) != 0) return absl::InternalError("pipe2() failed");
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    return absl::UnavailableError("cannot fork to spawn redis-server");
  }
  if (pid == 0) {
    // The child of a possibly multithreaded parent: only async-signal-safe calls until exec.
    // getppid() catches a parent that died before prctl() took effect.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent) {
      execvp(argv[0], argv.data());
    }
    const int err = errno;
    [[maybe_unused]] const ssize_t written = write(report[1], &err, sizeof(err));
    _exit(127);
  }
  close(report[1]);
  int err = 0;
  ssize_t n = 0;
  do {
    n = read(report[0], &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n > 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    return absl::UnavailableError(
        absl::StrCat("cannot spawn ", argv[0], " (is it installed?): ", std::strerror(err)));
  }
  return pid;
}

std::string ReplyToText(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      return {r->str, r->len};
    case REDIS_REPLY_ERROR:
      return absl::StrCat("ERR:", absl::string_view(r->str, r->len));
    case REDIS_REPLY_INTEGER:
      return absl::StrCat(r->integer);
    case REDIS_REPLY_NIL:
      return "(nil)";
    case REDIS_REPLY_ARRAY: {
      std::vector<std::string> parts;
      for (size_t i = 0; i < r->elements; ++i) parts.push_back(ReplyToText(r->element[i]));
      return absl::StrJoin(parts, " ");
    }
    default:
      return "?";
  }
}

}  // namespace

absl::StatusOr<pid_t> SpawnTiedToParent(std::vector<std::string> args) {
  if (args.empty()) return absl::InvalidArgumentError("SpawnTiedToParent: no program");
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return SpawnArgvTiedToParent(argv);
}

absl::StatusOr<int> FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::InternalError("bind() to a free loopback port failed");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

RedisServer::RedisServer(Options options, int port, std::string dir)
    : options_(std::move(options)), port_(port), dir_(std::move(dir)) {}

RedisServer::~RedisServer() {
  Kill();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string RedisServer::Url() const { return absl::StrCat("redis://127.0.0.1:", port_); }

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(const Options& options) {
  // A port can be taken between FreeLoopbackPort() and redis binding it; try a few.
  absl::Status last = absl::UnavailableError("redis-server did not start");
  for (int attempt = 0; attempt < (options.port != 0 ? 1 : 5); ++attempt) {
    absl::StatusOr<int> port = options.port != 0 ? options.port : FreeLoopbackPort();
    if (!port.ok()) return port.status();
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-redis-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    std::unique_ptr<RedisServer> server(new RedisServer(options, *port, tmpl));
    last = server->Launch();
    if (last.ok()) return server;
  }
  return last;
}

absl::Status RedisServer::Launch() {
  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   absl::StrCat(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--daemonize",
                                   "no",
                                   "--loglevel",
                                   "warning",
                                   "--logfile",
                                   dir_ + "/redis.log"};
  for (const auto& [name, value] : options_.config) {
    args.push_back("--" + name);
    args.push_back(value);
  }
  for (const std::string& arg : options_.args) args.push_back(arg);
  absl::StatusOr<pid_t> pid = SpawnTiedToParent(std::move(args));
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  // Wait until it answers; real time here is only a start-up watchdog.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("redis-server exited at start on port ", port_));
    }
    absl::StatusOr<std::string> pong = Command({"PING"});
    if (pong.ok() && *pong == "PONG") return absl::OkStatus();
    if (pong.ok() && pong->starts_with("ERR:NOAUTH")) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill();
  return absl::UnavailableError(absl::StrCat("redis-server on port ", port_, " never answered"));
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);  // A paused process must be able to die.
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void RedisServer::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void RedisServer::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

absl::Status RedisServer::Restart() {
  Kill();
  return Launch();
}

absl::StatusOr<std::string> RedisServer::Command(const std::vector<std::string>& argv) const {
  timeval timeout{1, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeout);
  if (c == nullptr || c->err != 0) {
    std::string err = c != nullptr ? c->errstr : "out of memory";
    if (c != nullptr) redisFree(c);
    return absl::UnavailableError(err);
  }
  redisSetTimeout(c, timeout);
  for (const auto& [name, value] : options_.config) {
    if (name == "requirepass") {
      auto* auth = static_cast<redisReply*>(redisCommand(c, "AUTH %s", value.c_str()));
      if (auth != nullptr) freeReplyObject(auth);
    }
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  args.reserve(argv.size());
  lens.reserve(argv.size());
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data()));
  if (reply == nullptr) {
    std::string err = c->errstr;
    redisFree(c);
    return absl::UnavailableError(err);
  }
  std::string text = ReplyToText(reply);
  freeReplyObject(reply);
  redisFree(c);
  return text;
}

}  // namespace sluice::testing
