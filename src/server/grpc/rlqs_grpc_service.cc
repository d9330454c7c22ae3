#include "src/server/grpc/rlqs_grpc_service.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "envoy/service/rate_limit_quota/v3/rlqs.grpc.pb.h"
#include "spdlog/spdlog.h"
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <sys/socket.h>

#include "src/server/rlqs/quota_plan.h"
#include "src/util/log_throttle.h"
#include "src/util/sha256.h"

namespace sluice::server {
namespace {

namespace rlqs = envoy::service::rate_limit_quota::v3;
using Reports = rlqs::RateLimitQuotaUsageReports;
using Response = rlqs::RateLimitQuotaResponse;
using BucketAction = Response::BucketAction;
using Strategy = envoy::type::v3::RateLimitStrategy;

// Before a bucket's first report the server has no interval to measure over: Envoy's fixed one.
constexpr std::chrono::seconds kFirstInterval{5};

void SetDuration(std::chrono::microseconds d, google::protobuf::Duration& out) {
  out.set_seconds(d.count() / 1'000'000);
  out.set_nanos(static_cast<int32_t>(d.count() % 1'000'000) * 1000);
}

}  // namespace

struct RlqsGrpcService::Impl {
  Impl(RateLimitService& rls_in, QuotaAllocator& allocator_in, const RlqsGrpcServiceOptions& o)
      : rls(rls_in),
        allocator(allocator_in),
        options(o),
        clock(o.clock != nullptr ? *o.clock : Clock::Real()),
        service(*this) {}

