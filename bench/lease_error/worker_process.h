// WorkerProcess: the parent's handle on one worker (this same binary, role "worker"), spawned with
// fork and exec, tied to the parent's life (PR_SET_PDEATHSIG), with a control pipe: the worker
// says "ready" once its store is open, and the parent answers with the start time.
//
// Example:
//   absl::StatusOr<WorkerProcess> w = WorkerProcess::Spawn(self, {"worker", "--plan", text});
//   if (w->WaitReady(deadline).ok()) w->Start("1733300000000000 2500000");
//   int code = w->Wait(deadline);
//
// Thread safety: not thread-safe.
#ifndef SLUICE_BENCH_LEASE_ERROR_WORKER_PROCESS_H_
#define SLUICE_BENCH_LEASE_ERROR_WORKER_PROCESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include <sys/types.h>

namespace sluice::lease_error {

class WorkerProcess {
 public:
  // WorkerProcess::Spawn()
  //
  // Runs `binary` with `args`; its stdin and stdout are the control pipe, its stderr the parent's.
  static absl::StatusOr<WorkerProcess> Spawn(const std::string& binary,
                                             const std::vector<std::string>& args);

  WorkerProcess(WorkerProcess&& other) noexcept;
  WorkerProcess& operator=(WorkerProcess&& other) = delete;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  // Kills a worker still running.
  ~WorkerProcess();

  pid_t pid() const { return pid_; }

  // WorkerProcess::WaitReady()
  //
  // Waits until the worker says "ready", up to `deadline_us` (CLOCK_REALTIME). Unavailable with
  // its exit code when it exits first, DeadlineExceeded when it is still silent.
  absl::Status WaitReady(int64_t deadline_us);

  // WorkerProcess::Start()
  //
  // Writes `line` and a newline to the worker and closes the pipe.
  void Start(const std::string& line);

  // WorkerProcess::Kill()
  //
  // SIGKILL.
  void Kill();

  // WorkerProcess::Wait()
  //
  // Waits for the worker to exit, up to `deadline_us`, then kills it. Returns its exit code, or
  // 128 + the signal that ended it.
  int Wait(int64_t deadline_us);

 private:
  WorkerProcess(pid_t pid, int to_child, int from_child);
  // Collects the exit status if the worker has exited; true when it has.
  bool Reap(bool block);

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool exited_ = false;
  int code_ = 0;
};

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_WORKER_PROCESS_H_
