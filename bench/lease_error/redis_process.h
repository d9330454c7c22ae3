// RedisProcess: the harness's own redis-server on a free loopback port, which it can pause
// (SIGSTOP), resume, and kill and start again empty on the same port; and the counters the harness
// reads around each configuration (INFO commandstats and INFO cpu).
//
// Example:
//   absl::StatusOr<std::unique_ptr<RedisProcess>> redis = RedisProcess::Start("redis-server", dir);
//   absl::StatusOr<RedisCounters> before = (*redis)->Counters();
//
// Thread safety: not thread-safe; one thread drives it.
#ifndef SLUICE_BENCH_LEASE_ERROR_REDIS_PROCESS_H_
#define SLUICE_BENCH_LEASE_ERROR_REDIS_PROCESS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include <sys/types.h>

namespace sluice::lease_error {

// Cumulative counters of a redis-server since it started.
struct RedisCounters {
  int64_t script_calls = 0;  // FCALL, FCALL_RO, EVALSHA, EVAL (and their _RO forms)
  int64_t script_usec = 0;   // their time in Redis's main thread (commandstats usec), the
                             // commands they call included
  // Every command but INFO (the harness's own). Redis 7 also counts the commands a script calls
  // (TIME, GET, SET, ...), and their time twice (in the script's usec and their own).
  int64_t calls = 0;
  int64_t usec = 0;
  double cpu_us = 0;  // used_cpu_user + used_cpu_sys of the whole process

  RedisCounters& operator+=(const RedisCounters& other);
  friend RedisCounters operator-(RedisCounters a, const RedisCounters& b);
};

class RedisProcess {
 public:
  // RedisProcess::Start()
  //
  // Starts `binary` on a free port of 127.0.0.1 with no persistence, its files in `dir`, and
  // waits until it answers PING; Unavailable when it cannot be started or does not answer.
  static absl::StatusOr<std::unique_ptr<RedisProcess>> Start(const std::string& binary,
                                                             const std::string& dir);
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;
  // Kills the server.
  ~RedisProcess();

  int port() const { return port_; }
  std::string Url() const;

  // RedisProcess::Pause() / Resume()
  //
  // SIGSTOP / SIGCONT: the server keeps its connections and state but answers nothing meanwhile.
  void Pause();
  void Resume();

  // RedisProcess::Restart()
  //
  // SIGKILL, then a new server, empty, on the same port; waits until it answers PING. The counters
  // of the killed server are kept (Counters() goes on counting from them).
  absl::Status Restart();

  // RedisProcess::Counters()
  //
  // The counters since Start(), across restarts; Unavailable when the server does not answer.
  absl::StatusOr<RedisCounters> Counters();

 private:
  RedisProcess(std::string binary, std::string dir, int port);
  absl::Status Spawn();
  absl::Status WaitForPing();
  void Kill();
  absl::StatusOr<RedisCounters> Read();

  const std::string binary_;
  const std::string dir_;
  const int port_;
  pid_t pid_ = -1;
  RedisCounters before_restarts_{};
};

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_REDIS_PROCESS_H_
