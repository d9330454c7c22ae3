// redis_store_load: decisions per second through sluice's RedisStore, with N checks in flight.
//
//   redis_store_load --url redis://127.0.0.1:6390 --algorithm fixed_window --inflight 256
//     --seconds 10 [--evalsha]      # --evalsha: scripts by EVALSHA instead of functions (FCALL)
//   redis_store_load --print-script --algorithm gcra   # the production EVAL script of that
//                                                      # algorithm
//
// Keeps --inflight CheckAsync calls outstanding on 10k uniform random keys (re-issuing from each
// completion) for --seconds, then prints one JSON line: decisions/s, allowed/denied/errors, and
// p50/p99/p999 latency in microseconds. The limit is high (1e7 per 60 s per key; the peer uses 1e9,
// beyond GCRA's exact range), so every script runs its full allow path. Loopback only; runs at most
// 120 s.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include "sluice/redis_store.h"

#include "src/store/redis/lua_scripts.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Run {
  sluice::Store* store = nullptr;
  sluice::Limit limit{};
  int keys = 10000;
  Clock::time_point stop{};
  // The keys, and the sequence of key indices the checks walk through (--dist).
  std::vector<std::string> key_names;
  std::vector<uint32_t> sequence;
  std::atomic<int> outstanding{0};
  std::atomic<int64_t> allowed{0};
  std::atomic<int64_t> denied{0};
  std::atomic<int64_t> errors{0};
  absl::Mutex mu;
  std::vector<int64_t> latencies_us ABSL_GUARDED_BY(mu);
  absl::Notification done;
  // Chains whose check was answered on the store's thread, waiting for the driver thread to go on:
  // a chain answered from memory (a lease) runs on for a while, which must not hold up the
  // store's I/O thread, where the other answers arrive.
  absl::Mutex queue_mu;
  std::deque<struct Chain*> queue ABSL_GUARDED_BY(queue_mu);
};

// One of the --inflight chains of checks: each completion issues the next. A check answered inline
// (a lease spent in memory) is followed in the same loop, not by recursion, so the stack stays
// flat; one answered later restarts the chain on the answering thread.
struct Chain {
  Run* run = nullptr;
  uint64_t seed = 0;
  // 0 while a check is being issued; the issuer sets 1 when it returns first, the callback 2 when
  // it ran first (inline).
  std::atomic<int> state{0};
};

