// The lease store's hot path: a decision on a key with a live lease, against the memory store's
// decision in the same run (docs/PERFORMANCE.md, "Leases"). The lease source grants what it is
// asked at once, inline, so what is measured is the local spending: the shard lock, the map
// lookup, the Decision. Prints ns per decision (mean of the whole loop; p50, p99 of single calls
// less the p50 of the clock reads around them, measured in the same run) and the ratio.
//
// Usage: lease_store_benchmark [decisions]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sluice/memory_store.h"

#include "src/store/lease/lease_store.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

// Grants every unit asked for, for a minute, inline: the store side costs nothing here.
class GenerousSource final : public internal::LeaseSource {
 public:
  void DecideAndLease(std::span<const LimitCheck> checks,
                      std::span<const internal::LeaseWant> wants, LeaseCallback done) override {
    internal::LeasedDecision out;
    out.decision.allowed = true;
    const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (size_t i = 0; i < checks.size(); ++i) {
      const int64_t cap = checks[i].limit.Capacity();
      out.decision.decisions.push_back(Decision{
          .allowed = true, .limit = cap, .remaining = cap, .reset_after = std::chrono::minutes(1)});
      out.grants.push_back({.granted = wants[i].units, .now_us = now, .ends_us = now + 60'000'000});
    }
    std::move(done)(std::move(out));
  }
  void Refund(std::span<const internal::LeaseRefund>, RefundCallback done) override {
    std::move(done)(absl::OkStatus());
  }
};

class ExactStore final : public Store {
 public:
  std::string_view Name() const override { return "exact"; }

 protected:
  void Decide(std::span<const LimitCheck>, MultiDecisionCallback done) override {
    std::move(done)(absl::UnavailableError("not used"));
  }
};

struct Figures {
  double mean_ns, p50_ns, p99_ns;
};

// Times `n` decisions on `keys` (by index sequence `order`) through `store`.
Figures Run(Store& store, const std::vector<std::string>& keys, const std::vector<uint32_t>& order,
            const Limit& limit) {
  std::vector<uint32_t> single;
  single.reserve(order.size());
  const auto start = Clock::now();
  for (uint32_t k : order) {
    const auto t0 = Clock::now();
    absl::StatusOr<Decision> d = store.Check(keys[k], limit);
    const auto t1 = Clock::now();
    if (!d.ok() || !d->allowed) {
      std::fprintf(stderr, "unexpected: %s\n", d.ok() ? "denied" : d.status().ToString().c_str());
      std::exit(1);
    }
    single.push_back(static_cast<uint32_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  const double total = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  std::sort(single.begin(), single.end());
  return {total / static_cast<double>(order.size()), static_cast<double>(single[single.size() / 2]),
          static_cast<double>(single[single.size() * 99 / 100])};
}

// Times `n` empty regions as Run() times a call: what its two clock reads add to a single call's
// figure (its p50 is subtracted below, so that p50 and p99 say what the decision itself costs).
Figures TimerAlone(size_t n) {
  std::vector<uint32_t> single;
  single.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    const auto t1 = Clock::now();
    single.push_back(static_cast<uint32_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  std::sort(single.begin(), single.end());
  return {0, static_cast<double>(single[n / 2]), static_cast<double>(single[n * 99 / 100])};
}

int Main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2'000'000;
  // A limit no run reaches: every decision is an admission.
  const Limit limit{.limit = 4'000'000'000, .period = std::chrono::hours(1)};
  std::vector<std::string> keys;
  for (int i = 0; i < 10'000; ++i) keys.push_back("sluice:user:" + std::to_string(i));
  // Zipf(1.0) over 10,000 keys, and one hot key.
  std::vector<double> weights(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) weights[i] = 1.0 / static_cast<double>(i + 1);
  std::discrete_distribution<uint32_t> zipf(weights.begin(), weights.end());
  std::mt19937 rng(42);
  std::vector<uint32_t> zipf_order(n), hot_order(n, 0);
  for (uint32_t& k : zipf_order) k = zipf(rng);

  const Figures timer = TimerAlone(n);
  std::printf(
      "two clock reads around nothing: p50 %.0f ns, p99 %.0f ns (taken off the p50 and p99"
      " below)\n",
      timer.p50_ns, timer.p99_ns);
  std::printf("%-28s %10s %10s %10s %8s\n", "path", "mean ns", "p50 ns", "p99 ns", "x memory");
  for (const auto& [name, order] :
       {std::pair<const char*, const std::vector<uint32_t>*>{"hot key", &hot_order},
        {"zipf 10k keys", &zipf_order}}) {
    auto memory = MemoryStore::Create({});
    if (!memory.ok()) return 1;
    GenerousSource source;
    ExactStore exact;
    internal::LeaseStore lease(exact, source, {});
    // Warm up: every key leased once (its first request is exact, so prime with two each).
    for (int round = 0; round < 2; ++round) {
      for (const std::string& k : keys) (void)lease.Check(k, limit);
    }
    const Figures m = Run(**memory, keys, *order, limit);
    const Figures l = Run(lease, keys, *order, limit);
    std::printf("%-28s %10.1f %10.0f %10.0f %8s\n", (std::string("memory, ") + name).c_str(),
                m.mean_ns, m.p50_ns - timer.p50_ns, m.p99_ns - timer.p50_ns, "1.00");
    std::printf("%-28s %10.1f %10.0f %10.0f %8.2f\n", (std::string("lease, ") + name).c_str(),
                l.mean_ns, l.p50_ns - timer.p50_ns, l.p99_ns - timer.p50_ns, l.mean_ns / m.mean_ns);
    const internal::LeaseStats st = lease.Stats();
    std::printf("  lease: %llu local, %llu refills, %llu leasing calls\n",
                static_cast<unsigned long long>(st.local_admits),
                static_cast<unsigned long long>(st.refills),
                static_cast<unsigned long long>(st.lease_calls));
  }
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
