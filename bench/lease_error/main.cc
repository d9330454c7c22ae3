// lease_error: the error harness of issue 20 (leases). N limiter processes, each with its own store
// and an open-loop generator, check one key against one limit; the parent sums what they admitted
// per window and reports how far that is above the algorithm's exact-mode bound (E) and below
// what could have been admitted (U), beside latency and Redis's cost, for each store mode.
//
//   lease_error run [--modes exact,memory,count-and-flush,lease] [--instances 4]
//       [--splits uniform] [--schedules poisson] [--loads 0.5,1,2,10,100]
//       [--algorithms fixed_window] [--limits 10/s] [--faults none] [--seconds 4]
//       [--csv FILE] [--sweep NAME] ...            # see --help
//   lease_error worker --plan PLAN --instance I --records FILE   # spawned by `run`
//   lease_error check-analysis      # the analysis against worked examples
//
// bench/lease_error.sh runs the default and --full sweeps; docs/PERFORMANCE.md, "Leases: error
// harness", says what the modes, splits and columns mean. Exit code of `run`: 0; 1 when exact mode
// admitted more than its bound or a configuration could not run; 2 for bad options.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/lease_error/analysis_check.h"
#include "bench/lease_error/coordinator.h"
#include "bench/lease_error/plan.h"
#include "bench/lease_error/worker.h"
#include <CLI/CLI.hpp>
#include <unistd.h>

namespace {

using sluice::lease_error::Mode;
using sluice::lease_error::Schedule;
using sluice::lease_error::Split;

// Parses each name of `names` with `parse` into `out`; false (and a message) on the first bad one.
template <typename T, typename Parse>
bool ParseAll(const std::vector<std::string>& names, Parse parse, std::vector<T>& out) {
  out.clear();
  for (const std::string& name : names) {
    absl::StatusOr<T> value = parse(name);
    if (!value.ok()) {
      std::cerr << value.status().message() << "\n";
      return false;
    }
    out.push_back(*value);
  }
  return true;
}

std::string SelfPath() {
  std::string path(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) return "/proc/self/exe";
  path.resize(static_cast<size_t>(n));
  return path;
}

int Main(int argc, char** argv) {
  CLI::App app{"lease_error: over- and under-admission of N limiter instances, per store mode"};
  app.require_subcommand(1);

  sluice::lease_error::SweepOptions sweep;
  std::vector<std::string> modes = {"exact", "memory", "count-and-flush", "lease"};
  std::vector<std::string> splits = {"uniform"};
  std::vector<std::string> schedules = {"poisson"};
  std::vector<std::string> algorithms = {"fixed_window"};
  CLI::App* run = app.add_subcommand("run", "Run a sweep (the parent)");
  run->add_option("--modes", modes, "exact, memory, count-and-flush (or flush), lease")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--instances", sweep.instances, "Limiter processes, e.g. 1,2,4,16")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--splits", splits, "uniform, 80-20, hot, rotating")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--schedules", schedules, "constant, poisson, square")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--loads", sweep.loads, "Offered load in multiples of the limit")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--algorithms", algorithms,
                  "fixed_window, sliding_window, sliding_log, token_bucket, gcra")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--limits", sweep.limits, "e.g. 10/s,1000/s,100/min")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--faults", sweep.faults,
                  "none, pause:SECONDS, restart, kill-instance, add-instance")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--seconds", sweep.seconds, "Least length of a configuration")
      ->capture_default_str();
  run->add_option("--windows", sweep.windows, "Least periods per configuration")
      ->capture_default_str();
  run->add_option("--minute-scale", sweep.minute_scale,
                  "Run minute limits with their period divided by this (short runs)")
      ->capture_default_str();
  run->add_option("--rotate-seconds", sweep.rotate_seconds, "The rotating split's hot period")
      ->capture_default_str();
  run->add_option("--flush-ms", sweep.flush_ms, "count-and-flush: the sync interval")
      ->capture_default_str();
  run->add_option("--inflight", sweep.inflight, "Checks in flight per instance at most")
      ->capture_default_str();
  run->add_option("--sweep", sweep.sweep, "The sweep's name in the output and CSV")
      ->capture_default_str();
  run->add_option("--stamp", sweep.stamp, "The run's UTC stamp in the CSV (default: now)");
  run->add_option("--csv", sweep.csv, "Append one line per row to this CSV");
  run->add_option("--redis-server", sweep.redis_server, "The redis-server binary to start")
      ->capture_default_str();
  run->add_option("--lease-params", sweep.lease_params,
                  "Query parameters of lease mode's Redis URL")
      ->capture_default_str();
  run->add_option("--seed", sweep.seed)->capture_default_str();

  std::string plan_text;
  std::string records;
  int instance = 0;
  CLI::App* worker = app.add_subcommand("worker", "One limiter instance (spawned by run)");
  worker->add_option("--plan", plan_text)->required();
  worker->add_option("--instance", instance)->required();
  worker->add_option("--records", records)->required();

  CLI::App* check = app.add_subcommand(
      "check-analysis", "Check the analysis against worked examples (exit 1 when one fails)");

  CLI11_PARSE(app, argc, argv);

  if (*check) {
    if (!sluice::lease_error::CheckAnalysis()) return 1;
    std::cout << "# analysis check: ok\n";
    return 0;
  }
  if (*worker) {
    absl::StatusOr<sluice::lease_error::Plan> plan = sluice::lease_error::ParsePlan(plan_text);
    if (!plan.ok()) {
      std::cerr << "worker: " << plan.status().message() << "\n";
      return 2;
    }
    return sluice::lease_error::RunWorker(*plan, instance, records);
  }
  if (!ParseAll<Mode>(modes, sluice::lease_error::ParseMode, sweep.modes) ||
      !ParseAll<Split>(splits, sluice::lease_error::ParseSplit, sweep.splits) ||
      !ParseAll<Schedule>(schedules, sluice::lease_error::ParseSchedule, sweep.schedules) ||
      !ParseAll<sluice::Algorithm>(algorithms, sluice::ParseAlgorithm, sweep.algorithms)) {
    return 2;
  }
  sweep.self = SelfPath();
  return sluice::lease_error::RunSweep(sweep);
}

}  // namespace

int main(int argc, char** argv) {
  // An exception that still gets here (out of memory, a thread that cannot start) ends the run
  // with a message and a failure status, not an abort.
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "lease_error: fatal: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "lease_error: fatal: unknown exception\n";
  }
  return 1;
}
