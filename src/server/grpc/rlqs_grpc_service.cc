#include "src/server/grpc/rlqs_grpc_service.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "envoy/service/rate_limit_quota/v3/rlqs.grpc.pb.h"
#include "spdlog/spdlog.h"
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <sys/socket.h>

#include "src/server/grpc/rlqs_grpc_service_impl.h"
#include "src/server/grpc/rlqs_stream.h"
#include "src/util/log_throttle.h"
#include "src/util/sha256.h"

namespace sluice::server {

using rlqs_internal::Reports;
using rlqs_internal::Response;

namespace {

// The connection of a gRPC peer, its address and port: "ipv4:10.0.0.1:5000". A peer "fd:N" (a
// connection sluiced accepted and handed over) is named by getpeername().
std::string PeerConnection(const std::string& peer) {
  int fd = -1;
  if (peer.starts_with("fd:") && absl::SimpleAtoi(absl::string_view(peer).substr(3), &fd)) {
    sockaddr_storage address{};
    auto size = static_cast<socklen_t>(sizeof(address));
    char text[INET6_ADDRSTRLEN] = {};
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
      const bool v4 = address.ss_family == AF_INET;
      const auto* in4 = reinterpret_cast<const sockaddr_in*>(&address);
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
      const void* ip = v4 ? static_cast<const void*>(&in4->sin_addr) : &in6->sin6_addr;
      if (::inet_ntop(address.ss_family, ip, text, sizeof(text)) != nullptr) {
        return absl::StrCat(text, ":", ntohs(v4 ? in4->sin_port : in6->sin6_port));
      }
    }
  }
  return peer;
}

}  // namespace

grpc::ServerBidiReactor<Reports, Response>* RlqsGrpcService::Impl::Service::StreamRateLimitQuotas(
    grpc::CallbackServerContext* context) {
  if (!impl_.Open()) {
    ++impl_.counters.streams_refused;
    return rlqs_internal::NewRefusedRlqsStream();
  }
  // The client is the Envoy (docs/rlqs.md, "Clients"): the id its stream names in
  // kRlqsClientHeader, so that a reconnecting Envoy (after a sluiced restart, or to another
  // sluiced) replaces its own grant instead of waiting for it to expire; else its connection. Not
  // its address alone: Envoys sharing one (a host, a NAT) would share one record, each enforcing
  // the whole grant. A reconnect without the header holds its old grant until that ends (the
  // safe side). Hashed to fixed-length lowercase hex, which Redis's collation orders as bytes.
  std::string identity;
  const auto& metadata = context->client_metadata();
  if (auto it = metadata.find(kRlqsClientHeader); it != metadata.end()) {
    identity = absl::StrCat("id:", absl::string_view(it->second.data(), it->second.size()));
  } else {
    identity = absl::StrCat("conn:", PeerConnection(context->peer()));
  }
  return rlqs_internal::NewRlqsStream(impl_, Sha256Hex(identity).substr(0, 32));
}

void RlqsGrpcService::Impl::TopUpAll() {
  std::lock_guard lock(streams_mu);
  for (RlqsStream* stream : streams) rlqs_internal::MaybeTopUp(*stream);
}

RlqsGrpcService::RlqsGrpcService(RateLimitService& rls, QuotaAllocator& allocator,
                                 const RlqsGrpcServiceOptions& options)
    : impl_(std::make_unique<Impl>(rls, allocator, options)) {
  if (options.top_up_interval <= std::chrono::milliseconds::zero()) return;
  top_ups_ = std::jthread([this, interval = options.top_up_interval](std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any wake;
    std::unique_lock lock(mu);
    while (true) {
      wake.wait_for(lock, stop, interval, [] { return false; });
      if (stop.stop_requested()) return;
      impl_->TopUpAll();
    }
  });
}

RlqsGrpcService::~RlqsGrpcService() {
  top_ups_.request_stop();
  if (top_ups_.joinable()) top_ups_.join();
}

void RlqsGrpcService::TopUp() { impl_->TopUpAll(); }

grpc::Service& RlqsGrpcService::GrpcCppService() { return impl_->service; }

