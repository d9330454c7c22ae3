// The worker role of bench/lease_error: one limiter instance, in a process of its own.
//
// It opens its own store for the plan's mode, says "ready" on its control pipe, waits for the
// start time the parent writes back, then offers its share of the load open-loop: each arrival of
// its schedule is one Store::CheckAsync() on the plan's key, issued at its time whatever happened
// to the earlier ones (at most `inflight` pending; an arrival beyond that is shed and counted).
// Every decision is appended to its record file with the time it was issued and answered.
#ifndef SLUICE_BENCH_LEASE_ERROR_WORKER_H_
#define SLUICE_BENCH_LEASE_ERROR_WORKER_H_

#include <string>

#include "bench/lease_error/plan.h"

namespace sluice::lease_error {

// RunWorker()
//
// Runs instance `instance` of `plan`, recording into `records_path` (made by the parent). The
// control pipe is file descriptor 1 on entry (stdout); the worker moves it aside and points
// stdout at stderr, so that log lines never reach the pipe. Returns the process's exit code: 0,
// 2 for a bad record file, 3 when the store cannot be opened (the message on stderr), 4 when the
// parent goes away before the start.
int RunWorker(const Plan& plan, int instance, const std::string& records_path);

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_WORKER_H_
