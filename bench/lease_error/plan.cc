#include "bench/lease_error/plan.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "src/util/strings.h"

namespace sluice::lease_error {
namespace {

using internal::AbslView;
using internal::StdView;

constexpr std::array<std::string_view, 4> kModeNames = {"exact", "memory", "count-and-flush",
                                                        "lease"};
constexpr std::array<std::string_view, 4> kSplitNames = {"uniform", "80-20", "hot", "rotating"};
constexpr std::array<std::string_view, 3> kScheduleNames = {"constant", "poisson", "square"};
constexpr std::array<std::string_view, 5> kFaultNames = {"none", "pause", "restart",
                                                         "kill-instance", "add-instance"};

// The square schedule: on for 250 ms of each second at 4x the mean, centred on the whole second.
constexpr int64_t kSquareCycleUs = 1'000'000;
constexpr int64_t kSquareHalfOnUs = 125'000;
constexpr double kSquareFactor = 4.0;

template <typename E, size_t N>
absl::StatusOr<E> ParseName(std::string_view what, const std::array<std::string_view, N>& names,
                            std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ", AbslView(what), " \"", AbslView(name), "\""));
}

template <typename T>
bool ParseNumber(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string_view ModeName(Mode mode) { return kModeNames[static_cast<size_t>(mode)]; }
std::string_view SplitName(Split split) { return kSplitNames[static_cast<size_t>(split)]; }
std::string_view ScheduleName(Schedule schedule) {
  return kScheduleNames[static_cast<size_t>(schedule)];
}
std::string_view FaultName(Fault fault) { return kFaultNames[static_cast<size_t>(fault)]; }
absl::StatusOr<Mode> ParseMode(std::string_view name) {
  if (name == "flush") return Mode::kCountAndFlush;
  return ParseName<Mode>("mode", kModeNames, name);
}
absl::StatusOr<Split> ParseSplit(std::string_view name) {
  return ParseName<Split>("split", kSplitNames, name);
}
absl::StatusOr<Schedule> ParseSchedule(std::string_view name) {
  return ParseName<Schedule>("schedule", kScheduleNames, name);
}
absl::StatusOr<Fault> ParseFault(std::string_view name) {
  return ParseName<Fault>("fault", kFaultNames, name);
}

std::string Format(const Plan& plan) {
  return absl::StrCat(
      "mode=", AbslView(ModeName(plan.mode)), ";instances=", plan.instances,
      ";split=", AbslView(SplitName(plan.split)),
      ";schedule=", AbslView(ScheduleName(plan.schedule)), ";load=", plan.load,
      ";algorithm=", AbslView(AlgorithmName(plan.limit.algorithm)), ";limit=", plan.limit.limit,
      ";period_us=", plan.limit.period.count(), ";burst=", plan.limit.burst.value_or(0),
      ";fault=", AbslView(FaultName(plan.fault)), ";fault_at_us=", plan.fault_at_us,
      ";fault_for_us=", plan.fault_for_us, ";duration_us=", plan.duration_us,
      ";rotate_us=", plan.rotate_us, ";flush_us=", plan.flush_us, ";inflight=", plan.inflight,
      ";seed=", plan.seed, ";key=", plan.key, ";url=", plan.url);
}

absl::StatusOr<Plan> ParsePlan(std::string_view text) {
  Plan plan;
  for (absl::string_view piece : absl::StrSplit(AbslView(text), ';', absl::SkipEmpty())) {
    const std::string_view field = StdView(piece);
    // The URL may hold '='; the value is everything after the first one.
    const size_t eq = std::min(field.find('='), field.size());
    const std::string_view name = field.substr(0, eq);
    const std::string_view value = field.substr(std::min(field.size(), eq + 1));
    bool ok = true;
    int64_t burst = 0;
    if (name == "mode") {
      absl::StatusOr<Mode> m = ParseMode(value);
      if (!m.ok()) return m.status();
      plan.mode = *m;
    } else if (name == "split") {
      absl::StatusOr<Split> s = ParseSplit(value);
      if (!s.ok()) return s.status();
      plan.split = *s;
    } else if (name == "schedule") {
      absl::StatusOr<Schedule> s = ParseSchedule(value);
      if (!s.ok()) return s.status();
      plan.schedule = *s;
    } else if (name == "fault") {
      absl::StatusOr<Fault> f = ParseFault(value);
      if (!f.ok()) return f.status();
      plan.fault = *f;
    } else if (name == "algorithm") {
      absl::StatusOr<Algorithm> a = ParseAlgorithm(value);
      if (!a.ok()) return a.status();
      plan.limit.algorithm = *a;
    } else if (name == "instances") {
      ok = ParseNumber(value, plan.instances);
    } else if (name == "load") {
      ok = ParseNumber(value, plan.load);
    } else if (name == "limit") {
      ok = ParseNumber(value, plan.limit.limit);
    } else if (name == "period_us") {
      int64_t us = 0;
      ok = ParseNumber(value, us);
      plan.limit.period = std::chrono::microseconds(us);
    } else if (name == "burst") {
      ok = ParseNumber(value, burst);
      if (burst > 0) plan.limit.burst = burst;
    } else if (name == "fault_at_us") {
      ok = ParseNumber(value, plan.fault_at_us);
    } else if (name == "fault_for_us") {
      ok = ParseNumber(value, plan.fault_for_us);
    } else if (name == "duration_us") {
      ok = ParseNumber(value, plan.duration_us);
    } else if (name == "rotate_us") {
      ok = ParseNumber(value, plan.rotate_us);
    } else if (name == "flush_us") {
      ok = ParseNumber(value, plan.flush_us);
    } else if (name == "inflight") {
      ok = ParseNumber(value, plan.inflight);
    } else if (name == "seed") {
      ok = ParseNumber(value, plan.seed);
    } else if (name == "key") {
      plan.key = std::string(value);
    } else if (name == "url") {
      plan.url = std::string(value);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown plan field \"", AbslView(name), "\""));
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad value for ", AbslView(name), ": \"", AbslView(value), "\""));
    }
  }
  if (plan.instances < 1 || plan.instances > 256 || !(plan.load > 0) || plan.duration_us <= 0 ||
      plan.rotate_us <= 0 || plan.flush_us <= 0 || plan.inflight < 1) {
    return absl::InvalidArgumentError(absl::StrCat("plan out of range: ", AbslView(text)));
  }
  if (absl::Status s = ValidateLimit(plan.limit); !s.ok()) return s;
  return plan;
}