bool RlqsGrpcService::WaitIdle(std::chrono::milliseconds bound) {
  std::unique_lock lock(impl_->mu);
  return impl_->idle.wait_for(lock, bound, [this] { return impl_->open == 0; });
}

GrpcCallStats RlqsGrpcService::CallStats() const {
  std::lock_guard lock(impl_->mu);
  return GrpcCallStats{.in_flight = impl_->open};
}

absl::flat_hash_map<std::string, RlqsBucketState> RlqsGrpcService::Buckets() const {
  std::lock_guard lock(impl_->buckets_mu);
  return impl_->buckets;
}

RlqsStats RlqsGrpcService::Stats() const {
  const auto& c = impl_->counters;
  RlqsStats stats;
  {
    std::lock_guard lock(impl_->mu);
    stats.streams_open = impl_->open;
  }
  stats.streams_refused = c.streams_refused;
  stats.reports = c.reports;
  stats.reports_throttled = c.reports_throttled;
  stats.reports_malformed = c.reports_malformed;
  stats.buckets_assigned = c.buckets_assigned;
  stats.buckets_abandoned = c.buckets_abandoned;
  stats.allocation_errors = c.allocation_errors;
  stats.requests_allowed = c.requests_allowed;
  stats.requests_denied = c.requests_denied;
  stats.top_up_rounds = c.top_up_rounds;
  stats.buckets_topped_up = c.buckets_topped_up;
  return stats;
}

namespace {

// A Prometheus label value: backslash, quote and newline escaped.
std::string Label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string RlqsGrpcService::RenderPrometheus() const {
  const RlqsStats stats = Stats();
  std::string out;
  auto family = [&out](absl::string_view name, absl::string_view type, absl::string_view help,
                       uint64_t value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ",
                    value, "\n");
  };
  family("sluice_rlqs_streams", "gauge", "Rate limit quota streams open.", stats.streams_open);
  family("sluice_rlqs_streams_refused_total", "counter", "Streams refused past the bound.",
         stats.streams_refused);
  family("sluice_rlqs_reports_total", "counter", "Usage reports answered.", stats.reports);
  family("sluice_rlqs_reports_throttled_total", "counter",
         "Usage reports dropped past a stream's reports per second.", stats.reports_throttled);
  family("sluice_rlqs_reports_malformed_total", "counter",
         "Reports or buckets without a domain or entries.", stats.reports_malformed);
  family("sluice_rlqs_top_up_rounds_total", "counter",
         "Rounds that re-asked, between reports, for grants held below their share.",
         stats.top_up_rounds);
  family("sluice_rlqs_buckets_topped_up_total", "counter",
         "Grants raised between reports and sent unasked.", stats.buckets_topped_up);
  family("sluice_rlqs_buckets_abandoned_total", "counter",
         "Buckets answered with an AbandonAction.", stats.buckets_abandoned);
  family("sluice_rlqs_allocation_errors_total", "counter", "Buckets the store failed to share.",
         stats.allocation_errors);
  const auto buckets = Buckets();
  const std::pair<const char*, const char*> gauges[] = {
      {"sluice_rlqs_bucket_clients", "Clients holding a live grant of the rule's limit."},
      {"sluice_rlqs_bucket_demand", "Their summed demand, requests per unit of the rule."},
      {"sluice_rlqs_bucket_assigned", "Their summed live grants, requests per unit of the rule."},
      {"sluice_rlqs_bucket_limit", "The rule's limit, requests per unit."}};
  for (size_t g = 0; g < 4; ++g) {
    absl::StrAppend(&out, "# HELP ", gauges[g].first, " ", gauges[g].second, "\n# TYPE ",
                    gauges[g].first, " gauge\n");
    for (const auto& [key, b] : buckets) {
      const uint64_t values[4] = {b.clients, b.demand, b.assigned, b.limit};
      absl::StrAppend(&out, gauges[g].first, "{domain=\"", Label(b.domain), "\",bucket=\"",
                      Label(key), "\"} ", values[g], "\n");
    }
  }
  return out;
}

}  // namespace sluice::server
