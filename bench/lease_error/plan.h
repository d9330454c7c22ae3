// Plan: one configuration of the lease error harness (bench/lease_error.sh, docs/PERFORMANCE.md
// "Leases: error harness"), shared by the parent and every worker process: which store mode, how
// many limiter instances, how the offered load is split between them and scheduled in time, the
// limit, and the fault injected during the run.
//
// The parent formats a Plan into one string (Format()) and passes it to each worker it spawns;
// every worker computes the same load split from it, so the instances agree on who offers what and
// when without talking to each other.
//
// Times in a Plan are offsets in microseconds from the run's start, which the parent picks once
// every worker is ready.
//
// Example:
//   Plan plan{.mode = Mode::kExact, .instances = 4, .load = 10,
//             .limit = {.limit = 10, .period = std::chrono::seconds(1)}};
//   ArrivalGenerator arrivals(plan, /*instance=*/0);
//   while (std::optional<int64_t> at = arrivals.Next()) { /* offer one check at start + *at */ }
//
// Thread safety: a value type; an ArrivalGenerator is not thread-safe.
#ifndef SLUICE_BENCH_LEASE_ERROR_PLAN_H_
#define SLUICE_BENCH_LEASE_ERROR_PLAN_H_

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/limit.h"

namespace sluice::lease_error {

// How the instances decide.
//   kExact:          every check is one Redis script (a plain redis:// URL); E must be 0.
//   kMemory:         each instance has its own memory store and enforces the limit alone.
//   kCountAndFlush:  the peers' design, written in this harness only (count_and_flush.h).
//   kLease:          the Redis URL with lease=true (issue 20).
enum class Mode : uint8_t { kExact, kMemory, kCountAndFlush, kLease };

// How the offered load is split across the instances taking load (see Share()).
enum class Split : uint8_t { kUniform, kEightyTwenty, kHot, kRotating };

// When each instance offers its checks.
//   kConstant: evenly spaced, at a random phase per instance;
//   kPoisson:  exponential gaps;
//   kSquare:   bursts at 4x the mean rate for 250 ms of every second, straddling the whole second
//              (and so the window boundaries of limits of whole seconds), silent otherwise.
enum class Schedule : uint8_t { kConstant, kPoisson, kSquare };

// What goes wrong during the run (at Plan::fault_at_us).
//   kPause:         redis-server is stopped (SIGSTOP) for fault_for_us, then continued;
//   kRestart:       redis-server is killed (SIGKILL) and started again, empty, on the same port;
//   kKillInstance:  instance 0 (the hot one, for the uneven splits) is killed (SIGKILL); its load
//                   goes to the others;
//   kAddInstance:   instance `instances` (spawned idle at the start) starts taking its share.
enum class Fault : uint8_t { kNone, kPause, kRestart, kKillInstance, kAddInstance };

std::string_view ModeName(Mode mode);
std::string_view SplitName(Split split);
std::string_view ScheduleName(Schedule schedule);
std::string_view FaultName(Fault fault);
absl::StatusOr<Mode> ParseMode(std::string_view name);
absl::StatusOr<Split> ParseSplit(std::string_view name);
absl::StatusOr<Schedule> ParseSchedule(std::string_view name);
absl::StatusOr<Fault> ParseFault(std::string_view name);

struct Plan {
  Mode mode = Mode::kExact;
  // Limiter instances (processes) taking load from the start. REQUIRES: 1 <= instances <= 256.
  int instances = 1;
  Split split = Split::kUniform;
  Schedule schedule = Schedule::kPoisson;
  // Offered load, in multiples of the limit (summed over the instances). REQUIRES: > 0.
  double load = 1;
  // The limit every instance checks its one key against.
  Limit limit{};
  Fault fault = Fault::kNone;
  // When the fault happens and, for kPause, how long it lasts; offsets from the start.
  int64_t fault_at_us = 0;
  int64_t fault_for_us = 0;
  // Length of the run. REQUIRES: > 0.
  int64_t duration_us = 4'000'000;
  // kRotating: how often the hot instance changes.
  int64_t rotate_us = 2'000'000;
  // kCountAndFlush: how often each instance flushes its count to Redis. Default: 100 ms.
  int64_t flush_us = 100'000;
  // Checks in flight per instance at most; an arrival beyond it is shed (not offered) and counted.
  int inflight = 256;
  // The store URL: "memory", or the Redis URL (with lease=true for kLease; kCountAndFlush takes
  // the host and port from it).
  std::string url = "memory";
  // The one key all instances check.
  std::string key = "lease_error";
  // Seeds the schedules; each instance derives its own.
  uint64_t seed = 1;
};

// Format() / ParsePlan()
//
// One line of `name=value` pairs separated by ';' (the URL may hold '?' and '&' but no ';').
// ParsePlan() returns InvalidArgument for an unknown name or a bad value.
std::string Format(const Plan& plan);
absl::StatusOr<Plan> ParsePlan(std::string_view text);

// ProcessCount()
//
// Returns the worker processes the parent spawns: `instances`, plus the late one of kAddInstance.
int ProcessCount(const Plan& plan);

// ActiveInstances()
//
// Returns the instances taking load at `offset_us`, in order.
std::vector<int> ActiveInstances(const Plan& plan, int64_t offset_us);

// Share()
//
// Returns the fraction of the offered load instance `instance` takes at `offset_us` (0 when it is
// not active). Over the m active instances, in order:
//   uniform:   1/m each;
//   80-20:     80 % spread over the first ceil(m/5), 20 % over the rest (all of it when m = 1);
//   hot:       90 % on the first, 10 % spread over the rest (all of it when m = 1);
//   rotating:  as hot, on the instance at position floor(offset / rotate) mod m.
double Share(const Plan& plan, int instance, int64_t offset_us);

// OfferedPerMicro()
//
// Returns the checks per microsecond instance `instance` offers at `offset_us`: the total offered
// load (load x limit per period) times its share, times the schedule's burst factor.
double OfferedPerMicro(const Plan& plan, int instance, int64_t offset_us);

// NextChange()
//
// Returns the first offset after `offset_us` at which OfferedPerMicro() may change (a rotation, a
// fault, a burst's edge), or the duration.
int64_t NextChange(const Plan& plan, int64_t offset_us);

// The arrival times of one instance: a time-varying rate, integrated exactly over the piecewise
// constant segments between NextChange() points.
class ArrivalGenerator {
 public:
  ArrivalGenerator(const Plan& plan, int instance);

  // Returns the offset of the next arrival, or nullopt once the run's duration is reached.
  std::optional<int64_t> Next();

 private:
  double Threshold();

  const Plan& plan_;
  const int instance_;
  std::mt19937_64 rng_;
  double offset_us_ = 0;
  bool first_ = true;
};

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_PLAN_H_
