// RedisServer: a real redis-server for tests, on a free loopback port, stopped when destroyed.
//
// Each instance runs its own process with persistence off and its own working directory, so tests
// can run in parallel. Fault tests use Kill() (SIGKILL), Pause()/Resume() (SIGSTOP/SIGCONT) and
// Restart() (same port, empty data and script cache). The kernel kills the server when the thread
// that started it exits, so a test binary that crashes or is killed leaves no redis-server behind.
//
// Example:
//   auto server = RedisServer::Start();
//   ASSERT_TRUE(server.ok()) << server.status();
//   std::string url = (*server)->Url();  // "redis://127.0.0.1:PORT"
//
// Thread safety: not thread-safe; drive it from the test's main thread.
#ifndef SLUICE_TESTS_TESTING_REDIS_SERVER_H_
#define SLUICE_TESTS_TESTING_REDIS_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include <sys/types.h>

namespace sluice::testing {

class RedisServer {
 public:
  // Extra redis.conf directives as "name value" pairs, e.g. {"requirepass", "s3cret"}.
  struct Options {
    std::vector<std::pair<std::string, std::string>> config = {};
    // The loopback port to listen on (one attempt: Unavailable if it is taken); 0 picks a free
    // one. E.g. the port of a killed node, for a server that takes its address.
    int port = 0;
    // Extra command-line arguments after the config, for directives of several arguments, e.g.
    // {"--rename-command", "PSYNC", ""}.
    std::vector<std::string> args = {};
  };

  // RedisServer::Start()
  //
  // Starts redis-server (from PATH) and waits until it answers PING, or returns Unavailable.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(const Options& options);
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start() { return Start(Options{}); }

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer();

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string Url() const;

  // Sends SIGKILL and reaps the process.
  void Kill();
  // SIGSTOP: the socket stays open but nothing answers.
  void Pause();
  // SIGCONT after Pause().
  void Resume();
  // Kills the server if running and starts a fresh one on the same port.
  absl::Status Restart();

  // Runs one command with a blocking client and returns the reply as text (integers in decimal,
  // arrays space-separated, nil as "(nil)", errors prefixed "ERR:"), for test assertions.
  absl::StatusOr<std::string> Command(const std::vector<std::string>& argv) const;

 private:
  RedisServer(Options options, int port, std::string dir);
  absl::Status Launch();

  Options options_;
  int port_;
  std::string dir_;
  pid_t pid_ = -1;
};

// SpawnTiedToParent()
//
// Starts `args` (args[0] looked up in PATH) as a child process that the kernel SIGKILLs when the
// calling thread exits, so a test binary that crashes or is killed leaves no orphaned server
// behind. Returns its pid (the caller kills and reaps it), or Unavailable when it cannot start.
absl::StatusOr<pid_t> SpawnTiedToParent(std::vector<std::string> args);

// FreeLoopbackPort()
//
// Returns a TCP port on 127.0.0.1 that was free a moment ago.
absl::StatusOr<int> FreeLoopbackPort();

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_REDIS_SERVER_H_
