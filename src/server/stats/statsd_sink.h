// StatsdSink: sends sluiced's counters to statsd over UDP, as envoyproxy/ratelimit's stats
// library flushes them: every flush interval, each counter that changed as `name:delta|c`, its
// EXTRA_TAGS appended to the name as `.__key=value` (sorted by key; '.', ':' and '|' in values
// become '_'), lines joined into datagrams of at most 1432 bytes.
//
// The reference's library writes to statsd over TCP; sluiced uses UDP, which every statsd and
// statsd_exporter also accepts and which cannot stall the service when statsd is slow or gone.
//
// Example:
//   StatsdSink sink(metrics, StatsdSettings{.enabled = true, .host = "127.0.0.1"});
//   SLUICE_RETURN_IF_ERROR(sink.Start());  // flushes every flush_interval until Stop()
//
// Thread safety: thread-safe; `metrics` must outlive the sink.
#ifndef SLUICE_SERVER_STATS_STATSD_SINK_H_
#define SLUICE_SERVER_STATS_STATSD_SINK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/notification.h"

#include "src/server/stats/metrics.h"
#include "src/server/stats/statsd_settings.h"
#include "src/util/mutex.h"

namespace sluice::server {

class StatsdSink {
 public:
  static constexpr size_t kMaxDatagramBytes = 1432;

  StatsdSink(const Metrics& metrics, StatsdSettings settings);
  StatsdSink(const StatsdSink&) = delete;
  StatsdSink& operator=(const StatsdSink&) = delete;
  ~StatsdSink();

  // Resolves the statsd address and opens the socket; Unavailable when it cannot.
  absl::Status Open();
  // Open(), then a thread that flushes every flush interval until Stop().
  absl::Status Start();
  // Flushes once more and stops the thread. Idempotent.
  void Stop();

  // StatsdSink::Flush()
  //
  // Sends the counters that changed since the last flush; returns the number of lines sent.
  // REQUIRES: Open() succeeded.
  size_t Flush();

  // The datagrams a flush of `counters` (name, delta) would send, for tests.
  std::vector<std::string> FormatForTest(const std::vector<Metrics::Counter>& deltas) const;

 private:
  std::vector<std::string> Format(const std::vector<Metrics::Counter>& deltas) const;

  const Metrics& metrics_;
  const StatsdSettings settings_;
  std::string tag_suffix_;
  int fd_ = -1;
  internal::Mutex mu_;
  absl::flat_hash_map<std::string, uint64_t> last_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_STATS_STATSD_SINK_H_
