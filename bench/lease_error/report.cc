#include "bench/lease_error/report.h"

#include <fstream>
#include <iostream>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include <sys/stat.h>

#include "src/util/strings.h"

namespace sluice::lease_error {
namespace {

using internal::AbslView;

constexpr std::string_view kCsvHeader =
    "stamp,sweep,mode,instances,split,schedule,algorithm,limit,period_s,limit_text,load_x,"
    "offered_x,fault,phase,windows,e_max,e_p99,e_p50,u_windows,u_max,u_p99,u_p50,decisions,"
    "admitted,errors,fallback,ambiguous,shed,late,max_late_us,p50_us,p99_us,max_us,"
    "scripts_per_1k,script_us_per_1k,redis_calls_per_1k,redis_cmd_us_per_1k,redis_cpu_us_per_1k,"
    "store_answers,store_p99_us,policy_answers,policy_p99_us,policy_max_us,back_ms,first_after_e,"
    "first_after_u,held_at_kill,last_grant_at_kill,kill_window_short,shifts,shift_t95_max,"
    "shift_t95_p50,shift_unreached,shift_steady_p50,loadavg,note\n";

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string first;
  in >> first;
  return first;
}

std::string Triple(double max, double p99, double p50) {
  return absl::StrFormat("%.2f / %.2f / %.2f", max, p99, p50);
}

double Per1k(double value, int64_t decisions) {
  return decisions > 0 ? value * 1000.0 / static_cast<double>(decisions) : 0;
}

}  // namespace

Report::Report(std::string sweep, std::string stamp, const std::string& csv_path)
    : sweep_(std::move(sweep)), stamp_(std::move(stamp)) {
  if (csv_path.empty()) return;
  struct stat st {};
  const bool fresh = stat(csv_path.c_str(), &st) != 0 || st.st_size == 0;
  csv_ = std::fopen(csv_path.c_str(), "a");
  if (csv_ == nullptr) {
    std::cerr << "cannot write " << csv_path << "\n";
    return;
  }
  if (fresh) std::fwrite(kCsvHeader.data(), 1, kCsvHeader.size(), csv_);
}

Report::~Report() {
  if (csv_ != nullptr) std::fclose(csv_);
}

void Report::Note(const std::string& text) { std::cout << "# " << text << std::endl; }

