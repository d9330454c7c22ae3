#include "bench/lease_error/coordinator.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/lease_error/analysis.h"
#include "bench/lease_error/realtime_clock.h"
#include "bench/lease_error/records.h"
#include "bench/lease_error/redis_process.h"
#include "bench/lease_error/report.h"
#include "bench/lease_error/shift.h"
#include "bench/lease_error/worker_process.h"

#include "sluice/open_store.h"

#include "src/util/strings.h"

namespace sluice::lease_error {
namespace {

using internal::AbslView;

constexpr int64_t kSecond = 1'000'000;
// From the workers' readiness to their start: time to write the start line to all of them.
constexpr int64_t kStartLeadUs = 300'000;
// How long workers may take to open their stores.
constexpr int64_t kReadyTimeoutUs = 20 * kSecond;
// How long after the run's end a worker may take to drain and exit before it is killed.
constexpr int64_t kExitGraceUs = 15 * kSecond;
// Record files are sparse; this caps one anyway (32 bytes a record).
constexpr uint64_t kMaxRecords = 20'000'000;

struct LimitSpec {
  Limit limit;
  std::string text;
};

struct FaultSpec {
  Fault fault = Fault::kNone;
  int64_t for_us = 0;
  std::string text = "none";
};

absl::StatusOr<LimitSpec> ParseLimitSpec(std::string_view text, int minute_scale) {
  const size_t slash = std::min(text.find('/'), text.size());
  const std::string_view digits = text.substr(0, slash);
  const std::string_view unit = text.substr(std::min(text.size(), slash + 1));
  int64_t count = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  int64_t period_us = 0;
  int64_t k = 1;
  auto number = [&k](std::string_view digits) {
    if (digits.empty()) return true;
    const auto [e, c] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
    return c == std::errc() && e == digits.data() + digits.size() && k > 0;
  };
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    period_us = 0;
  } else if (unit == "min") {
    period_us = 60 * kSecond;
  } else if (unit == "h") {
    period_us = 3600 * kSecond;
  } else if (unit.ends_with("ms") && number(unit.substr(0, unit.size() - 2))) {
    period_us = k * 1000;
  } else if (unit.ends_with("s") && number(unit.substr(0, unit.size() - 1))) {
    period_us = k * kSecond;
  }
  if (period_us == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad limit \"", AbslView(text), "\" (e.g. 10/s, 1000/s, 100/min, 5/200ms)"));
  }
  LimitSpec spec{.limit = {.limit = count, .period = std::chrono::microseconds(period_us)},
                 .text = std::string(text)};
  if (unit == "min" && minute_scale > 1) {
    spec.limit.period = std::chrono::microseconds(period_us / minute_scale);
    spec.text =
        absl::StrCat(AbslView(text), " as ", count, "/", period_us / minute_scale / kSecond, "s");
  }
  return spec;
}

absl::StatusOr<FaultSpec> ParseFaultSpec(std::string_view text) {
  FaultSpec spec{.text = std::string(text)};
  if (text.starts_with("pause:")) {
    double seconds = 0;
    const std::string_view s = text.substr(6);
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seconds);
    if (ec != std::errc() || end != s.data() + s.size() || !(seconds > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("bad fault \"", AbslView(text), "\""));
    }
    spec.fault = Fault::kPause;
    spec.for_us = static_cast<int64_t>(seconds * 1e6);
    return spec;
  }
  absl::StatusOr<Fault> fault = ParseFault(text);
  if (!fault.ok() || *fault == Fault::kPause) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad fault \"", AbslView(text),
                     "\" (none, pause:SECONDS, restart, kill-instance, add-instance)"));
  }
  spec.fault = *fault;
  return spec;
}

std::string UtcStamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::array<char, 32> text{};
  std::strftime(text.data(), text.size(), "%Y%m%dT%H%M%SZ", &tm);
  return text.data();
}

int64_t CeilTo(int64_t t, int64_t step) { return (t + step - 1) / step * step; }
int64_t FloorTo(int64_t t, int64_t step) { return t / step * step; }

