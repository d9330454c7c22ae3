// CountAndFlushStore: THE PEERS' DESIGN, written in this harness only to measure it beside
// sluice's modes. It is not part of sluice and nothing outside bench/lease_error uses it.
//
// What Limitador's `redis_cached` counters, Kong's `sync_rate`, APISIX's `sync_interval` and
// Gubernator's GLOBAL behaviour have in common: each instance admits from a local limiter of the
// full limit, and every `flush_every` (100 ms) adds the units it admitted to a shared counter in
// Redis (INCRBY on a key per aligned window of the limit's period) and reads back the global
// count. Once the global count has reached the limit, the instance denies that key until the window
// ends. Between flushes, and whenever Redis cannot be reached, each instance decides alone.
//
// The local limiter runs the limit's own algorithm (a sluice MemoryStore on the harness's clock);
// the shared counter counts aligned windows whatever the algorithm, as the peers do.
//
// Example:
//   absl::StatusOr<std::unique_ptr<CountAndFlushStore>> store =
//       CountAndFlushStore::Create({.host = "127.0.0.1", .port = 6379});
//   absl::StatusOr<Decision> d = (*store)->Check("k", Limit{.limit = 10});
//
// Thread safety: thread-safe. Answers inline (AnswersInline()); one check per call (CheckAll() of
// several checks is Unimplemented).
#ifndef SLUICE_BENCH_LEASE_ERROR_COUNT_AND_FLUSH_H_
#define SLUICE_BENCH_LEASE_ERROR_COUNT_AND_FLUSH_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

#include "sluice/clock.h"
#include "sluice/memory_store.h"
#include "sluice/store.h"

struct redisContext;

namespace sluice::lease_error {

struct CountAndFlushOptions {
  // The Redis server holding the shared counters.
  std::string host = "127.0.0.1";
  int port = 6379;
  // How often the counts are flushed. Default: 100 ms (the sync interval issue 20 compares with).
  std::chrono::milliseconds flush_every{100};
  // Deadline of each flush's connect and commands; a failed flush keeps its counts for the next.
  // Default: 100 ms.
  std::chrono::milliseconds redis_timeout{100};
  // Prefix of the shared counters' keys. Default: "cf:".
  std::string key_prefix = "cf:";
  // Time for the local limiter and the windows. Not owned. REQUIRES: not null.
  Clock* clock = nullptr;
};

// Counters of one instance (values may be slightly outdated).
struct CountAndFlushStats {
  int64_t flushes = 0;         // flush rounds that reached Redis
  int64_t failed_flushes = 0;  // flush rounds that did not
  int64_t local_denials = 0;   // denials because the global count had reached the limit
};

class CountAndFlushStore final : public Store {
 public:
  static absl::StatusOr<std::unique_ptr<CountAndFlushStore>> Create(
      const CountAndFlushOptions& options);
  ~CountAndFlushStore() override;

  std::string_view Name() const override { return "count-and-flush"; }
  bool AnswersInline() const override { return true; }

  CountAndFlushStats Stats() const;

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override;

 private:
  struct KeyState {
    Limit limit{};
    int64_t window = -1;                   // the latest window this instance decided in
    int64_t blocked_window = -1;           // the window whose global count reached the limit
    std::map<int64_t, int64_t> pending{};  // window -> units admitted and not yet flushed
  };

  CountAndFlushStore(CountAndFlushOptions options, std::unique_ptr<MemoryStore> local);
  void FlushLoop();
  // One flush round: every key's pending counts (and a read of its current window's count).
  void Flush();
  bool Connect();

  const CountAndFlushOptions options_;
  std::unique_ptr<MemoryStore> local_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, KeyState> keys_ ABSL_GUARDED_BY(mu_);
  CountAndFlushStats stats_ ABSL_GUARDED_BY(mu_);
  // Used by the flush thread only.
  redisContext* redis_ = nullptr;
  absl::Notification stop_;
  std::thread flusher_;
};

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_COUNT_AND_FLUSH_H_
