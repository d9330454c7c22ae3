#include "bench/lease_error/worker.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "bench/lease_error/count_and_flush.h"
#include "bench/lease_error/realtime_clock.h"
#include "bench/lease_error/records.h"
#include "spdlog/spdlog.h"
#include <sys/prctl.h>
#include <unistd.h>

#include "sluice/open_store.h"
#include "sluice/redis_store.h"
#include "sluice/store_url.h"

namespace sluice::lease_error {
namespace {

// An arrival this close is issued at once rather than slept for.
constexpr int64_t kSpinUs = 20;
// An arrival issued later than this after its time counts as late.
constexpr int64_t kLateUs = 2000;
// How long the pending checks may take to finish after the last arrival.
constexpr int64_t kDrainUs = 10'000'000;

// The store of the plan's mode, owning whatever it needs.
struct WorkerStore {
  OpenedStore opened;
  std::unique_ptr<CountAndFlushStore> flush;
  Store* store = nullptr;
};

absl::StatusOr<WorkerStore> OpenWorkerStore(const Plan& plan, RealtimeClock& clock) {
  WorkerStore out;
  if (plan.mode == Mode::kCountAndFlush) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(plan.url);
    if (!url.ok()) return url.status();
    absl::StatusOr<std::unique_ptr<CountAndFlushStore>> made =
        CountAndFlushStore::Create({.host = url->host,
                                    .port = url->port,
                                    .flush_every = std::chrono::milliseconds(plan.flush_us / 1000),
                                    .clock = &clock});
    if (!made.ok()) return made.status();
    out.flush = *std::move(made);
    out.store = out.flush.get();
    return out;
  }
  // exact, lease: the URL as given; memory: "memory". Both behind OpenStore()'s default failure
  // policy (errors go to the caller, here recorded as errors), on the harness's clock.
  OpenStoreOptions options{.policy = {.clock = &clock}};
  if (plan.mode != Mode::kMemory) options.startup_wait = std::chrono::seconds(5);
  absl::StatusOr<OpenedStore> opened =
      OpenStore(plan.mode == Mode::kMemory ? "memory" : plan.url, options);
  if (!opened.ok()) return opened.status();
  out.opened = *std::move(opened);
  out.store = out.opened.store.get();
  return out;
}

// How often lease mode's units held are sampled into the record file: a killed instance's last
// sample is at most this old, so it says what the kill stranded within a few units at 1000/s.
constexpr int64_t kLeaseSampleUs = 2000;

// Copies the lease store's counters into `summary` every kLeaseSampleUs until the returned thread
// is stopped (before the store goes): the parent reads the last sample of an instance it killed
// (kKillInstance).
std::jthread SampleLeases(const RedisStore& redis, WorkerSummary& summary) {
  return std::jthread([&redis, &summary](std::stop_token stop) {
    LeaseStats seen{};
    while (!stop.stop_requested()) {
      const LeaseStats now = redis.Stats().lease;
      const auto held =
          static_cast<int64_t>(now.units_granted) -
          static_cast<int64_t>(now.local_admits + now.units_expired + now.units_refunded);
      if (now.grants > seen.grants) {
        // Several grants since the last sample: their mean (one is the usual case).
        summary.lease_last_grant.store(static_cast<int64_t>(
            (now.units_granted - seen.units_granted) / (now.grants - seen.grants)));
      }
      summary.lease_held.store(std::max<int64_t>(0, held));
      summary.lease_sampled_us.store(RealtimeClock::NowMicros());
      seen = now;
      RealtimeClock::SleepUntil(RealtimeClock::NowMicros() + kLeaseSampleUs);
    }
  });
}

// What the checks in flight share with their callbacks. Lives until the process exits.
struct Run {
  RecordFile* file = nullptr;
  uint32_t instance = 0;
  std::atomic<int> inflight{0};
};

}  // namespace

