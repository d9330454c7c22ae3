// Report: what the lease error harness prints (one Markdown table per configuration group: the
// same instances, split, schedule, algorithm, limit and fault; a row per mode, load and phase) and
// the CSV it appends to (one line per row, read by bench/plot.sh).
//
// Thread safety: not thread-safe.
#ifndef SLUICE_BENCH_LEASE_ERROR_REPORT_H_
#define SLUICE_BENCH_LEASE_ERROR_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "bench/lease_error/analysis.h"
#include "bench/lease_error/plan.h"
#include "bench/lease_error/redis_process.h"
#include "bench/lease_error/shift.h"

namespace sluice::lease_error {

// What a fault did beyond E and U, given on the "all" row of a faulted configuration (-1: does not
// apply).
struct FaultDetail {
  // Redis paused or restarted: from its return to the issue of the last check the failure policy
  // answered (0: none after it), and E and U of the first whole window after its return.
  int64_t back_us = -1;
  double first_e = -1, first_u = -1;
  // kill-instance, lease mode: the units the killed instance held at its last sample (at most a
  // few ms before the kill) and its latest grant; what the kill's window admitted below
  // min(offered, L), in units (U x L).
  int64_t held_at_kill = -1, last_grant = -1;
  int64_t kill_window_short = -1, kill_window_offered = -1, kill_window_admitted = -1;
};

struct Row {
  const Plan* plan = nullptr;
  std::string limit_text;  // as asked, e.g. "100/min as 100/6s"
  std::string fault_text;  // e.g. "pause:5"
  std::string phase;       // "all", or "before", "during", "after" a fault
  Summary summary{};
  RedisCounters redis{};  // over the whole configuration (every phase shows the same)
  int64_t ambiguous = 0;
  int64_t shed = 0;
  int64_t late = 0;
  int64_t max_late_us = 0;
  std::string note{};
  FaultDetail fault{};
  ShiftStats shift{};  // rotating split only
};

class Report {
 public:
  // Appends to `csv_path` (its header written when the file is new or empty); no CSV when empty.
  Report(std::string sweep, std::string stamp, const std::string& csv_path);
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;
  ~Report();

  // Report::Add()
  //
  // Prints `row` (after a group heading and table header when its group differs from the last
  // row's) and appends it to the CSV.
  void Add(const Row& row);

  // Report::Note()
  //
  // Prints a line of its own ("# ..."), outside the tables.
  static void Note(const std::string& text);

 private:
  const std::string sweep_;
  const std::string stamp_;
  std::FILE* csv_ = nullptr;
  std::string group_{};
};

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_REPORT_H_
