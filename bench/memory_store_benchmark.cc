// Benchmarks of the memory store against a naive std::unordered_map + std::mutex store, measured in
// the same run so that the ratio survives a noisy machine.
//
//   ns/decision   one hot key, and 1M distinct keys picked uniformly at random, on 1 and 2
//                 threads sharing one store (the time per decision of all threads together);
//   bytes/key     resident memory added by N keys of 13 bytes, N from 250k to 2M, each measured in
//                 a forked child so that no earlier allocation is reused.
//
// Both stores validate the input, read Clock::Real() and run DecideFixedWindow(); only the map and
// the locking differ. A summary table with the ratios and the targets closes the output; pass
// --benchmark_repetitions=N to have it use medians.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sluice/clock.h"
#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"
#include "sluice/status_macros.h"
#include "sluice/store.h"

#include "src/algorithm/algorithm.h"

namespace sluice {
namespace {

constexpr size_t kUniformKeys = 1'000'000;
constexpr std::array<size_t, 7> kMemoryKeyCounts = {250'000,   375'000,   500'000,  750'000,
                                                    1'000'000, 1'500'000, 2'000'000};

// Every check is admitted and records (the limit is never reached in a run), and windows of a
// week do not roll over during one.
constexpr Limit kLimit{.algorithm = Algorithm::kFixedWindow,
                       .limit = kMaxLimit,
                       .period = std::chrono::hours(24 * 7),
                       .burst = std::nullopt};

// The baseline: what a first implementation looks like. One mutex, node-based map, std::string
// keys, and the same validation, clock and algorithm as the memory store.
class NaiveStore final : public Store {
 public:
  std::string_view Name() const override { return "naive"; }
  bool AnswersInline() const override { return true; }

 protected:
  // The store's conveniences validate the input, as they do for the memory store.
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    if (checks.size() != 1) {
      std::move(done)(absl::UnimplementedError("naive store: CheckAll"));
      return;
    }
    const LimitCheck& check = checks[0];
    const int64_t now_us = Clock::Real().EpochNow().count();
    Decision decision;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Entry& entry = entries_[check.key];
      if (entry.expiry_us <= now_us) entry.state = {};
      decision = algorithm::DecideFixedWindow(check.limit, entry.state, now_us, check.cost);
      if (decision.allowed && check.cost > 0) {
        entry.expiry_us = now_us + decision.reset_after.count();
      }
    }
    std::move(done)(MultiDecision{.allowed = decision.allowed, .decisions = {decision}});
  }

 private:
  struct Entry {
    algorithm::FixedWindowState state;
    int64_t expiry_us = 0;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

// --shards=N: the memory store's shard count; 0 keeps MemoryStoreOptions' default.
size_t g_shards = 0;

std::unique_ptr<Store> NewSluiceStore() {
  MemoryStoreOptions options;
  if (g_shards > 0) options.shards = g_shards;
  absl::StatusOr<std::unique_ptr<MemoryStore>> store = MemoryStore::Create(options);
  if (!store.ok()) {
    std::fprintf(stderr, "MemoryStore::Create: %s\n", store.status().ToString().c_str());
    std::abort();
  }
  return *std::move(store);
}

std::unique_ptr<Store> NewStore(std::string_view kind) {
  if (kind == "naive") return std::make_unique<NaiveStore>();
  return NewSluiceStore();
}

using KeyBuffer = std::array<char, 16>;

// Writes "user:" and 8 hex digits of `index` to `buf` (13 bytes, inline in a slot).
std::string_view FormatKey(uint32_t index, KeyBuffer& buf) {
  constexpr std::string_view kPrefix = "user:";
  constexpr std::string_view kHex = "0123456789abcdef";
  std::copy(kPrefix.begin(), kPrefix.end(), buf.begin());
  for (size_t d = 8; d-- > 0;) {
    buf[kPrefix.size() + d] = kHex[index & 15];
    index >>= 4;
  }
  return {buf.data(), kPrefix.size() + 8};
}

// xorshift64*: a cheap per-thread uniform source, so the loop measures the store, not the RNG.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint32_t Below(uint32_t n) {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return static_cast<uint32_t>(((state_ * 0x2545f4914f6cdd1dull) >> 32) * n >> 32);
  }

 private:
  uint64_t state_;
};

void Fill(Store& store, size_t keys) {
  KeyBuffer buf{};
  for (size_t i = 0; i < keys; ++i) {
    benchmark::DoNotOptimize(store.Check(FormatKey(static_cast<uint32_t>(i), buf), kLimit, 1));
  }
}