// The lease store's refresh (lease_refresh_ms in lease mode's URL parameters, else its default of
// 500 ms): the unit the traffic-shift figures are given in.
int64_t RefreshUs(std::string_view lease_params) {
  constexpr std::string_view kName = "lease_refresh_ms=";
  const size_t at = lease_params.find(kName);
  int64_t ms = 500;
  if (at != std::string_view::npos) {
    const std::string_view v = lease_params.substr(at + kName.size());
    std::from_chars(v.data(), v.data() + v.size(), ms);
  }
  return std::max<int64_t>(1, ms) * 1000;
}

// What the window starting at `at` saw, or nullptr when it is not in the run.
const WindowStat* WindowAt(const Analysis& analysis, int64_t at) {
  for (const WindowStat& w : analysis.windows) {
    if (w.start_us == at) return &w;
  }
  return nullptr;
}

// After Redis returned (`back`): how long the failure policy still answered, and whether the
// first whole window after it was exact again (E 0; U 0 unless too little was offered).
FaultDetail OutageDetail(const Analysis& analysis, int64_t back) {
  FaultDetail out;
  out.back_us = 0;
  for (const Record& r : analysis.decisions) {
    if (r.send_us >= back && (r.flags & (Record::kError | Record::kFallback)) != 0) {
      out.back_us = std::max(out.back_us, r.send_us - back);
    }
  }
  if (const WindowStat* w = WindowAt(analysis, CeilTo(back, analysis.period_us))) {
    out.first_e = w->e;
    out.first_u = w->u.value_or(-1);
  }
  return out;
}

class Sweep {
 public:
  Sweep(const SweepOptions& options, RedisProcess& redis, Report& report, std::string dir,
        double idle_cpu)
      : options_(options),
        redis_(redis),
        report_(report),
        dir_(std::move(dir)),
        idle_cpu_(idle_cpu),
        refresh_us_(RefreshUs(options.lease_params)) {}

  // Runs one configuration; false when it could not run.
  bool Run(Plan plan, const LimitSpec& limit, const FaultSpec& fault);
  bool exact_over() const { return exact_over_; }

 private:
  const SweepOptions& options_;
  RedisProcess& redis_;
  Report& report_;
  const std::string dir_;
  // Redis's CPU time per microsecond while idle (its timers), subtracted from each configuration's.
  const double idle_cpu_;
  const int64_t refresh_us_;
  int index_ = 0;
  bool exact_over_ = false;
};

