// The RLQS end-to-end accuracy run (docs/PERFORMANCE.md, "RLQS accuracy"): M simulated Envoys
// enforce the token buckets sluice assigns them against open-loop demand that shifts between
// uniform and skewed phases, and report every 5 s as Envoy's rate_limit_quota filter does
// (counts of allowed and denied, the first report at the first request). Time is simulated in
// 1 ms steps; the allocation is the memory allocator's (the same rule as the Redis script), and
// the demand measurement, TTLs and top-ups are the service's (rlqs_stream.cc). An Envoy
// applies an assignment as its filter does (global_client_impl.cc upstream): an unchanged token
// bucket carries over; a changed one starts full if the old one held at least about one token
// (upstream passes max_tokens x the old fill ratio, in whole tokens, where the token bucket takes
// only "start full?"), else empty; the first one, or one after a blanket rule, starts full. Prints
// one CSV row per second (t, demand, min(demand, limit), admitted, live grants) and a summary per
// phase.
//
//   rlqs_accuracy [--full-on-change | --keep-ratio] [--no-top-ups] [--top-up-ms N]
//     --full-on-change  every changed token bucket starts full (a client that does not carry
//                       tokens over, the worst case)
//     --keep-ratio      a changed token bucket starts at the old one's fill ratio
//     --grow-capacity   max_tokens = the grant always, also when a saturated client's grant rises
//     --no-top-ups      the server answers reports only
//     --top-up-ms N     top-ups every N ms (default 1000, sluiced's default)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "src/server/rlqs/max_min_share.h"
#include "src/server/rlqs/memory_quota_allocator.h"
#include "tests/testing/manual_clock.h"

namespace {

using sluice::QuotaShare;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kEnvoys = 10;
constexpr uint64_t kLimit = 100;  // requests per second, shared
constexpr int kPhaseSeconds = 60;
constexpr int kReportMs = 5000;

// Each phase's demand per Envoy, requests per second.
std::vector<std::vector<double>> Phases() {
  std::vector<double> uniform(kEnvoys, 15);  // 150 > limit: 10 each
  std::vector<double> skewed(kEnvoys, 3);    // one big: 27 + 73
  skewed[0] = 80;
  std::vector<double> under(kEnvoys, 5);    // 50 < limit: all admitted
  std::vector<double> two_big(kEnvoys, 1);  // 8 + 46 + 46
  two_big[3] = 60;
  two_big[7] = 60;
  return {uniform, skewed, under, two_big};
}

struct Envoy {
  double tokens = 0;
  uint64_t rate = 0;      // tokens per second; 0: deny all
  uint64_t capacity = 0;  // max_tokens
  bool assigned = false;
  // Whether its last report had denials (the server's view: held at its grant).
  bool saturated = false;
  // The server's side: the last reported demand and TTL, and when it next tops the grant up
  // (while the grant is below what the client wanted; -1: not due).
  uint64_t demand = 0;
  seconds ttl{1};
  int64_t next_top_up_ms = -1;
  int64_t expires_ms = 0;
  int64_t next_report_ms = -1;
  int64_t last_report_ms = -1;
  uint64_t allowed = 0;
  uint64_t denied = 0;
  double arrivals = 0;  // fractional requests carried to the next millisecond
};

}  // namespace