void SetPerDecision(benchmark::State& state) {
  // Summed over threads and inverted: the wall time per decision of all threads together.
  state.counters["per_decision"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The clock read alone, which both stores pay on every decision.
void ClockReadBenchmark(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Clock::Real().EpochNow());
  SetPerDecision(state);
}

void HotKeyBenchmark(benchmark::State& state, Store* store) {
  for (auto _ : state) benchmark::DoNotOptimize(store->Check("hot", kLimit, 1));
  SetPerDecision(state);
}

// A store and the flag that says it has been filled with kUniformKeys keys.
struct UniformStore {
  std::unique_ptr<Store> store;
  std::once_flag filled{};
};

void UniformKeysBenchmark(benchmark::State& state, UniformStore* uniform) {
  // Filled on first use, so that a --benchmark_filter without it skips the work. The other
  // threads wait at the loop's start barrier meanwhile.
  if (state.thread_index() == 0) {
    std::call_once(uniform->filled, Fill, *uniform->store, kUniformKeys);
  }
  Store* store = uniform->store.get();
  Rng rng(static_cast<uint64_t>(state.thread_index()) + 1);
  KeyBuffer buf{};
  for (auto _ : state) {
    const std::string_view key = FormatKey(rng.Below(kUniformKeys), buf);
    benchmark::DoNotOptimize(store->Check(key, kLimit, 1));
  }
  SetPerDecision(state);
}

size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size_pages = 0;
  size_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Returns the resident bytes per key that `keys` keys add to a new store of `kind`, measured in a
// forked child: a fresh heap, so nothing freed earlier is reused and hides growth.
double MeasureBytesPerKey(std::string_view kind, size_t keys) {
  std::array<int, 2> fds{};
  if (pipe(fds.data()) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const size_t before = ResidentBytes();
    std::unique_ptr<Store> store = NewStore(kind);
    Fill(*store, keys);
    const double per_key =
        static_cast<double>(ResidentBytes() - before) / static_cast<double>(keys);
    const ssize_t written = write(fds[1], &per_key, sizeof(per_key));
    _exit(written == sizeof(per_key) ? 0 : 1);  // Skips teardown: only the number matters.
  }
  close(fds[1]);
  double per_key = -1;
  if (read(fds[0], &per_key, sizeof(per_key)) != sizeof(per_key)) per_key = -1;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return per_key;
}

// Keeps the console output and remembers the time per decision of each run (the median when
// there are repetitions).
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.error_occurred || (run.run_type == Run::RT_Aggregate && !median)) continue;
      const auto counter = run.counters.find("per_decision");
      if (counter == run.counters.end()) continue;
      const std::string name = run.run_name.str();
      if (median || !medians_.contains(name)) ns_[name] = counter->second.value * 1e9;
      if (median) medians_[name] = true;
    }
  }

  // Returns the time per decision of `name` in ns, or -1 when it did not run.
  double Ns(const std::string& name) const {
    const auto it = ns_.find(name);
    return it == ns_.end() ? -1 : it->second;
  }

 private:
  std::map<std::string, double> ns_;
  std::map<std::string, bool> medians_;
};

void PrintRow(const char* what, double sluice, double naive, const char* unit, double target) {
  std::printf("%-30s %10.1f %10.1f %7.2f", what, sluice, naive, naive > 0 ? sluice / naive : 0.0);
  if (target > 0) {
    std::printf("   <= %-4.0f %-3s  %s\n", target, unit,
                sluice >= 0 && sluice <= target ? "met" : "NOT MET");
  } else {
    std::printf("   (no target)\n");
  }
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  using namespace sluice;  // NOLINT(google-build-using-namespace): a benchmark main.
  // Our flags, taken out before Google Benchmark sees the rest: --skip_memory leaves out the
  // bytes/key measurement (for profiling), --shards=N sets the memory store's shard count.
  bool skip_memory = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--skip_memory") {
      skip_memory = true;
    } else if (arg.starts_with("--shards=")) {
      g_shards = static_cast<size_t>(std::strtoul(argv[i] + 9, nullptr, 10));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  // Memory first, before this process holds any store.
  std::vector<std::pair<double, double>> bytes_per_key;
  for (const size_t keys : kMemoryKeyCounts) {
    if (skip_memory) break;
    bytes_per_key.emplace_back(MeasureBytesPerKey("sluice", keys),
                               MeasureBytesPerKey("naive", keys));
  }

  std::unique_ptr<Store> sluice_hot = NewStore("sluice");
  std::unique_ptr<Store> naive_hot = NewStore("naive");
  UniformStore sluice_uniform{.store = NewStore("sluice")};
  UniformStore naive_uniform{.store = NewStore("naive")};
  for (const auto& [name, store] : {std::pair{"hot_key/sluice", sluice_hot.get()},
                                    std::pair{"hot_key/naive", naive_hot.get()}}) {
    benchmark::RegisterBenchmark(name, HotKeyBenchmark, store)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  }
  for (const auto& [name, store] : {std::pair{"uniform_1M/sluice", &sluice_uniform},
                                    std::pair{"uniform_1M/naive", &naive_uniform}}) {
    benchmark::RegisterBenchmark(name, UniformKeysBenchmark, store)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("clock_read", ClockReadBenchmark)->UseRealTime();
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf(
      "\nMemory store (%s shards) vs naive std::unordered_map + std::mutex, same run (%ld cores)\n",
      g_shards > 0 ? std::to_string(g_shards).c_str() : "default", sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("%-30s %10s %10s %7s   %s\n", "case", "sluice", "naive", "ratio", "target");
  for (const int threads : {1, 2}) {
    const std::string suffix = "/real_time/threads:" + std::to_string(threads);
    const std::string hot = "hot key, " + std::to_string(threads) + " thread(s), ns";
    const std::string uniform = "1M keys uniform, " + std::to_string(threads) + " thread(s), ns";
    PrintRow(hot.c_str(), reporter.Ns("hot_key/sluice" + suffix),
             reporter.Ns("hot_key/naive" + suffix), "ns", threads == 1 ? 60 : 0);
    PrintRow(uniform.c_str(), reporter.Ns("uniform_1M/sluice" + suffix),
             reporter.Ns("uniform_1M/naive" + suffix), "ns", threads == 1 ? 300 : 0);
  }
  std::printf("%-30s %10.1f   (paid by both stores on every decision)\n", "clock read alone, ns",
              reporter.Ns("clock_read/real_time"));
  for (size_t i = 0; i < bytes_per_key.size(); ++i) {
    const std::string what = "bytes/key at " + std::to_string(kMemoryKeyCounts[i] / 1000) + "k";
    PrintRow(what.c_str(), bytes_per_key[i].first, bytes_per_key[i].second, "B", 80);
  }
  return 0;
}