bool Sweep::Run(Plan plan, const LimitSpec& limit, const FaultSpec& fault) {
  const int64_t p = plan.limit.period.count();
  int64_t duration = std::max(static_cast<int64_t>(options_.seconds * 1e6), options_.windows * p);
  int64_t lead = 0;
  if (fault.fault != Fault::kNone) {
    // Before the fault: two periods (at least 2 s); after it: three (at least 4 s). The fault
    // falls in the middle of a window.
    lead = std::max(2 * kSecond, 2 * p);
    const int64_t after = std::max(4 * kSecond, 3 * p);
    duration = std::max(duration, lead + 2 * p + fault.for_us + after);
  }
  plan.duration_us = duration;
  plan.fault = fault.fault;
  plan.fault_for_us = fault.for_us;
  plan.key = absl::StrCat("le:", options_.stamp, ":", index_++);
  const int processes = ProcessCount(plan);
  const double expected = plan.load * static_cast<double>(plan.limit.limit) *
                          static_cast<double>(duration) / static_cast<double>(p);
  const auto capacity =
      std::min<uint64_t>(kMaxRecords, static_cast<uint64_t>(expected * 5) + 10000);

  std::cerr << "# running " << ModeName(plan.mode) << " N=" << plan.instances << " "
            << SplitName(plan.split) << " " << ScheduleName(plan.schedule) << " "
            << AlgorithmName(plan.limit.algorithm) << " " << limit.text << " x=" << plan.load
            << " fault=" << fault.text << " (" << duration / 1000 << " ms)" << std::endl;
  std::vector<std::string> paths;
  std::vector<RecordFile> files;
  std::vector<WorkerProcess> workers;
  auto give_up = [&](const std::string& why) {
    for (WorkerProcess& w : workers) w.Kill();
    Report::Note(absl::StrCat("could not run ", AbslView(ModeName(plan.mode)),
                              " N=", plan.instances, " x=", plan.load, ": ", why));
    return false;
  };
  for (int i = 0; i < processes; ++i) {
    paths.push_back(absl::StrCat(dir_, "/worker-", i, ".rec"));
    absl::StatusOr<RecordFile> file = RecordFile::Create(paths.back(), capacity);
    if (!file.ok()) return give_up(std::string(file.status().message()));
    files.push_back(*std::move(file));
    absl::StatusOr<WorkerProcess> worker =
        WorkerProcess::Spawn(options_.self, {"worker", "--plan", Format(plan), "--instance",
                                             std::to_string(i), "--records", paths.back()});
    if (!worker.ok()) return give_up(std::string(worker.status().message()));
    workers.push_back(*std::move(worker));
  }
  const int64_t ready_by = RealtimeClock::NowMicros() + kReadyTimeoutUs;
  for (WorkerProcess& w : workers) {
    if (absl::Status s = w.WaitReady(ready_by); !s.ok()) {
      return give_up(absl::StrCat("a worker did not start: ", s.message()));
    }
  }
  // Counted from here: the workers' connection set-up is not part of the decisions' cost.
  absl::StatusOr<RedisCounters> before = redis_.Counters();
  const int64_t counted_from = RealtimeClock::NowMicros();
  const int64_t align = std::min(p, kSecond);
  const int64_t start = CeilTo(RealtimeClock::NowMicros() + kStartLeadUs, align);
  const int64_t fault_at =
      fault.fault == Fault::kNone ? duration + 1 : CeilTo(start + lead, p) + p / 2 - start;
  for (WorkerProcess& w : workers) w.Start(absl::StrCat(start, " ", fault_at));

  int64_t fault_time = 0;
  int64_t fault_end = 0;
  std::string note;
  if (fault.fault != Fault::kNone) {
    RealtimeClock::SleepUntil(start + fault_at);
    fault_time = RealtimeClock::NowMicros();
    switch (fault.fault) {
      case Fault::kPause:
        redis_.Pause();
        RealtimeClock::SleepUntil(fault_time + fault.for_us);
        redis_.Resume();
        break;
      case Fault::kRestart:
        if (absl::Status s = redis_.Restart(); !s.ok()) note = std::string(s.message());
        break;
      case Fault::kKillInstance:
        workers[0].Kill();
        break;
      case Fault::kAddInstance:
      case Fault::kNone:
        break;
    }
    fault_end = RealtimeClock::NowMicros();
  }
  const int64_t end = start + duration;
  for (size_t i = 0; i < workers.size(); ++i) {
    const int code = workers[i].Wait(end + kExitGraceUs);
    const bool killed_by_plan = i == 0 && fault.fault == Fault::kKillInstance;
    if (code != 0 && !killed_by_plan) {
      note += absl::StrCat(note.empty() ? "" : "; ", "worker ", i, " exit ", code);
    }
  }
  absl::StatusOr<RedisCounters> after = redis_.Counters();
  RedisCounters used{};
  if (before.ok() && after.ok()) {
    used = *after - *before;
    const auto idle = idle_cpu_ * static_cast<double>(RealtimeClock::NowMicros() - counted_from);
    used.cpu_us = std::max(0.0, used.cpu_us - idle);
  }

  std::vector<Record> records;
  Row row{.plan = &plan, .limit_text = limit.text, .fault_text = fault.text, .phase = "all"};
  row.note = note;
  for (RecordFile& f : files) {
    std::span<const Record> mine = f.Records();
    records.insert(records.end(), mine.begin(), mine.end());
    WorkerSummary& s = f.summary();
    row.shed += s.shed.load();
    row.late += s.late.load();
    row.max_late_us = std::max(row.max_late_us, s.max_late_us.load());
    if (s.next.load() > capacity) row.note += "; record file full";
    if (s.unfinished.load() > 0) row.note += absl::StrCat("; ", s.unfinished.load(), " unfinished");
  }
  const Analysis analysis = Analyze(plan.limit, start, end, std::move(records));
  row.ambiguous = analysis.ambiguous;
  row.redis = used;
  row.phase = "all";
  row.summary = Summarize(analysis, start, end, std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max());
  row.shift = MeasureShifts(plan, analysis, start, refresh_us_);
  if (fault.fault == Fault::kPause || fault.fault == Fault::kRestart) {
    row.fault = OutageDetail(analysis, fault_end);
  } else if (fault.fault == Fault::kKillInstance) {
    // What the instance held when it died is stranded until its leases end: the kill's window
    // shows it as under-admission (when enough was offered to use it).
    if (const WindowStat* w = WindowAt(analysis, FloorTo(fault_time, p)); w && w->u) {
      row.fault.kill_window_short = std::llround(*w->u * static_cast<double>(plan.limit.limit));
      row.fault.kill_window_offered = w->offered;
      row.fault.kill_window_admitted = w->admitted;
    }
    if (plan.mode == Mode::kLease) {
      row.fault.held_at_kill = files[0].summary().lease_held.load();
      row.fault.last_grant = files[0].summary().lease_last_grant.load();
    }
  }
  report_.Add(row);
  row.fault = {};
  row.shift = {};
  if (plan.mode == Mode::kExact && fault.fault != Fault::kRestart && row.summary.e_max > 0) {
    exact_over_ = true;
    Report::Note(absl::StrCat("EXACT MODE ADMITTED MORE THAN ITS BOUND: E max ", row.summary.e_max,
                              " (key ", plan.key, ")"));
  }
  if (fault.fault != Fault::kNone) {
    // During: from the fault to one period after it ended; a window belongs to "during" when it
    // overlaps that, else to the phase it lies in.
    const int64_t recovered = fault_end + p;
    const int64_t fault_window = FloorTo(fault_time, p);
    const int64_t after_window = CeilTo(recovered, p);
    row.redis = {};
    struct Phase {
      const char* name;
      int64_t from, to, windows_from, windows_to;
    };
    const std::array<Phase, 3> phases = {
        Phase{"before", start, fault_time, std::numeric_limits<int64_t>::min(), fault_window},
        Phase{"during", fault_time, recovered, fault_window, after_window},
        Phase{"after", recovered, end, after_window, std::numeric_limits<int64_t>::max()}};
    for (const Phase& phase : phases) {
      if (phase.to <= phase.from) continue;
      row.phase = phase.name;
      row.summary = Summarize(analysis, phase.from, phase.to, phase.windows_from, phase.windows_to);
      report_.Add(row);
    }
  }
  for (const std::string& path : paths) std::filesystem::remove(path);
  return true;
}

}  // namespace