  // Counts a stream in; false (refused) past max_streams.
  bool Open() {
    std::lock_guard lock(mu);
    if (open >= options.max_streams) return false;
    ++open;
    return true;
  }
  // Keeps `state` as the rule's last allocation; a new rule past the bound is not kept.
  void Record(const std::string& stats_key, RlqsBucketState state) {
    std::lock_guard lock(buckets_mu);
    if (buckets.size() >= 10'000 && !buckets.contains(stats_key)) return;
    buckets[stats_key] = std::move(state);
  }
  void Close() {
    std::lock_guard lock(mu);
    --open;
    idle.notify_all();
  }

  class Service final : public rlqs::RateLimitQuotaService::CallbackService {
   public:
    explicit Service(Impl& impl) : impl_(impl) {}
    grpc::ServerBidiReactor<Reports, Response>* StreamRateLimitQuotas(
        grpc::CallbackServerContext* context) override;

   private:
    Impl& impl_;
  };

  RateLimitService& rls;
  QuotaAllocator& allocator;
  const RlqsGrpcServiceOptions options;
  Clock& clock;
  std::mutex mu;
  std::condition_variable idle;
  size_t open = 0;
  mutable std::mutex buckets_mu;
  absl::flat_hash_map<std::string, RlqsBucketState> buckets;
  struct Counters {
    std::atomic<uint64_t> streams_refused{0}, reports{0}, reports_throttled{0},
        reports_malformed{0}, buckets_assigned{0}, buckets_abandoned{0}, allocation_errors{0},
        requests_allowed{0}, requests_denied{0};
  } counters;
  // Store errors come per bucket, as many as a report has: one line a second.
  internal::LogThrottle allocation_error_log;
  Service service;
};

namespace {

// One stream: reads a report, answers it, then reads the next. Deletes itself in OnDone().
class Stream final : public grpc::ServerBidiReactor<Reports, Response> {
 public:
  Stream(RlqsGrpcService::Impl& impl, std::string client)
      : impl_(impl), client_(std::move(client)) {
    tokens_ = impl_.options.max_reports_per_second;
    refilled_ = impl_.clock.Now();
    StartRead(&report_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    Handle();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    StartRead(&report_);
  }

  void OnDone() override {
    impl_.Close();
    delete this;
  }

 private:
  struct BucketState {
    std::chrono::steady_clock::time_point last_report;
  };

  // The per-stream report budget: a token bucket of max_reports_per_second.
  bool TakeReportToken() {
    const auto now = impl_.clock.Now();
    const double rate = impl_.options.max_reports_per_second;
    tokens_ =
        std::min(rate, tokens_ + rate * std::chrono::duration<double>(now - refilled_).count());
    refilled_ = now;
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }

  void Handle() {
    auto& counters = impl_.counters;
    if (!TakeReportToken()) {
      ++counters.reports_throttled;
      StartRead(&report_);
      return;
    }
    ++counters.reports;
    if (report_.domain().empty() || report_.bucket_quota_usages().empty()) {
      ++counters.reports_malformed;
      StartRead(&report_);
      return;
    }
    std::shared_ptr<const RateLimitConfig> config = impl_.rls.config();
    const auto now = impl_.clock.Now();
    auto response = std::make_shared<Response>();
    struct Pending {
      int index;
      QuotaReport report;
      std::chrono::seconds unit;
      std::string stats_key;
    };
    std::vector<Pending> pending;
    for (const auto& usage : report_.bucket_quota_usages()) {
      counters.requests_allowed += usage.num_requests_allowed();
      counters.requests_denied += usage.num_requests_denied();
      if (usage.bucket_id().bucket().empty()) {
        ++counters.reports_malformed;  // nothing to name in an answer
        continue;
      }
      BucketAction& action = *response->add_bucket_action();
      *action.mutable_bucket_id() = usage.bucket_id();
      std::vector<std::pair<std::string, std::string>> entries(usage.bucket_id().bucket().begin(),
                                                               usage.bucket_id().bucket().end());
      std::sort(entries.begin(), entries.end());
      std::string id = report_.domain();
      for (const auto& [k, v] : entries) absl::StrAppend(&id, "\x1f", k, "=", v);
      const QuotaBucketPlan plan = config != nullptr
                                       ? PlanQuotaBucket(*config, report_.domain(), entries)
                                       : QuotaBucketPlan{};
      if (plan.kind != QuotaBucketPlan::Kind::kUnknown && impl_.options.on_usage) {
        impl_.options.on_usage(RlqsUsage{.domain = report_.domain(),
                                         .stats_key = plan.stats_key,
                                         .entries = entries,
                                         .limit = plan.limit,
                                         .unit = plan.unit,
                                         .allowed = usage.num_requests_allowed(),
                                         .denied = usage.num_requests_denied()});
      }
      auto state = buckets_.find(id);
      if (plan.kind == QuotaBucketPlan::Kind::kUnknown ||
          (state == buckets_.end() && buckets_.size() >= impl_.options.max_buckets_per_stream)) {
        ++counters.buckets_abandoned;
        action.mutable_abandon_action();
        continue;
      }
      std::optional<std::chrono::microseconds> interval;
      if (state != buckets_.end()) {
        interval = std::max<std::chrono::microseconds>(
            std::chrono::duration_cast<std::chrono::microseconds>(now - state->second.last_report),
            std::chrono::milliseconds(1));
      } else {
        state = buckets_.try_emplace(std::move(id)).first;
      }
      state->second.last_report = now;
      const std::chrono::seconds ttl = QuotaTtl(interval.value_or(kFirstInterval));
      auto& assignment = *action.mutable_quota_assignment_action();
      SetDuration(ttl, *assignment.mutable_assignment_time_to_live());
      if (plan.kind != QuotaBucketPlan::Kind::kShared) {
        assignment.mutable_rate_limit_strategy()->set_blanket_rule(
            plan.kind == QuotaBucketPlan::Kind::kAllowAll ? Strategy::ALLOW_ALL
                                                          : Strategy::DENY_ALL);
        ++counters.buckets_assigned;
        continue;
      }
      // Demand per unit over the time the server saw pass; before the first interval the client
      // is taken to want the whole limit (max-min caps it at a fair share).
      uint64_t demand = plan.limit;
      if (interval) {
        const double seen = static_cast<double>(usage.num_requests_allowed()) +
                            static_cast<double>(usage.num_requests_denied());
        const double per_unit = seen * std::chrono::duration<double>(plan.unit).count() /
                                std::chrono::duration<double>(*interval).count();
        demand = static_cast<uint64_t>(
            std::min(std::ceil(per_unit), static_cast<double>(kMaxQuotaDemand)));
      }
      pending.push_back({response->bucket_action_size() - 1,
                         QuotaReport{.bucket = plan.bucket_key,
                                     .client = client_,
                                     .demand = demand,
                                     .limit = plan.limit,
                                     .ttl = ttl},
                         plan.unit, plan.stats_key});
    }
    if (pending.empty()) {
      Answer(std::move(response));
      return;
    }
    auto left = std::make_shared<std::atomic<size_t>>(pending.size());
    for (const Pending& p : pending) {
      impl_.allocator.Allocate(p.report, [this, response, left, index = p.index, unit = p.unit,
                                          bucket = p.report.bucket, stats_key = p.stats_key,
                                          limit = p.report.limit, domain = report_.domain()](
                                             absl::StatusOr<QuotaShare> share) {
        BucketAction& action = *response->mutable_bucket_action(index);
        if (!share.ok()) {
          ++impl_.counters.allocation_errors;
          if (internal::LogPermit permit = impl_.allocation_error_log.Acquire(); permit.log) {
            spdlog::warn("rlqs: bucket {}: {}{}", bucket, share.status().ToString(),
                         internal::SuppressedNote(permit.suppressed));
          }
          // No answer for the bucket: Envoy keeps its assignment until it expires.
          action.clear_bucket_action();
        } else {
          Strategy& strategy =
              *action.mutable_quota_assignment_action()->mutable_rate_limit_strategy();
          if (share->granted == 0) {
            strategy.set_blanket_rule(Strategy::DENY_ALL);
          } else {
            auto& bucket_strategy = *strategy.mutable_token_bucket();
            bucket_strategy.set_max_tokens(static_cast<uint32_t>(share->granted));
            bucket_strategy.mutable_tokens_per_fill()->set_value(
                static_cast<uint32_t>(share->granted));
            SetDuration(unit, *bucket_strategy.mutable_fill_interval());
          }
          ++impl_.counters.buckets_assigned;
          impl_.Record(stats_key, {.domain = domain,
                                   .clients = share->clients,
                                   .demand = share->demand,
                                   .assigned = share->granted_total,
                                   .limit = limit});
          spdlog::debug("rlqs: bucket {}: clients {}, demand {}, granted {} of {} assigned", bucket,
                        share->clients, share->demand, share->granted, share->granted_total);
        }
        if (left->fetch_sub(1) == 1) Answer(response);
      });
    }
  }

  // Writes the actions that have one, or reads the next report when none has.
  void Answer(std::shared_ptr<Response> response) {
    auto& actions = *response->mutable_bucket_action();
    actions.erase(std::remove_if(actions.begin(), actions.end(),
                                 [](const BucketAction& a) {
                                   return a.bucket_action_case() ==
                                          BucketAction::BUCKET_ACTION_NOT_SET;
                                 }),
                  actions.end());
    if (actions.empty()) {
      StartRead(&report_);
      return;
    }
    response_ = std::move(response);
    StartWrite(response_.get());
  }

  RlqsGrpcService::Impl& impl_;
  const std::string client_;
  Reports report_;
  std::shared_ptr<Response> response_;
  absl::flat_hash_map<std::string, BucketState> buckets_;
  double tokens_ = 0;
  std::chrono::steady_clock::time_point refilled_;
};

// Refuses a stream past the bound at once.
class Refused final : public grpc::ServerBidiReactor<Reports, Response> {
 public:
  Refused() {
    Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "rlqs: too many streams"));
  }
  void OnDone() override { delete this; }
};

}  // namespace

namespace {

// The address of a gRPC peer without its port: "ipv4:10.0.0.1:5000" -> "ipv4:10.0.0.1". A peer
// "fd:N" (a connection sluiced accepted and handed over) is named by getpeername().
std::string PeerAddress(const std::string& peer) {
  int fd = -1;
  if (peer.starts_with("fd:") && absl::SimpleAtoi(absl::string_view(peer).substr(3), &fd)) {
    sockaddr_storage address{};
    auto size = static_cast<socklen_t>(sizeof(address));
    char text[INET6_ADDRSTRLEN] = {};
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
      const void* ip =
          address.ss_family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&address)->sin_addr)
              : &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
      if (::inet_ntop(address.ss_family, ip, text, sizeof(text)) != nullptr) return text;
    }
    return peer;
  }
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos || colon == peer.find(':') ? peer : peer.substr(0, colon);
}

}  // namespace

