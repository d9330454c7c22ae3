#include "bench/lease_error/analysis_check.h"

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "bench/lease_error/analysis.h"

namespace sluice::lease_error {
namespace {

constexpr int64_t kSecond = 1'000'000;
// An aligned start well inside the epoch, like the real runs'.
constexpr int64_t kStart = 1'700'000'000 * kSecond;

// An admitted decision decided at `at` (offset from kStart), issued `before` earlier and answered
// `after` later, with the reset_after an exact store reports for a window limit.
Record Admitted(const Limit& limit, int64_t at, int64_t before = 50, int64_t after = 50) {
  const int64_t now = kStart + at;
  const int64_t p = limit.period.count();
  const int64_t window_end = (now / p + 1) * p;
  const int64_t reset =
      limit.algorithm == Algorithm::kSlidingWindow ? window_end + p - now : window_end - now;
  return {.send_us = now - before,
          .recv_us = now + after,
          .reset_after_us = reset,
          .flags = Record::kValid | Record::kAllowed};
}

Record Denied(int64_t at) {
  return {.send_us = kStart + at - 50, .recv_us = kStart + at + 50, .flags = Record::kValid};
}

struct Case {
  std::string name;
  Limit limit;
  int64_t duration_us = 0;
  std::vector<Record> records = {};
  double e_max = 0;
  double u_max = 0;
};

std::vector<Case> Cases() {
  const Limit fixed{
      .algorithm = Algorithm::kFixedWindow, .limit = 10, .period = std::chrono::seconds(1)};
  const Limit log{
      .algorithm = Algorithm::kSlidingLog, .limit = 3, .period = std::chrono::seconds(1)};
  const Limit bucket{
      .algorithm = Algorithm::kTokenBucket, .limit = 2, .period = std::chrono::seconds(1)};
  std::vector<Case> cases;
  {
    // L per window in two windows: no excess.
    Case c{.name = "fixed window at its bound", .limit = fixed, .duration_us = 2 * kSecond};
    for (int64_t w = 0; w < 2; ++w) {
      for (int64_t i = 0; i < 10; ++i) c.records.push_back(Admitted(fixed, w * kSecond + i * 1000));
    }
    cases.push_back(c);
    // One more in the second window: E = 1/L.
    c.name = "fixed window one over";
    c.records.push_back(Admitted(fixed, kSecond + 500'000));
    c.e_max = 0.1;
    cases.push_back(c);
  }
  {
    // A call straddling the edge, decided in the first window (its reset_after says so): placed
    // there, not in the full second window.
    Case c{.name = "fixed window straddling call", .limit = fixed, .duration_us = 2 * kSecond};
    for (int64_t i = 0; i < 9; ++i) c.records.push_back(Admitted(fixed, i * 1000));
    c.records.push_back(Admitted(fixed, kSecond - 10, /*before=*/100, /*after=*/300));
    for (int64_t i = 0; i < 10; ++i) {
      c.records.push_back(Admitted(fixed, kSecond + 1000 + i * 1000));
    }
    cases.push_back(c);
  }
  {
    // 5 offered and 3 admitted in each of two complete windows: U = (min(5, L) - 3) / L.
    Case c{.name = "fixed window under-admission", .limit = fixed, .duration_us = 2 * kSecond};
    for (int64_t w = 0; w < 2; ++w) {
      for (int64_t i = 0; i < 3; ++i) c.records.push_back(Admitted(fixed, w * kSecond + i * 1000));
      for (int64_t i = 0; i < 2; ++i) c.records.push_back(Denied(w * kSecond + 5000 + i * 1000));
    }
    c.u_max = 0.2;
    cases.push_back(c);
  }
  {
    // L at 0, 0.5 s, 0.9 s, and one exactly P after the first (that entry has expired): no excess,
    // although with the call latency the recorded times of the first and the last overlap P.
    Case c{.name = "sliding log at its bound", .limit = log, .duration_us = 2 * kSecond};
    for (int64_t at : std::vector<int64_t>{0, 500'000, 900'000, 1'000'000}) {
      c.records.push_back(Admitted(log, at, 200, 200));
    }
    cases.push_back(c);
    // One more at 0.95 s: four in (0.05 s, 1.05 s], E = 1/L.
    c.name = "sliding log one over";
    c.records.push_back(Admitted(log, 950'000));
    c.e_max = 1.0 / 3;
    cases.push_back(c);
  }
  {
    // C = 2, 2/s: 2 at once, then one every 0.5 s: at most C + 2 (b - a) + 1 in every [a, b].
    Case c{.name = "token bucket at its bound", .limit = bucket, .duration_us = 2 * kSecond};
    for (int64_t at : std::vector<int64_t>{0, 10, 500'000, 1'000'000, 1'500'000}) {
      c.records.push_back(Admitted(bucket, at));
    }
    cases.push_back(c);
    // Three more at 0.2 s: 6 in [0, 0.5 s] against 2 + 1 + 1: E = 2/L.
    c.name = "token bucket two over";
    for (int64_t i = 0; i < 3; ++i) c.records.push_back(Admitted(bucket, 200'000 + i * 1000));
    c.e_max = 1.0;
    cases.push_back(c);
  }
  return cases;
}

}  // namespace

bool CheckAnalysis() {
  bool ok = true;
  for (const Case& c : Cases()) {
    const Analysis a = Analyze(c.limit, kStart, kStart + c.duration_us, c.records);
    const Summary s = Summarize(a, kStart, kStart + c.duration_us, kStart, kStart + c.duration_us);
    const bool pass = std::abs(s.e_max - c.e_max) < 1e-3 && std::abs(s.u_max - c.u_max) < 1e-3;
    if (!pass) {
      std::cerr << "analysis check \"" << c.name << "\": E max " << s.e_max << " (want " << c.e_max
                << "), U max " << s.u_max << " (want " << c.u_max << ")\n";
      ok = false;
    }
  }
  return ok;
}

}  // namespace sluice::lease_error