int main(int argc, char** argv) {
  bool full_on_change = false, keep_ratio = false, top_ups = true, grow_capacity = false;
  int top_up_ms = 1000;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--full-on-change") == 0) full_on_change = true;
    if (std::strcmp(argv[a], "--keep-ratio") == 0) keep_ratio = true;
    if (std::strcmp(argv[a], "--grow-capacity") == 0) grow_capacity = true;
    if (std::strcmp(argv[a], "--no-top-ups") == 0) top_ups = false;
    if (std::strcmp(argv[a], "--top-up-ms") == 0 && a + 1 < argc) top_up_ms = std::atoi(argv[++a]);
  }
  sluice::testing::ManualClock clock;
  sluice::MemoryQuotaAllocator allocator(clock);
  const auto phases = Phases();
  std::mt19937_64 rng(22);
  std::vector<Envoy> envoys(kEnvoys);
  std::uniform_int_distribution<int> phase_jitter(0, kReportMs - 1);
  // A report's or a top-up's answer, as the Envoy applies it. The service sends a top-up's answer
  // only when it raised the grant.
  auto apply = [&](Envoy& e, int i, bool top_up, int64_t now) {
    QuotaShare share;
    allocator.Allocate({.bucket = "sim",
                        .client = std::to_string(i),
                        .demand = e.demand,
                        .limit = kLimit,
                        .ttl = e.ttl,
                        .top_up = top_up},
                       [&](absl::StatusOr<QuotaShare> s) { share = *s; });
    e.next_top_up_ms = share.granted < share.wanted ? now + top_up_ms : -1;
    if (top_up && share.granted <= e.rate) return;
    // max_tokens as the service sets it (QuotaMaxTokens()).
    const uint64_t capacity =
        grow_capacity
            ? share.granted
            : sluice::QuotaMaxTokens(share.granted, e.rate == 0 ? 0 : e.capacity, e.saturated);
    const bool changed = share.granted != e.rate || capacity != e.capacity;
    if (!e.assigned || e.rate == 0 || (full_on_change && changed)) {
      e.tokens = static_cast<double>(capacity);  // a first (or post-DENY_ALL) bucket
    } else if (changed) {
      // Upstream computes the new bucket's tokens as max_tokens x the old fill ratio, in whole
      // tokens, and hands that to a token bucket that takes only "start full?": full from one
      // whole token on, else empty. --keep-ratio: the ratio itself, as the code means it.
      const double ratio = e.tokens / static_cast<double>(e.capacity);
      const double kept = std::floor(static_cast<double>(capacity) * ratio);
      e.tokens = keep_ratio  ? static_cast<double>(capacity) * ratio
                 : kept >= 1 ? static_cast<double>(capacity)
                             : 0;
    }
    e.capacity = capacity;
    e.rate = share.granted;
    e.assigned = true;
    e.expires_ms = now + share.ttl.count() * 1000;
  };
  std::printf("t,demand,target,admitted,granted\n");
  const int total_ms = kPhaseSeconds * static_cast<int>(phases.size()) * 1000;
  std::vector<double> admitted_per_s(total_ms / 1000, 0), target_per_s(total_ms / 1000, 0);
  // Whether every Envoy held its max-min share of the phase's demands at the end of each second.
  std::vector<bool> at_shares(total_ms / 1000, false);
  uint64_t admitted_this_second = 0;
  for (int64_t now = 0; now < total_ms; ++now) {
    const auto& demand = phases[now / (kPhaseSeconds * 1000)];
    for (int i = 0; i < kEnvoys; ++i) {
      Envoy& e = envoys[i];
      // Reports: the first at the first request, then every 5 s.
      if (e.next_report_ms < 0) e.next_report_ms = now;
      if (now == e.next_report_ms) {
        const bool first = e.last_report_ms < 0;
        const int64_t interval_ms = first ? kReportMs : now - e.last_report_ms;
        uint64_t measured = kLimit;
        if (!first) {
          measured = static_cast<uint64_t>(
              std::ceil(static_cast<double>(e.allowed + e.denied) * 1000.0 / interval_ms));
        }
        e.demand = measured;
        e.ttl = sluice::QuotaTtl(milliseconds(interval_ms));
        e.saturated = e.denied > 0;
        apply(e, i, /*top_up=*/false, now);
        e.allowed = e.denied = 0;
        e.last_report_ms = now;
        e.next_report_ms = now + (first ? phase_jitter(rng) + 1 : kReportMs);
      }
      if (top_ups && now == e.next_top_up_ms) apply(e, i, /*top_up=*/true, now);
      if (e.assigned && now >= e.expires_ms) e.rate = 0;  // expired: deny (a strict fallback)
      e.tokens = std::min(static_cast<double>(e.capacity), e.tokens + e.rate / 1000.0);
      e.arrivals += demand[i] / 1000.0;
      while (e.arrivals >= 1) {
        e.arrivals -= 1;
        if (e.tokens >= 1) {
          e.tokens -= 1;
          ++e.allowed;
          ++admitted_this_second;
        } else {
          ++e.denied;
        }
      }
    }
    clock.Advance(milliseconds(1));
    if ((now + 1) % 1000 == 0) {
      double total_demand = 0;
      for (double d : demand) total_demand += d;
      uint64_t granted = 0;
      for (const Envoy& e : envoys) granted += e.rate;
      const double target = std::min<double>(total_demand, kLimit);
      const int second = static_cast<int>(now / 1000);
      admitted_per_s[second] = static_cast<double>(admitted_this_second);
      target_per_s[second] = target;
      sluice::internal::QuotaRecords records;
      for (int i = 0; i < kEnvoys; ++i) {
        records[std::to_string(i)].demand = static_cast<uint64_t>(std::ceil(demand[i]));
      }
      const auto shares = sluice::internal::MaxMinShares(records, kLimit);
      at_shares[second] = std::all_of(
          envoys.begin(), envoys.end(),
          [&, i = 0](const Envoy& e) mutable { return e.rate == shares.at(std::to_string(i++)); });
      std::printf("%d,%.0f,%.0f,%llu,%llu\n", second + 1, total_demand, target,
                  static_cast<unsigned long long>(admitted_this_second),
                  static_cast<unsigned long long>(granted));
      admitted_this_second = 0;
    }
  }
  // Per phase: the most admitted in one second, the steady-state ratio (after 15 s, three report
  // intervals), the seconds after the shift until every Envoy holds its max-min share for good,
  // and until every later second's admitted count is within 5 % of target.
  for (size_t p = 0; p < phases.size(); ++p) {
    const int begin = static_cast<int>(p) * kPhaseSeconds;
    double peak = 0, sum = 0, target_sum = 0;
    for (int s = begin; s < begin + kPhaseSeconds; ++s) peak = std::max(peak, admitted_per_s[s]);
    for (int s = begin + 15; s < begin + kPhaseSeconds; ++s) {
      sum += admitted_per_s[s];
      target_sum += target_per_s[s];
    }
    int settled = kPhaseSeconds, shared = kPhaseSeconds;
    for (int s = begin + kPhaseSeconds - 1; s >= begin; --s) {
      if (std::abs(admitted_per_s[s] - target_per_s[s]) > 0.05 * target_per_s[s]) break;
      settled = s - begin;
    }
    for (int s = begin + kPhaseSeconds - 1; s >= begin && at_shares[s]; --s) shared = s - begin;
    std::fprintf(stderr,
                 "phase %zu: target %.0f/s, peak second %.0f, steady admitted/target %.3f, "
                 "grants at max-min shares from second %d, within 5%% from second %d\n",
                 p, target_per_s[begin], peak, sum / target_sum, shared + 1, settled);
  }
  return 0;
}