void Drive(Chain& chain) {
  Run& run = *chain.run;
  for (;;) {
    // A cheap LCG step: key choice must cost nothing next to a decision.
    chain.seed = chain.seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::string& key = run.key_names[run.sequence[(chain.seed >> 17) % run.sequence.size()]];
    chain.state.store(0, std::memory_order_relaxed);
    const auto start = Clock::now();
    run.store->CheckAsync(key, run.limit, 1, [&chain, start](absl::StatusOr<sluice::Decision> d) {
      Run& r = *chain.run;
      const auto now = Clock::now();
      // One latency in 8 is kept (chosen by the key draw, so independent of the path taken): at
      // millions of decisions a second the record would cost more than a leased decision.
      if ((chain.seed >> 40) % 8 == 0) {
        absl::MutexLock lock(&r.mu);
        r.latencies_us.push_back(
            std::chrono::duration_cast<std::chrono::microseconds>(now - start).count());
      }
      if (!d.ok()) {
        r.errors.fetch_add(1);
      } else if (d->allowed) {
        r.allowed.fetch_add(1);
      } else {
        r.denied.fetch_add(1);
      }
      if (now >= r.stop) {
        chain.state.store(3, std::memory_order_release);
        if (r.outstanding.fetch_sub(1) == 1) r.done.Notify();
        return;
      }
      // First to mark the check decides who goes on: the issuer's loop, or the driver thread.
      if (chain.state.exchange(2, std::memory_order_acq_rel) == 1) {
        absl::MutexLock lock(&r.queue_mu);
        r.queue.push_back(&chain);
      }
    });
    int expected = 0;
    if (chain.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
    if (expected == 3) return;  // finished inline
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "redis://127.0.0.1:6390";
  std::string algorithm = "fixed_window";
  int inflight = 50;
  int seconds = 10;
  int keys = 10000;
  std::string dist = "uniform";
  int64_t limit = 0;
  bool print_script = false;
  bool evalsha = false;
  CLI::App app{"redis_store_load: RedisStore decisions per second"};
  app.add_option("--url", url)->capture_default_str();
  app.add_option("--algorithm", algorithm)->capture_default_str();
  app.add_option("--inflight", inflight)->capture_default_str();
  app.add_option("--seconds", seconds)->capture_default_str();
  app.add_option("--keys", keys)->capture_default_str();
  app.add_option("--dist", dist, "Key popularity: uniform, zipf (s = 1) or hot (one key)")
      ->check(CLI::IsMember({"uniform", "zipf", "hot"}))
      ->capture_default_str();
  app.add_option("--limit", limit,
                 "Units per 60 s per key (default 1e7, the sliding log 1e5); a run that must not "
                 "reach it (leases at millions a second) sets more");
  app.add_flag("--print-script", print_script,
               "Print the production check script of --algorithm and exit");
  app.add_flag("--evalsha", evalsha, "Run the scripts with EVALSHA, not as functions (FCALL)");
  CLI11_PARSE(app, argc, argv);
  auto algo = sluice::ParseAlgorithm(algorithm);
  if (!algo.ok()) {
    std::cerr << algo.status() << "\n";
    return 2;
  }
  if (print_script) {
    std::cout << sluice::CheckScript(*algo).text;
    return 0;
  }
  auto store = sluice::RedisStore::Create(
      {.url = url, .command_timeout = std::chrono::seconds(2), .use_functions = !evalsha});
  if (!store.ok() || !(*store)->WaitForConnection(std::chrono::seconds(5)).ok()) {
    std::cerr << "cannot connect to " << url << "\n";
    return 1;
  }
  Run run;
  run.store = store->get();
  // The sliding log keeps one entry per unit and accepts at most 100,000 per period
  // (ValidateLimit).
  int64_t quota = *algo == sluice::Algorithm::kSlidingLog ? 100'000 : 10'000'000;
  if (limit > 0) quota = limit;
  run.limit = sluice::Limit{.algorithm = *algo, .limit = quota, .period = std::chrono::seconds(60)};
  run.keys = dist == "hot" ? 1 : std::max(1, keys);
  for (int i = 0; i < run.keys; ++i) run.key_names.push_back("bench:k" + std::to_string(i));
  // A million draws of the key index, walked by each chain from a random point.
  std::mt19937_64 rng(42);
  run.sequence.resize(1 << 20);
  if (dist == "zipf") {
    std::vector<double> weights(static_cast<size_t>(run.keys));
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = 1.0 / static_cast<double>(i + 1);
    std::discrete_distribution<uint32_t> zipf(weights.begin(), weights.end());
    for (uint32_t& k : run.sequence) k = zipf(rng);
  } else {
    std::uniform_int_distribution<uint32_t> uniform(0, static_cast<uint32_t>(run.keys - 1));
    for (uint32_t& k : run.sequence) k = uniform(rng);
  }
  inflight = std::clamp(inflight, 1, 4096);
  rusage cpu_begin{};
  getrusage(RUSAGE_SELF, &cpu_begin);
  const auto begin = Clock::now();
  run.stop = begin + std::chrono::seconds(std::clamp(seconds, 1, 120));
  run.outstanding.store(inflight);
  std::vector<std::unique_ptr<Chain>> chains;
  for (int i = 0; i < inflight; ++i) {
    chains.push_back(std::make_unique<Chain>());
    chains.back()->run = &run;
    chains.back()->seed = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(i + 1);
  }
  {
    absl::MutexLock lock(&run.queue_mu);
    for (auto& c : chains) run.queue.push_back(c.get());
  }
  // The driver: goes on with each chain whose answer has come (on this thread, as many as are
  // answered inline in a row).
  std::thread driver([&run] {
    while (!run.done.HasBeenNotified()) {
      Chain* next = nullptr;
      {
        absl::MutexLock lock(&run.queue_mu);
        auto ready = [&run]() { return !run.queue.empty() || run.done.HasBeenNotified(); };
        run.queue_mu.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50));
        if (run.queue.empty()) continue;
        next = run.queue.front();
        run.queue.pop_front();
      }
      Drive(*next);
    }
  });
  run.done.WaitForNotificationWithTimeout(absl::Seconds(150));
  driver.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
  absl::MutexLock lock(&run.mu);
  std::sort(run.latencies_us.begin(), run.latencies_us.end());
  auto pct = [&run](double p) -> long long {
    if (run.latencies_us.empty()) return -1;
    return run.latencies_us[std::min(run.latencies_us.size() - 1,
                                     static_cast<size_t>(p * run.latencies_us.size()))];
  };
  const int64_t total = run.allowed + run.denied + run.errors;
  const sluice::RedisStoreStats stats = (*store)->Stats();
  rusage cpu_end{};
  getrusage(RUSAGE_SELF, &cpu_end);
  auto us = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
  };
  const double cpu_us =
      us(cpu_end.ru_utime) + us(cpu_end.ru_stime) - us(cpu_begin.ru_utime) - us(cpu_begin.ru_stime);
  std::printf(
      "{\"algorithm\":\"%s\",\"dist\":\"%s\",\"inflight\":%d,\"keys\":%d,\"seconds\":%.2f,"
      "\"decisions_per_s\":%.0f,"
      "\"allowed\":%lld,\"denied\":%lld,\"errors\":%lld,\"p50_us\":%lld,\"p99_us\":%lld,"
      "\"p999_us\":%lld,\"client_cpu_us_per_decision\":%.2f,\"script_calls\":%llu,"
      "\"lease_local\":%llu,\"lease_calls\":%llu,\"lease_refills\":%llu,\"lease_exact\":%llu,\"lease_units_expired\":%llu}\n",
      algorithm.c_str(), dist.c_str(), inflight, run.keys, elapsed,
      static_cast<double>(total) / elapsed, static_cast<long long>(run.allowed.load()),
      static_cast<long long>(run.denied.load()), static_cast<long long>(run.errors.load()),
      pct(0.5), pct(0.99), pct(0.999), total > 0 ? cpu_us / static_cast<double>(total) : 0.0,
      static_cast<unsigned long long>(stats.script_calls),
      static_cast<unsigned long long>(stats.lease.local_admits + stats.lease.local_denials),
      static_cast<unsigned long long>(stats.lease.lease_calls),
      static_cast<unsigned long long>(stats.lease.refills),
      static_cast<unsigned long long>(stats.lease.exact_calls),
      static_cast<unsigned long long>(stats.lease.units_expired));
  return 0;
}