int ProcessCount(const Plan& plan) {
  return plan.instances + (plan.fault == Fault::kAddInstance ? 1 : 0);
}

std::vector<int> ActiveInstances(const Plan& plan, int64_t offset_us) {
  std::vector<int> active;
  const bool after_fault = offset_us >= plan.fault_at_us;
  for (int i = 0; i < plan.instances; ++i) {
    if (i == 0 && after_fault && plan.fault == Fault::kKillInstance) continue;
    active.push_back(i);
  }
  if (after_fault && plan.fault == Fault::kAddInstance) active.push_back(plan.instances);
  return active;
}

double Share(const Plan& plan, int instance, int64_t offset_us) {
  const std::vector<int> active = ActiveInstances(plan, offset_us);
  const auto at = std::find(active.begin(), active.end(), instance);
  if (at == active.end()) return 0;
  const int m = static_cast<int>(active.size());
  const int position = static_cast<int>(at - active.begin());
  if (m == 1) return 1;
  switch (plan.split) {
    case Split::kUniform:
      return 1.0 / m;
    case Split::kEightyTwenty: {
      const int hot = (m + 4) / 5;
      return position < hot ? 0.8 / hot : 0.2 / (m - hot);
    }
    case Split::kHot:
      return position == 0 ? 0.9 : 0.1 / (m - 1);
    case Split::kRotating: {
      const int hot = static_cast<int>((offset_us / plan.rotate_us) % m);
      return position == hot ? 0.9 : 0.1 / (m - 1);
    }
  }
  return 0;
}

double OfferedPerMicro(const Plan& plan, int instance, int64_t offset_us) {
  const double total = plan.load * static_cast<double>(plan.limit.limit) /
                       static_cast<double>(plan.limit.period.count());
  double factor = 1;
  if (plan.schedule == Schedule::kSquare) {
    const int64_t phase = offset_us % kSquareCycleUs;
    const bool on = phase < kSquareHalfOnUs || phase >= kSquareCycleUs - kSquareHalfOnUs;
    factor = on ? kSquareFactor : 0;
  }
  return total * factor * Share(plan, instance, offset_us);
}

int64_t NextChange(const Plan& plan, int64_t offset_us) {
  int64_t next = plan.duration_us;
  if (plan.split == Split::kRotating) {
    next = std::min(next, (offset_us / plan.rotate_us + 1) * plan.rotate_us);
  }
  if ((plan.fault == Fault::kKillInstance || plan.fault == Fault::kAddInstance) &&
      plan.fault_at_us > offset_us) {
    next = std::min(next, plan.fault_at_us);
  }
  if (plan.schedule == Schedule::kSquare) {
    const int64_t cycle = offset_us / kSquareCycleUs * kSquareCycleUs;
    for (int64_t edge : {cycle + kSquareHalfOnUs, cycle + kSquareCycleUs - kSquareHalfOnUs,
                         cycle + kSquareCycleUs + kSquareHalfOnUs}) {
      if (edge > offset_us) {
        next = std::min(next, edge);
        break;
      }
    }
  }
  return std::max(next, offset_us + 1);
}

ArrivalGenerator::ArrivalGenerator(const Plan& plan, int instance)
    : plan_(plan),
      instance_(instance),
      rng_(plan.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(instance) + 1) {}

double ArrivalGenerator::Threshold() {
  if (plan_.schedule == Schedule::kPoisson) {
    return std::exponential_distribution<double>(1.0)(rng_);
  }
  if (first_) {
    // Evenly spaced arrivals at a random phase, so that the instances do not offer in lockstep.
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  }
  return 1.0;
}

std::optional<int64_t> ArrivalGenerator::Next() {
  // Integrated intensity: the next arrival is where the rate's integral from here reaches the
  // threshold (1 for evenly spaced arrivals, Exp(1) for Poisson), across segments of constant rate.
  double need = Threshold();
  first_ = false;
  while (offset_us_ < static_cast<double>(plan_.duration_us)) {
    const auto here = static_cast<int64_t>(offset_us_);
    const double rate = OfferedPerMicro(plan_, instance_, here);
    const auto change = static_cast<double>(NextChange(plan_, here));
    const double room = rate * (change - offset_us_);
    if (rate > 0 && room >= need) {
      offset_us_ += need / rate;
      if (offset_us_ >= static_cast<double>(plan_.duration_us)) return std::nullopt;
      return static_cast<int64_t>(offset_us_);
    }
    need -= room;
    offset_us_ = change;
  }
  return std::nullopt;
}

}  // namespace sluice::lease_error
