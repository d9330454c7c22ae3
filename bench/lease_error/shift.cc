#include "bench/lease_error/shift.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace sluice::lease_error {
namespace {

// A bin with fewer admissions has nothing to share (an exhausted window) or too few to tell.
constexpr int64_t kMinAdmitted = 10;
constexpr double kReached = 0.95;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

struct Bin {
  int64_t offered = 0, offered_hot = 0, admitted = 0, admitted_hot = 0;

  // The hot instance's admitted / share, or nullopt when the bin does not count.
  std::optional<double> Ratio() const {
    if (admitted < kMinAdmitted || offered_hot == 0) return std::nullopt;
    const double share = static_cast<double>(admitted) * static_cast<double>(offered_hot) /
                         static_cast<double>(offered);
    return static_cast<double>(admitted_hot) / share;
  }
};

// The checks issued in [from, to) (decisions are ordered by send_us), as seen by `hot`.
Bin Count(const Analysis& analysis, int hot, int64_t from, int64_t to) {
  const auto& d = analysis.decisions;
  auto it = std::lower_bound(d.begin(), d.end(), from,
                             [](const Record& r, int64_t t) { return r.send_us < t; });
  Bin bin;
  for (; it != d.end() && it->send_us < to; ++it) {
    const bool mine = it->instance == static_cast<uint32_t>(hot);
    const bool admitted = (it->flags & Record::kAllowed) != 0;
    ++bin.offered;
    bin.offered_hot += mine ? 1 : 0;
    bin.admitted += admitted ? 1 : 0;
    bin.admitted_hot += mine && admitted ? 1 : 0;
  }
  return bin;
}

}  // namespace

ShiftStats MeasureShifts(const Plan& plan, const Analysis& analysis, int64_t start_us,
                         int64_t refresh_us) {
  ShiftStats out;
  if (plan.split != Split::kRotating || refresh_us <= 0) return out;
  const int64_t bin_us = std::max<int64_t>(1000, refresh_us / 10);
  std::vector<double> reached;
  std::vector<double> steady;
  for (int64_t offset = plan.rotate_us; offset < plan.duration_us; offset += plan.rotate_us) {
    const std::vector<int> active = ActiveInstances(plan, offset);
    if (active.size() < 2) continue;
    // Share()'s rule: the hot instance is the one at position floor(offset / rotate) mod m.
    const int hot = active[static_cast<size_t>((offset / plan.rotate_us) % active.size())];
    const int64_t shift = start_us + offset;
    const int64_t next = start_us + std::min(offset + plan.rotate_us, plan.duration_us);
    std::optional<int64_t> clock_from;  // the first bin after the shift that admitted anything
    std::optional<double> t95;
    bool counted = false;
    for (int64_t from = shift; from + bin_us <= next; from += bin_us) {
      const Bin bin = Count(analysis, hot, from, from + bin_us);
      if (!clock_from && bin.admitted > 0) clock_from = from;
      const std::optional<double> ratio = bin.Ratio();
      if (!ratio) continue;
      counted = true;
      if (!t95 && *ratio >= kReached) {
        t95 = static_cast<double>(from + bin_us - *clock_from) / static_cast<double>(refresh_us);
      }
    }
    if (!counted) continue;
    // Steady state, per whole window from 2 refreshes after the clock started: per bin, a window
    // limit's late bins hold only what instances with leases left spend, which says little.
    const int64_t p = plan.limit.period.count();
    for (int64_t w = (*clock_from + 2 * refresh_us + p - 1) / p * p; w + p <= next; w += p) {
      if (const std::optional<double> ratio = Count(analysis, hot, w, w + p).Ratio()) {
        steady.push_back(*ratio);
      }
    }
    ++out.shifts;
    if (t95) {
      reached.push_back(*t95);
    } else {
      ++out.unreached;
    }
  }
  out.t95_max = reached.empty() ? 0 : *std::max_element(reached.begin(), reached.end());
  out.t95_p50 = Median(reached);
  out.steady_p50 = Median(steady);
  return out;
}

}  // namespace sluice::lease_error
