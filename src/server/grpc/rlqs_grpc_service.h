// RlqsGrpcService: envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas,
// the Rate Limit Quota Service as a GrpcService (grpc_service.h), beside the rate limit service on
// the same listener (docs/rlqs.md).
//
// Each stream is one Envoy's stream for a domain; the client it reports as is the Envoy
// (kRlqsClientHeader, else its connection), so a reconnect replaces its own grant. Each report's
// buckets are mapped to rules (quota_plan.h), their demand measured with the server's clock, their
// shares asked of the QuotaAllocator, and one response answers every bucket of the report: a token
// bucket, a blanket rule, or an AbandonAction for a bucket no rule matches. A grant held below
// the client's share by the other clients' grants is asked for again every top_up_interval, and
// sent as soon as it rises, unasked (docs/rlqs.md, "Top-ups"). A stream reads its next report only
// once the previous one is answered. Bounds: streams in flight, buckets tracked per
// stream (more are abandoned), and reports per second per stream (past it a report is dropped
// unanswered and counted: Envoy keeps its assignments and reports again). A malformed report, an
// unknown domain or an oversized bucket is answered, never a closed stream.
//
// gRPC C++ engine only: the nghttp2 engine (h2/) serves unary methods, and a bidirectional
// stream would need a streaming path there (docs/rlqs.md, "Engines").
//
// Thread safety: thread-safe.
#ifndef SLUICE_SERVER_GRPC_RLQS_GRPC_SERVICE_H_
#define SLUICE_SERVER_GRPC_RLQS_GRPC_SERVICE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/container/flat_hash_map.h"

#include "sluice/clock.h"

#include "src/server/grpc/grpc_service.h"
#include "src/server/observe/gauge_source.h"
#include "src/server/observe/process_observer.h"
#include "src/server/rlqs/quota_allocator.h"
#include "src/server/rls/rate_limit_service.h"

namespace sluice::server {

// The stream metadata that names a client (docs/rlqs.md, "Clients"): Envoys that share an
// address set it (GrpcService.initial_metadata) to tell themselves apart.
inline constexpr char kRlqsClientHeader[] = "x-sluice-rlqs-client";

// One reported bucket that matched a rule, as RlqsGrpcServiceOptions::on_usage sees it: the
// process's quota usage event (src/server/observe/process_observer.h). Views the report: valid
// during the call only.
using RlqsUsage = QuotaUsageReport;

struct RlqsGrpcServiceOptions {
  // Streams open at once; more are refused RESOURCE_EXHAUSTED. Default: 10,000.
  size_t max_streams = 10'000;
  // Distinct buckets a stream may report; reports of more are abandoned. Default: 1,000.
  size_t max_buckets_per_stream = 1'000;
  // Reports per second a stream may send (a burst of as many); the others are dropped and
  // counted. Default: 10 (Envoy sends one per 5 s).
  uint32_t max_reports_per_second = 10;
  // How often grants held below their share (by other clients' grants, not yet shrunk) are asked
  // for again between reports; a raised grant is sent at once (docs/rlqs.md, "Top-ups"). Zero:
  // only when TopUp() is called. Default: 1 s.
  std::chrono::milliseconds top_up_interval{1000};
  // Clock of demand measurement and of the report budget. Not owned. Default: Clock::Real().
  Clock* clock = nullptr;
  // Called with each reported bucket that matched a rule, so that the requests the client allowed
  // and denied reach the process's observers (ProcessObserver::OnQuotaUsage(): the counters and
  // the dashboard RLS decisions feed). Must be quick and thread-safe. Default: none.
  std::function<void(const RlqsUsage& usage)> on_usage{};
};

// The last allocation seen per rule (stats key), for /metrics.
struct RlqsBucketState {
  std::string domain;
  uint64_t clients = 0;
  uint64_t demand = 0;
  uint64_t assigned = 0;
  uint64_t limit = 0;
};

// Counters of the service (values may be slightly outdated).
struct RlqsStats {
  uint64_t streams_open = 0;
  uint64_t streams_refused = 0;
  uint64_t reports = 0;
  uint64_t reports_throttled = 0;
  uint64_t reports_malformed = 0;
  uint64_t buckets_assigned = 0;
  uint64_t buckets_abandoned = 0;
  uint64_t allocation_errors = 0;
  // The requests the clients reported allowed and denied.
  uint64_t requests_allowed = 0;
  uint64_t requests_denied = 0;
  // Top-up rounds run, and the grants they raised and sent.
  uint64_t top_up_rounds = 0;
  uint64_t buckets_topped_up = 0;
};

class RlqsGrpcService final : public GrpcService, public GaugeSource {
 public:
  // `rls` (for its current config) and `allocator` must outlive this object.
  RlqsGrpcService(RateLimitService& rls, QuotaAllocator& allocator,
                  const RlqsGrpcServiceOptions& options);
  RlqsGrpcService(const RlqsGrpcService&) = delete;
  RlqsGrpcService& operator=(const RlqsGrpcService&) = delete;
  ~RlqsGrpcService() override;

  std::string_view health_name() const override { return ""; }
  grpc::Service& GrpcCppService() override;
  // None: the nghttp2 engine serves unary methods only.
  void AddH2Methods(absl::flat_hash_map<std::string, h2::UnaryMethod>&) override {}
  bool WaitIdle(std::chrono::milliseconds bound) override;
  GrpcCallStats CallStats() const override;
  RlqsStats Stats() const;
  // Runs one top-up pass now: every idle stream re-asks for its grants held below their share
  // and sends those that rose. The service runs one every top_up_interval.
  void TopUp();
  // Per rule (stats key; at most 10,000): the last allocation's clients, summed demand and summed
  // live grants, per unit of the rule.
  absl::flat_hash_map<std::string, RlqsBucketState> Buckets() const;
  // The service's families in the Prometheus text format.
  std::string RenderPrometheus() const;
  // GaugeSource: RenderPrometheus(), at each scrape of /metrics.
  void AppendPrometheus(std::string& out) const override { out += RenderPrometheus(); }

  // The service's state, shared with its streams (rlqs_grpc_service_impl.h).
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::jthread top_ups_;  // runs TopUp() every top_up_interval
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_RLQS_GRPC_SERVICE_H_