void Report::Add(const Row& row) {
  const Plan& plan = *row.plan;
  const Summary& s = row.summary;
  const std::string group =
      absl::StrCat("N = ", plan.instances, ", ", AbslView(SplitName(plan.split)), " split, ",
                   AbslView(ScheduleName(plan.schedule)), " arrivals, ",
                   AbslView(AlgorithmName(plan.limit.algorithm)), " ", row.limit_text,
                   row.fault_text == "none" ? "" : absl::StrCat(", fault ", row.fault_text));
  if (group != group_) {
    group_ = group;
    std::cout << "\n### " << sweep_ << ": " << group << "\n"
              << "bound: " << BoundText(plan.limit) << "\n\n"
              << "| mode | N | split | x | x got | phase | E max / p99 / p50 | U max / p99 / p50 "
                 "| latency p50 / p99 us | scripts/1k | script us/1k | Redis CPU us/1k | "
                 "notes |\n"
              << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  }
  const double scripts = Per1k(static_cast<double>(row.redis.script_calls), s.decisions);
  const double script_us = Per1k(static_cast<double>(row.redis.script_usec), s.decisions);
  const double cmd_us = Per1k(static_cast<double>(row.redis.usec), s.decisions);
  const double cpu_us = Per1k(row.redis.cpu_us, s.decisions);
  std::string notes = row.note;
  auto add = [&notes](const std::string& n) {
    if (!notes.empty()) notes += "; ";
    notes += n;
  };
  if (s.errors > 0) add(absl::StrCat(s.errors, " errors"));
  if (s.fallback > 0) add(absl::StrCat(s.fallback, " from fallback"));
  if (row.shed > 0) add(absl::StrCat(row.shed, " shed"));
  if (row.late > 0) add(absl::StrCat(row.late, " late (max ", row.max_late_us / 1000, " ms)"));
  if (row.ambiguous > 0) add(absl::StrCat(row.ambiguous, " unplaced"));
  if (s.policy_answers > 0) {
    add(absl::StrFormat("store answered %d (p99 %d us), policy %d (p99 %d, max %d us)",
                        s.store_answers, s.store_p99_us, s.policy_answers, s.policy_p99_us,
                        s.policy_max_us));
  }
  const FaultDetail& f = row.fault;
  if (f.back_us >= 0) {
    add(absl::StrFormat("policy until +%d ms after Redis returned; next window E %.2f U %.2f",
                        f.back_us / 1000, f.first_e, f.first_u));
  }
  if (f.held_at_kill >= 0) {
    add(
        absl::StrFormat("killed holding %d units (last grant %d); its window offered %d, "
                        "admitted %d, %d short",
                        f.held_at_kill, f.last_grant, f.kill_window_offered, f.kill_window_admitted,
                        f.kill_window_short));
  } else if (f.kill_window_short >= 0) {
    add(absl::StrFormat("the kill's window offered %d, admitted %d, %d short",
                        f.kill_window_offered, f.kill_window_admitted, f.kill_window_short));
  }
  const ShiftStats& shift = row.shift;
  if (shift.shifts > 0) {
    add(absl::StrFormat(
        "shifts %d: 95 %% of share after max %.2f / p50 %.2f refreshes (%d never), steady %.2f",
        shift.shifts, shift.t95_max, shift.t95_p50, shift.unreached, shift.steady_p50));
  }
  // Redis's counters cover the whole configuration: shown on its "all" row only.
  const bool whole = row.phase == "all";
  auto per1k = [whole](double v) { return whole ? absl::StrFormat("%.0f", v) : std::string("-"); };
  // With no command from this configuration, whatever CPU Redis spent meanwhile (expiring earlier
  // keys, its timers beyond the idle rate) is not this configuration's.
  const bool talked = row.redis.calls > 0;
  std::cout << absl::StrFormat(
                   "| %s | %d | %s | %g | %.2f | %s | %s | %s | %d / %d | %s | %s | %s "
                   "| %s |",
                   ModeName(plan.mode), plan.instances, SplitName(plan.split), plan.load,
                   s.offered_x, row.phase, Triple(s.e_max, s.e_p99, s.e_p50),
                   Triple(s.u_max, s.u_p99, s.u_p50), s.p50_us, s.p99_us, per1k(scripts),
                   per1k(script_us), talked ? per1k(cpu_us) : std::string("-"), notes)
            << std::endl;
  if (csv_ == nullptr) return;
  auto f4 = [](double v) { return absl::StrFormat("%.4f", v); };
  auto redis = [whole](double v) { return whole ? absl::StrFormat("%.1f", v) : std::string(); };
  const std::vector<std::string> fields = {
      stamp_,
      sweep_,
      std::string(ModeName(plan.mode)),
      absl::StrCat(plan.instances),
      std::string(SplitName(plan.split)),
      std::string(ScheduleName(plan.schedule)),
      std::string(AlgorithmName(plan.limit.algorithm)),
      absl::StrCat(plan.limit.limit),
      absl::StrFormat("%g", static_cast<double>(plan.limit.period.count()) / 1e6),
      row.limit_text,
      absl::StrFormat("%g", plan.load),
      f4(s.offered_x),
      row.fault_text,
      row.phase,
      absl::StrCat(s.windows),
      f4(s.e_max),
      f4(s.e_p99),
      f4(s.e_p50),
      absl::StrCat(s.u_windows),
      f4(s.u_max),
      f4(s.u_p99),
      f4(s.u_p50),
      absl::StrCat(s.decisions),
      absl::StrCat(s.admitted),
      absl::StrCat(s.errors),
      absl::StrCat(s.fallback),
      absl::StrCat(row.ambiguous),
      absl::StrCat(row.shed),
      absl::StrCat(row.late),
      absl::StrCat(row.max_late_us),
      absl::StrCat(s.p50_us),
      absl::StrCat(s.p99_us),
      absl::StrCat(s.max_us),
      redis(scripts),
      redis(script_us),
      redis(Per1k(static_cast<double>(row.redis.calls), s.decisions)),
      redis(cmd_us),
      talked ? redis(cpu_us) : std::string(),
      absl::StrCat(s.store_answers),
      absl::StrCat(s.store_p99_us),
      absl::StrCat(s.policy_answers),
      absl::StrCat(s.policy_p99_us),
      absl::StrCat(s.policy_max_us),
      f.back_us >= 0 ? absl::StrCat(f.back_us / 1000) : std::string(),
      f.first_e >= 0 ? f4(f.first_e) : std::string(),
      f.first_u >= 0 ? f4(f.first_u) : std::string(),
      f.held_at_kill >= 0 ? absl::StrCat(f.held_at_kill) : std::string(),
      f.last_grant >= 0 ? absl::StrCat(f.last_grant) : std::string(),
      f.kill_window_short >= 0 ? absl::StrCat(f.kill_window_short) : std::string(),
      absl::StrCat(shift.shifts),
      shift.shifts > 0 ? f4(shift.t95_max) : std::string(),
      shift.shifts > 0 ? f4(shift.t95_p50) : std::string(),
      shift.shifts > 0 ? absl::StrCat(shift.unreached) : std::string(),
      shift.shifts > 0 ? f4(shift.steady_p50) : std::string(),
      LoadAverage(),
      absl::StrReplaceAll(notes, {{",", ";"}})};
  std::fputs(absl::StrCat(absl::StrJoin(fields, ","), "\n").c_str(), csv_);
  std::fflush(csv_);
}

}  // namespace sluice::lease_error
