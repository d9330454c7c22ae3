// Dashboard: what sluiced's live page (GET /dashboard) shows, counted as the service decides:
// per domain, decisions, over-limit decisions and store errors per second over the last minutes;
// the descriptors most often over their limit and the busiest callers over the last minute, from
// bounded heavy-hitter tables (space_saving.h); decision latency percentiles; the config's loads;
// and the store's state, read at each feed from the source the process sets.
//
// It is one of the process's observers (src/server/observe/process_observer.h), beside the
// metrics: it hears decisions, RLQS usage reports and config loads. Reports go to one of a
// few shards, picked per thread, each under its own lock, so that threads do not contend; a
// report allocates nothing except the first time a shard sees a domain. Memory is bounded
// whatever the traffic: max_domains domains per shard (the rest counted under "(other)"), and
// heavy-hitter tables of fixed size with keys cut to max_key_bytes.
//
// "Caller": a request carries no caller identity, so the caller is the first decided descriptor
// of each request (its keys and values), e.g. remote_address=10.0.0.1.
//
// Example:
//   Dashboard dashboard(Clock::Real(), DashboardOptions{});
//   ObserverList observers({&metrics, &dashboard});
//   std::string feed = dashboard.FeedJson("");  // the JSON that /dashboard/feed.json serves
//
// Thread safety: thread-safe.
#ifndef SLUICE_SERVER_DASHBOARD_DASHBOARD_H_
#define SLUICE_SERVER_DASHBOARD_DASHBOARD_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/clock.h"

#include "src/server/observe/process_observer.h"
#include "src/server/observe/store_state.h"
#include "src/util/mutex.h"

namespace sluice::server {

struct DashboardOptions {
  // Shards, each with its own lock and tables. Default: 4.
  size_t shards = 4;
  // Seconds of per-domain history. Default: 300.
  size_t history_seconds = 300;
  // Domains tracked per shard; later ones count as "(other)". Default: 32.
  size_t max_domains = 32;
  // Counters of each heavy-hitter table (one per shard and window). Default: 128.
  size_t top_capacity = 128;
  // Keys (descriptors) are cut to this many bytes. Default: 160.
  size_t max_key_bytes = 160;
  // The heavy hitters cover the current and the previous window: between one and two windows.
  // Default: 30 s, so the tables cover the last 30 to 60 s.
  std::chrono::seconds window{30};
  // Rows in the feed's list of descriptors over their limit. Default: 20.
  size_t top_rows = 20;
  // Rows in the feed's list of callers. Default: 10.
  size_t top_caller_rows = 10;
  // The callers' table counts one decision in this many, chosen at random, with this weight:
  // with many distinct callers nearly every count replaces a counter, which costs more than
  // the rest of a report, and the heavy callers stand out as well from a sample. 1 counts all.
  // Default: 8.
  uint32_t caller_sample_every = 8;
};

// The config's state, as the process reports it.
struct DashboardConfigState {
  std::string origin{};
  // Configs loaded since start (1 after the first); the feed calls it the version.
  uint64_t loads = 0;
  uint64_t load_errors = 0;
  // The last refused config's error; empty when none.
  std::string last_error{};
  int64_t last_error_ms = 0;
};

class Dashboard final : public ProcessObserver {
 public:
  // The feed's format version; bumped on any incompatible change (docs/sluiced.md, "Dashboard").
  static constexpr int kFeedVersion = 1;

  Dashboard(Clock& clock, DashboardOptions options);
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;
  ~Dashboard() override;

  void OnInvalidRequest() override;
  void OnUnknownDomain(std::string_view domain, uint64_t descriptors) override;
  void OnStoreError(std::string_view domain, std::chrono::microseconds latency) override;
  void OnDecision(const RlsDecisionReport& report) override;

  // An RLQS report of a bucket: the requests an Envoy allowed and denied since its previous
  // report, against the matched rule's limit. Counted in the second it arrives, as decisions and
  // over-limit decisions; the bucket is listed over its limit with weight `denied` and among the
  // callers with weight `allowed + denied`, under the key "rlqs" + its entries, as an RLS
  // descriptor would be.
  void OnQuotaUsage(const QuotaUsageReport& usage) override;

  // A config was served, or refused with its error.
  void OnConfigLoad(const ConfigLoadReport& load) override;

  // Where the store's state comes from; read on each feed. Default: none (no store section).
  // REQUIRES: `source` outlives its use (set nullptr before it goes).
  void SetStoreStateSource(const StoreStateSource* source);

  // Dashboard::FeedJson()
  //
  // Returns the feed (version kFeedVersion) as JSON; with a non-empty `domain`, the series and top
  // lists of that domain only.
  std::string FeedJson(std::string_view domain) const;

  // Bytes the tables hold (fixed at construction, plus the domains' names).
  size_t MemoryBytes() const;

 private:
  struct Shard;
  Shard& ShardForThisThread() const;
  int64_t NowMs() const;

  Clock& clock_;
  const DashboardOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
  mutable internal::Mutex mu_;
  DashboardConfigState config_ ABSL_GUARDED_BY(mu_);
  const StoreStateSource* store_source_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_DASHBOARD_DASHBOARD_H_