int RunSweep(const SweepOptions& given) {
  SweepOptions options = given;
  if (options.stamp.empty()) options.stamp = UtcStamp();
  std::vector<LimitSpec> limits;
  for (const std::string& text : options.limits) {
    absl::StatusOr<LimitSpec> spec = ParseLimitSpec(text, options.minute_scale);
    if (!spec.ok()) {
      std::cerr << spec.status().message() << "\n";
      return 2;
    }
    limits.push_back(*spec);
  }
  std::vector<FaultSpec> faults;
  for (const std::string& text : options.faults) {
    absl::StatusOr<FaultSpec> spec = ParseFaultSpec(text);
    if (!spec.ok()) {
      std::cerr << spec.status().message() << "\n";
      return 2;
    }
    faults.push_back(*spec);
  }
  // A worker that dies must not take the parent with it through a write to its pipe.
  std::signal(SIGPIPE, SIG_IGN);
  std::string dir = std::filesystem::temp_directory_path() / "lease_error-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::cerr << "cannot make a temporary directory\n";
    return 2;
  }
  int code = 0;
  {
    absl::StatusOr<std::unique_ptr<RedisProcess>> redis =
        RedisProcess::Start(options.redis_server, dir);
    if (!redis.ok()) {
      std::cerr << redis.status().message() << "\n";
      std::filesystem::remove_all(dir);
      return 2;
    }
    Report report(options.sweep, options.stamp, options.csv);
    Report::Note(absl::StrCat("sweep ", options.sweep,
                              ": redis-server on 127.0.0.1:", (*redis)->port(),
                              ", count-and-flush is the peers' design (flush every ",
                              options.flush_ms, " ms), written in this harness only"));
    for (const LimitSpec& l : limits) {
      if (l.text.find(" as ") != std::string::npos) {
        Report::Note(absl::StrCat("short run: the limit ", l.text, " (period scaled down ",
                                  options.minute_scale, "x)"));
      }
    }
    std::vector<Mode> modes = options.modes;
    if (std::find(modes.begin(), modes.end(), Mode::kLease) != modes.end()) {
      const std::string url = absl::StrCat((*redis)->Url(), "?", options.lease_params);
      absl::StatusOr<OpenedStore> probe = OpenStore(url, {.startup_wait = std::chrono::seconds(2)});
      if (!probe.ok()) {
        Report::Note(absl::StrCat("lease mode skipped: the store refuses \"?", options.lease_params,
                                  "\" (", probe.status().message(), ")"));
        std::erase(modes, Mode::kLease);
      }
    }
    // Redis's own timers cost CPU at any load; at tens of decisions a second they would be most of
    // the CPU per decision. Measured for a second here, and subtracted.
    double idle_cpu = 0;
    const int64_t idle_from = RealtimeClock::NowMicros();
    absl::StatusOr<RedisCounters> idle_before = (*redis)->Counters();
    RealtimeClock::SleepUntil(idle_from + kSecond);
    absl::StatusOr<RedisCounters> idle_after = (*redis)->Counters();
    if (idle_before.ok() && idle_after.ok()) {
      idle_cpu = std::max(0.0, idle_after->cpu_us - idle_before->cpu_us) /
                 static_cast<double>(RealtimeClock::NowMicros() - idle_from);
    }
    Report::Note(
        absl::StrFormat("redis-server idle: %.0f us CPU per second (subtracted)", idle_cpu * 1e6));
    Sweep sweep(options, **redis, report, dir, idle_cpu);
    uint64_t group = 0;
    for (const LimitSpec& l : limits) {
      for (Algorithm algorithm : options.algorithms) {
        Limit limit = l.limit;
        limit.algorithm = algorithm;
        if (absl::Status s = ValidateLimit(limit); !s.ok()) {
          Report::Note(absl::StrCat("skipped ", Describe(limit), ": ", s.message()));
          continue;
        }
        for (Schedule schedule : options.schedules) {
          for (Split split : options.splits) {
            for (int n : options.instances) {
              for (const FaultSpec& fault : faults) {
                for (double load : options.loads) {
                  // The modes of one configuration see the same arrivals; configurations differ.
                  const uint64_t seed = options.seed * 1'000'003 + ++group;
                  for (Mode mode : modes) {
                    Plan plan{.mode = mode,
                              .instances = n,
                              .split = split,
                              .schedule = schedule,
                              .load = load,
                              .limit = limit,
                              .rotate_us = static_cast<int64_t>(options.rotate_seconds * 1e6),
                              .flush_us = int64_t{options.flush_ms} * 1000,
                              .inflight = options.inflight,
                              .seed = seed};
                    if (mode == Mode::kMemory) {
                      plan.url = "memory";
                    } else if (mode == Mode::kLease) {
                      plan.url = absl::StrCat((*redis)->Url(), "?", options.lease_params);
                    } else {
                      plan.url = (*redis)->Url();
                    }
                    if (!sweep.Run(plan, LimitSpec{.limit = limit, .text = l.text}, fault)) {
                      code = 1;
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
    if (sweep.exact_over()) code = 1;
  }
  std::filesystem::remove_all(dir);
  return code;
}

}  // namespace sluice::lease_error
