#include "bench/lease_error/redis_process.h"

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::lease_error {
namespace {

absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) return absl::UnavailableError("cannot find a free port");
  return static_cast<int>(ntohs(addr.sin_port));
}

void SleepMs(int ms) {
  const timespec ts{.tv_sec = ms / 1000, .tv_nsec = static_cast<long>(ms % 1000) * 1'000'000};
  nanosleep(&ts, nullptr);
}

// A one-off connection: the harness reads counters a few times per configuration.
struct Connection {
  redisContext* c = nullptr;
  explicit Connection(int port) {
    const timeval timeout{.tv_sec = 1, .tv_usec = 0};
    c = redisConnectWithTimeout("127.0.0.1", port, timeout);
    if (c != nullptr && c->err == 0) redisSetTimeout(c, timeout);
  }
  ~Connection() {
    if (c != nullptr) redisFree(c);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  bool ok() const { return c != nullptr && c->err == 0; }
  // The reply's text (status or bulk string), or nullopt.
  std::optional<std::string> Text(const char* command) {
    if (!ok()) return std::nullopt;
    auto* r = static_cast<redisReply*>(redisCommand(c, command));
    if (r == nullptr) return std::nullopt;
    std::optional<std::string> text;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
      text = std::string(r->str, r->len);
    }
    freeReplyObject(r);
    return text;
  }
};

// The "key:value" lines of INFO.
std::vector<std::pair<std::string_view, std::string_view>> InfoLines(std::string_view info) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  while (!info.empty()) {
    const size_t eol = std::min(info.find_first_of("\r\n"), info.size());
    const std::string_view line = info.substr(0, eol);
    info.remove_prefix(std::min(info.size(), eol + 1));
    const size_t colon = line.find(':');
    if (line.empty() || line.front() == '#' || colon == std::string_view::npos) continue;
    out.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  return out;
}

int64_t ToInt(std::string_view text) {
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// The "calls=N,usec=N,..." of a commandstats line.
void CallsAndUsec(std::string_view stats, int64_t& calls, int64_t& usec) {
  while (!stats.empty()) {
    const size_t comma = std::min(stats.find(','), stats.size());
    const std::string_view field = stats.substr(0, comma);
    stats.remove_prefix(std::min(stats.size(), comma + 1));
    const size_t eq = std::min(field.find('='), field.size());
    const std::string_view name = field.substr(0, eq);
    const std::string_view value = field.substr(std::min(field.size(), eq + 1));
    if (name == "calls") calls = ToInt(value);
    if (name == "usec") usec = ToInt(value);
  }
}

}  // namespace

RedisCounters& RedisCounters::operator+=(const RedisCounters& other) {
  script_calls += other.script_calls;
  script_usec += other.script_usec;
  calls += other.calls;
  usec += other.usec;
  cpu_us += other.cpu_us;
  return *this;
}

RedisCounters operator-(RedisCounters a, const RedisCounters& b) {
  a.script_calls -= b.script_calls;
  a.script_usec -= b.script_usec;
  a.calls -= b.calls;
  a.usec -= b.usec;
  a.cpu_us -= b.cpu_us;
  return a;
}

absl::StatusOr<std::unique_ptr<RedisProcess>> RedisProcess::Start(const std::string& binary,
                                                                  const std::string& dir) {
  absl::StatusOr<int> port = FreePort();
  if (!port.ok()) return port.status();
  std::unique_ptr<RedisProcess> redis(new RedisProcess(binary, dir, *port));
  if (absl::Status s = redis->Spawn(); !s.ok()) return s;
  return redis;
}

RedisProcess::RedisProcess(std::string binary, std::string dir, int port)
    : binary_(std::move(binary)), dir_(std::move(dir)), port_(port) {}

RedisProcess::~RedisProcess() { Kill(); }

std::string RedisProcess::Url() const { return absl::StrCat("redis://127.0.0.1:", port_); }

absl::Status RedisProcess::Spawn() {
  const std::string port = std::to_string(port_);
  std::vector<std::string> args = {binary_,
                                   "--port",
                                   port,
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
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::UnavailableError("cannot fork to start redis-server");
  if (pid == 0) {
    // Only async-signal-safe calls until exec; the server dies with the harness.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() == parent) {
      execvp(argv[0], argv.data());
    }
    _exit(127);
  }
  pid_ = pid;
  return WaitForPing();
}

absl::Status RedisProcess::WaitForPing() {
  for (int i = 0; i < 100; ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("redis-server (", binary_, ") exited at start; ",
                                                 "see ", dir_, "/redis.log"));
    }
    Connection c(port_);
    if (c.ok() && c.Text("PING") == "PONG") return absl::OkStatus();
    SleepMs(50);
  }
  return absl::UnavailableError(absl::StrCat("redis-server on port ", port_, " does not answer"));
}

void RedisProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void RedisProcess::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void RedisProcess::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

absl::Status RedisProcess::Restart() {
  if (absl::StatusOr<RedisCounters> last = Read(); last.ok()) before_restarts_ += *last;
  Kill();
  return Spawn();
}

absl::StatusOr<RedisCounters> RedisProcess::Counters() {
  absl::StatusOr<RedisCounters> now = Read();
  if (!now.ok()) return now.status();
  *now += before_restarts_;
  return now;
}

absl::StatusOr<RedisCounters> RedisProcess::Read() {
  Connection c(port_);
  std::optional<std::string> commands = c.Text("INFO commandstats");
  std::optional<std::string> cpu = c.Text("INFO cpu");
  if (!commands || !cpu) {
    return absl::UnavailableError(absl::StrCat("INFO from redis-server on port ", port_));
  }
  RedisCounters out;
  for (const auto& [name, value] : InfoLines(*commands)) {
    if (!name.starts_with("cmdstat_") || name == "cmdstat_info") continue;
    int64_t calls = 0;
    int64_t usec = 0;
    CallsAndUsec(value, calls, usec);
    out.calls += calls;
    out.usec += usec;
    const std::string_view command = name.substr(8);
    if (command == "fcall" || command == "fcall_ro" || command == "evalsha" ||
        command == "evalsha_ro" || command == "eval" || command == "eval_ro") {
      out.script_calls += calls;
      out.script_usec += usec;
    }
  }
  for (const auto& [name, value] : InfoLines(*cpu)) {
    if (name == "used_cpu_user" || name == "used_cpu_sys") {
      out.cpu_us += std::strtod(std::string(value).c_str(), nullptr) * 1e6;
    }
  }
  return out;
}

}  // namespace sluice::lease_error