grpc::ServerBidiReactor<Reports, Response>* RlqsGrpcService::Impl::Service::StreamRateLimitQuotas(
    grpc::CallbackServerContext* context) {
  if (!impl_.Open()) {
    ++impl_.counters.streams_refused;
    return new Refused();
  }
  // The client is the Envoy, not the stream (docs/rlqs.md, "Clients"): the id its stream names in
  // kRlqsClientHeader, else its address. A reconnecting Envoy (after a sluiced restart, or to
  // another sluiced) then replaces its own grant instead of waiting for it to expire. Hashed to
  // fixed-length lowercase hex, which Redis's collation orders as bytes.
  std::string identity;
  const auto& metadata = context->client_metadata();
  if (auto it = metadata.find(kRlqsClientHeader); it != metadata.end()) {
    identity = absl::StrCat("id:", absl::string_view(it->second.data(), it->second.size()));
  } else {
    identity = absl::StrCat("ip:", PeerAddress(context->peer()));
  }
  return new Stream(impl_, Sha256Hex(identity).substr(0, 32));
}

RlqsGrpcService::RlqsGrpcService(RateLimitService& rls, QuotaAllocator& allocator,
                                 const RlqsGrpcServiceOptions& options)
    : impl_(std::make_unique<Impl>(rls, allocator, options)) {}

RlqsGrpcService::~RlqsGrpcService() = default;

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
