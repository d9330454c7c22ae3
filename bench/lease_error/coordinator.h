// The parent role of bench/lease_error: one sweep, the product of the lists below, each
// configuration run against the sweep's own redis-server (started on a free port) and analysed
// when its workers have exited.
//
// Per configuration: spawn the workers (one process per instance), wait until every one has its
// store open, read Redis's counters, start them all at one time (aligned to a whole second, or to
// the period when shorter), inject the fault, wait for them, read the counters again, analyse
// (analysis.h) and report (report.h).
#ifndef SLUICE_BENCH_LEASE_ERROR_COORDINATOR_H_
#define SLUICE_BENCH_LEASE_ERROR_COORDINATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bench/lease_error/plan.h"

namespace sluice::lease_error {

struct SweepOptions {
  std::vector<Mode> modes{Mode::kExact, Mode::kMemory, Mode::kCountAndFlush, Mode::kLease};
  std::vector<int> instances{4};
  std::vector<Split> splits{Split::kUniform};
  std::vector<Schedule> schedules{Schedule::kPoisson};
  std::vector<double> loads{0.5, 1, 2, 10, 100};
  std::vector<Algorithm> algorithms{Algorithm::kFixedWindow};
  // "10/s", "1000/s", "100/min", "5/200ms", "N/Ks", "N/h".
  std::vector<std::string> limits{"10/s"};
  // "none", "pause:SECONDS", "restart", "kill-instance", "add-instance".
  std::vector<std::string> faults{"none"};
  // Each configuration runs for max(seconds, windows x period) (longer with a fault: see
  // docs/PERFORMANCE.md).
  double seconds = 4;
  int windows = 3;
  // Minute limits run with their period divided by this (100/min as 100/6s for 10), said in the
  // output. Default: 1 (not scaled).
  int minute_scale = 1;
  double rotate_seconds = 2;
  int flush_ms = 100;
  int inflight = 256;
  std::string sweep = "default";
  std::string stamp{};  // for the CSV; default: now, UTC
  std::string csv{};
  std::string redis_server = "redis-server";
  // Appended to the Redis URL of lease mode.
  std::string lease_params = "lease=true";
  uint64_t seed = 1;
  // This binary, to spawn the workers.
  std::string self{};
};

// RunSweep()
//
// Runs every configuration and returns the process exit code: 0; 1 when exact mode admitted more
// than its bound in a configuration without a Redis restart (which loses the counts by design), or
// a configuration could not run; 2 for bad options or no Redis.
int RunSweep(const SweepOptions& options);

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_COORDINATOR_H_