int RunWorker(const Plan& plan, int instance, const std::string& records_path) {
  // The control pipe moves off stdout, which then goes where stderr goes.
  const int control = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  spdlog::set_level(spdlog::level::err);
  // Sleeps end when asked, not up to 50 us later (the default timer slack).
  prctl(PR_SET_TIMERSLACK, 1UL);

  absl::StatusOr<RecordFile> file = RecordFile::Open(records_path);
  if (!file.ok()) {
    std::cerr << "worker " << instance << ": " << file.status() << "\n";
    return 2;
  }
  static RealtimeClock clock;
  absl::StatusOr<WorkerStore> store = OpenWorkerStore(plan, clock);
  if (!store.ok()) {
    std::cerr << "worker " << instance << " (" << ModeName(plan.mode) << "): " << store.status()
              << "\n";
    return 3;
  }
  if (plan.mode == Mode::kExact || plan.mode == Mode::kLease) {
    // One peek on a key of its own loads the scripts (and connects), so that what the parent
    // measures from "ready" on is the decisions alone.
    if (absl::StatusOr<Decision> d = store->store->Check(plan.key + ":warmup", plan.limit, 0);
        !d.ok()) {
      std::cerr << "worker " << instance << ": warm-up check failed: " << d.status() << "\n";
    }
  }
  // Declared after the store: stopped (joined) before the store is destroyed.
  std::jthread sampler;
  if (plan.mode == Mode::kLease) {
    if (const auto* redis = dynamic_cast<const RedisStore*>(store->opened.backend)) {
      sampler = SampleLeases(*redis, file->summary());
    }
  }
  const std::string ready = "ready\n";
  if (write(control, ready.data(), ready.size()) != static_cast<ssize_t>(ready.size())) return 4;
  // "START FAULT_AT": the start time (epoch us) and the fault's offset from it, which the parent
  // aligns to the windows once it knows the start.
  std::string line;
  char c = 0;
  while (read(STDIN_FILENO, &c, 1) == 1 && c != '\n') {
    line.push_back(c);
  }
  close(control);
  char* rest = nullptr;
  const int64_t start_us = std::strtoll(line.c_str(), &rest, 10);
  if (start_us <= 0) return 4;
  Plan timed = plan;
  timed.fault_at_us = std::strtoll(rest, nullptr, 10);

  // Pending callbacks may outlive this function if they never complete: nothing they touch is on
  // its stack.
  static Run run;
  run.file = &*file;
  run.instance = static_cast<uint32_t>(instance);
  WorkerSummary& summary = file->summary();
  Store& target = *store->store;
  ArrivalGenerator arrivals(timed, instance);
  while (std::optional<int64_t> at = arrivals.Next()) {
    const int64_t due = start_us + *at;
    int64_t now = RealtimeClock::NowMicros();
    if (due - now > kSpinUs) {
      RealtimeClock::SleepUntil(due);
      now = RealtimeClock::NowMicros();
    }
    if (now - due > kLateUs) {
      summary.late.fetch_add(1, std::memory_order_relaxed);
      if (now - due > summary.max_late_us.load(std::memory_order_relaxed)) {
        summary.max_late_us.store(now - due, std::memory_order_relaxed);
      }
    }
    if (run.inflight.load(std::memory_order_relaxed) >= plan.inflight) {
      summary.shed.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    run.inflight.fetch_add(1, std::memory_order_relaxed);
    const int64_t send = RealtimeClock::NowMicros();
    target.CheckAsync(plan.key, plan.limit, 1, [send](absl::StatusOr<Decision> d) {
      Record r{.send_us = send, .recv_us = RealtimeClock::NowMicros(), .instance = run.instance};
      if (!d.ok()) {
        r.flags = Record::kError;
      } else {
        r.flags = (d->allowed ? Record::kAllowed : 0) | (d->from_fallback ? Record::kFallback : 0);
        r.reset_after_us = d->reset_after.count();
      }
      run.file->Append(r);
      run.inflight.fetch_sub(1, std::memory_order_release);
    });
  }
  if (timed.fault == Fault::kKillInstance && instance == 0) {
    // Its arrivals end at the kill: were it to exit on its own first, its store would give back
    // the units it holds, and the kill would strand nothing. It waits for the SIGKILL instead.
    RealtimeClock::SleepUntil(start_us + plan.duration_us + kDrainUs);
  }
  const int64_t give_up = RealtimeClock::NowMicros() + kDrainUs;
  while (run.inflight.load(std::memory_order_acquire) > 0 && RealtimeClock::NowMicros() < give_up) {
    RealtimeClock::SleepUntil(RealtimeClock::NowMicros() + 1000);
  }
  const int pending = run.inflight.load(std::memory_order_acquire);
  summary.unfinished.store(pending, std::memory_order_relaxed);
  summary.finished.store(1, std::memory_order_release);
  if (pending > 0) {
    // Checks still pending hold callbacks into the store: leave without tearing it down.
    std::fflush(nullptr);
    _exit(0);
  }
  return 0;
}

}  // namespace sluice::lease_error
