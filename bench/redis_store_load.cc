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
#include <iostream>
#include <memory>
#include <random>
#include <string>
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
  std::atomic<int> outstanding{0};
  std::atomic<int64_t> allowed{0};
  std::atomic<int64_t> denied{0};
  std::atomic<int64_t> errors{0};
  absl::Mutex mu;
  std::vector<int64_t> latencies_us ABSL_GUARDED_BY(mu);
  absl::Notification done;
};

void Issue(Run& run, uint64_t seed) {
  const std::string key = "bench:k" + std::to_string(seed % static_cast<uint64_t>(run.keys));
  const auto start = Clock::now();
  run.store->CheckAsync(key, run.limit, 1, [&run, start, seed](absl::StatusOr<sluice::Decision> d) {
    const auto now = Clock::now();
    {
      absl::MutexLock lock(&run.mu);
      run.latencies_us.push_back(
          std::chrono::duration_cast<std::chrono::microseconds>(now - start).count());
    }
    if (!d.ok()) {
      run.errors.fetch_add(1);
    } else if (d->allowed) {
      run.allowed.fetch_add(1);
    } else {
      run.denied.fetch_add(1);
    }
    if (now < run.stop) {
      // A cheap LCG step: key choice must cost nothing next to a round trip.
      Issue(run, seed * 6364136223846793005ULL + 1442695040888963407ULL);
      return;
    }
    if (run.outstanding.fetch_sub(1) == 1) run.done.Notify();
  });
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "redis://127.0.0.1:6390";
  std::string algorithm = "fixed_window";
  int inflight = 50;
  int seconds = 10;
  int keys = 10000;
  bool print_script = false;
  bool evalsha = false;
  CLI::App app{"redis_store_load: RedisStore decisions per second"};
  app.add_option("--url", url)->capture_default_str();
  app.add_option("--algorithm", algorithm)->capture_default_str();
  app.add_option("--inflight", inflight)->capture_default_str();
  app.add_option("--seconds", seconds)->capture_default_str();
  app.add_option("--keys", keys)->capture_default_str();
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
  const int64_t quota = *algo == sluice::Algorithm::kSlidingLog ? 100'000 : 10'000'000;
  run.limit = sluice::Limit{.algorithm = *algo, .limit = quota, .period = std::chrono::seconds(60)};
  run.keys = std::max(1, keys);
  inflight = std::clamp(inflight, 1, 4096);
  rusage cpu_begin{};
  getrusage(RUSAGE_SELF, &cpu_begin);
  const auto begin = Clock::now();
  run.stop = begin + std::chrono::seconds(std::clamp(seconds, 1, 120));
  run.outstanding.store(inflight);
  for (int i = 0; i < inflight; ++i) Issue(run, 0x9e3779b97f4a7c15ULL * (i + 1));
  run.done.WaitForNotificationWithTimeout(absl::Seconds(150));
  const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
  absl::MutexLock lock(&run.mu);
  std::sort(run.latencies_us.begin(), run.latencies_us.end());
  auto pct = [&run](double p) -> long long {
    if (run.latencies_us.empty()) return -1;
    return run.latencies_us[std::min(run.latencies_us.size() - 1,
                                     static_cast<size_t>(p * run.latencies_us.size()))];
  };
  const int64_t total = run.allowed + run.denied + run.errors;
  rusage cpu_end{};
  getrusage(RUSAGE_SELF, &cpu_end);
  auto us = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
  };
  const double cpu_us =
      us(cpu_end.ru_utime) + us(cpu_end.ru_stime) - us(cpu_begin.ru_utime) - us(cpu_begin.ru_stime);
  std::printf(
      "{\"algorithm\":\"%s\",\"inflight\":%d,\"keys\":%d,\"seconds\":%.2f,\"decisions_per_s\":%.0f,"
      "\"allowed\":%lld,\"denied\":%lld,\"errors\":%lld,\"p50_us\":%lld,\"p99_us\":%lld,"
      "\"p999_us\":%lld,\"client_cpu_us_per_decision\":%.1f}\n",
      algorithm.c_str(), inflight, run.keys, elapsed, static_cast<double>(total) / elapsed,
      static_cast<long long>(run.allowed.load()), static_cast<long long>(run.denied.load()),
      static_cast<long long>(run.errors.load()), pct(0.5), pct(0.99), pct(0.999),
      total > 0 ? cpu_us / static_cast<double>(total) : 0.0);
  return 0;
}
