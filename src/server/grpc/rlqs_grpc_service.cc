#include "src/server/grpc/rlqs_grpc_service.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
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

class Stream;

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
  // The streams a top-up pass visits (TopUpAll()). Unregister() waits for a pass in progress.
  void Register(Stream* stream) {
    std::lock_guard lock(streams_mu);
    streams.insert(stream);
  }
  void Unregister(Stream* stream) {
    std::lock_guard lock(streams_mu);
    streams.erase(stream);
  }
  void TopUpAll();

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
  std::mutex streams_mu;
  absl::flat_hash_set<Stream*> streams;
  struct Counters {
    std::atomic<uint64_t> streams_refused{0}, reports{0}, reports_throttled{0},
        reports_malformed{0}, buckets_assigned{0}, buckets_abandoned{0}, allocation_errors{0},
        requests_allowed{0}, requests_denied{0}, top_up_rounds{0}, buckets_topped_up{0};
  } counters;
  // Store errors come per bucket, as many as a report has: one line a second.
  internal::LogThrottle allocation_error_log;
  Service service;
};

namespace {

// One stream. Reports and top-ups run as rounds, one at a time: a round asks the allocator for
// a share per bucket and, once every answer is in, writes one response. A report is answered
// whole; a top-up round (RlqsGrpcService::TopUp()) re-asks, with top_up set, for the buckets
// whose last share was held below what the client wanted, and writes only the grants it raised.
// The next report is read once the previous one's answer is written. Responses are written one at
// a time from a queue. Deletes itself once gRPC is done with it (OnDone()) and no round is in
// flight.
class Stream final : public grpc::ServerBidiReactor<Reports, Response> {
 public:
  Stream(RlqsGrpcService::Impl& impl, std::string client)
      : impl_(impl), client_(std::move(client)) {
    tokens_ = impl_.options.max_reports_per_second;
    refilled_ = impl_.clock.Now();
    impl_.Register(this);
    StartRead(&report_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      FinishOnce();
      return;
    }
    {
      std::lock_guard lock(mu_);
      if (busy_) {
        report_waiting_ = true;  // Handle()d when the top-up round ends
        return;
      }
      busy_ = true;
    }
    Handle();
  }

  void OnWriteDone(bool ok) override {
    Outgoing written;
    Response* next = nullptr;
    {
      std::lock_guard lock(mu_);
      written = std::move(outgoing_.front());
      outgoing_.pop_front();
      if (ok && !finishing_ && !outgoing_.empty()) {
        next = outgoing_.front().response.get();
      } else {
        writing_ = false;
      }
    }
    if (!ok) {
      FinishOnce();
      return;
    }
    if (next != nullptr) StartWrite(next);
    if (written.answers_report) ReadNext();
  }

  void OnDone() override {
    impl_.Unregister(this);
    {
      std::lock_guard lock(mu_);
      done_ = true;
      if (busy_) return;  // the round's end deletes the stream
    }
    Destroy();
  }

  // Starts a top-up round if a bucket's grant is held below its share and the stream is idle.
  // Called by the service (under its registry lock, so OnDone() waits for this to return).
  void MaybeTopUp() {
    std::vector<Ask> asks;
    {
      std::lock_guard lock(mu_);
      // At most the write in flight ahead of a top-up: a client that stops reading is not queued
      // more.
      if (busy_ || finishing_ || outgoing_.size() > 1) return;
      const std::shared_ptr<const RateLimitConfig> config = impl_.rls.config();
      std::lock_guard buckets_lock(buckets_mu_);
      for (auto& [id, state] : buckets_) {
        if (!state.top_up) continue;
        if (state.top_up->config.lock() != config) {
          state.top_up.reset();  // reloaded: the next report plans the bucket again
          continue;
        }
        asks.push_back(Ask{.index = -1,
                           .id = id,
                           .report = state.top_up->report,
                           .unit = state.top_up->unit,
                           .stats_key = state.top_up->stats_key,
                           .domain = state.top_up->domain,
                           .bucket_id = {},
                           .config = {}});
      }
      if (asks.empty()) return;
      busy_ = true;
    }
    ++impl_.counters.top_up_rounds;
    RunRound(std::move(asks), nullptr);
  }

 private:
  // Kept for a bucket whose last share was below what the client wanted.
  struct TopUp {
    QuotaReport report;  // top_up set
    rlqs::BucketId bucket_id;
    std::chrono::seconds unit{1};
    std::string stats_key;
    std::string domain;
    // The config the report was planned with: a top-up after a reload would share the old limit.
    std::weak_ptr<const RateLimitConfig> config;
  };
  struct BucketState {
    std::chrono::steady_clock::time_point last_report;
    uint64_t granted = 0;  // the grant last sent
    std::optional<TopUp> top_up;
  };
  // One bucket's question to the allocator in a round. `index` is its action in a report's
  // response; -1 in a top-up round.
  struct Ask {
    int index = -1;
    std::string id;
    QuotaReport report;
    std::chrono::seconds unit{1};
    std::string stats_key;
    std::string domain;
    rlqs::BucketId bucket_id;                     // a report's, kept for top-ups
    std::weak_ptr<const RateLimitConfig> config;  // a report's
    absl::StatusOr<QuotaShare> share = absl::UnknownError("unanswered");
  };
  struct Outgoing {
    std::shared_ptr<Response> response;
    bool answers_report = false;
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

  // A report round: maps each bucket of report_ to a rule and asks for the shared ones.
  void Handle() {
    auto& counters = impl_.counters;
    if (!TakeReportToken()) {
      ++counters.reports_throttled;
      EndRound(/*read_next=*/true);
      return;
    }
    ++counters.reports;
    if (report_.domain().empty() || report_.bucket_quota_usages().empty()) {
      ++counters.reports_malformed;
      EndRound(/*read_next=*/true);
      return;
    }
    std::shared_ptr<const RateLimitConfig> config = impl_.rls.config();
    const auto now = impl_.clock.Now();
    auto response = std::make_shared<Response>();
    std::vector<Ask> asks;
    std::unique_lock buckets_lock(buckets_mu_);
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
      std::string id = QuotaBucketName(report_.domain(), entries);
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
        if (state != buckets_.end()) buckets_.erase(state);
        continue;
      }
      std::optional<std::chrono::microseconds> interval;
      if (state != buckets_.end()) {
        interval = std::max<std::chrono::microseconds>(
            std::chrono::duration_cast<std::chrono::microseconds>(now - state->second.last_report),
            std::chrono::milliseconds(1));
      } else {
        state = buckets_.try_emplace(id).first;
      }
      state->second.last_report = now;
      state->second.top_up.reset();  // this report supersedes it
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
      asks.push_back(Ask{.index = response->bucket_action_size() - 1,
                         .id = std::move(id),
                         .report = QuotaReport{.bucket = plan.bucket_key,
                                               .client = client_,
                                               .demand = demand,
                                               .limit = plan.limit,
                                               .ttl = ttl},
                         .unit = plan.unit,
                         .stats_key = plan.stats_key,
                         .domain = report_.domain(),
                         .bucket_id = usage.bucket_id(),
                         .config = config});
    }
    buckets_lock.unlock();
    if (asks.empty()) {
      if (response->bucket_action_size() == 0) {
        EndRound(/*read_next=*/true);
      } else {
        EndRound(/*read_next=*/false, std::move(response), /*answers_report=*/true);
      }
      return;
    }
    RunRound(std::move(asks), std::move(response));
  }

  // Asks the allocator for every ask's share, then ends the round in the last answer's thread.
  // `response` is the report's (nullptr: a top-up round).
  void RunRound(std::vector<Ask> asks, std::shared_ptr<Response> response) {
    auto round = std::make_shared<std::vector<Ask>>(std::move(asks));
    auto left = std::make_shared<std::atomic<size_t>>(round->size());
    for (Ask& ask : *round) {
      impl_.allocator.Allocate(
          ask.report, [this, round, left, response, &ask](absl::StatusOr<QuotaShare> share) {
            ask.share = std::move(share);
            if (left->fetch_sub(1) == 1) EndAllocation(*round, response);
          });
    }
  }

  // Turns a round's shares into actions, remembers what was granted and what to top up, and
  // writes the response (a top-up round's only if a grant rose).
  void EndAllocation(std::vector<Ask>& asks, std::shared_ptr<Response> response) {
    const bool top_up = response == nullptr;
    if (top_up) response = std::make_shared<Response>();
    {
      std::lock_guard lock(buckets_mu_);
      for (Ask& ask : asks) {
        auto state = buckets_.find(ask.id);
        if (!ask.share.ok()) {
          ++impl_.counters.allocation_errors;
          if (internal::LogPermit permit = impl_.allocation_error_log.Acquire(); permit.log) {
            spdlog::warn("rlqs: bucket {}: {}{}", ask.report.bucket, ask.share.status().ToString(),
                         internal::SuppressedNote(permit.suppressed));
          }
          // No answer for the bucket: Envoy keeps its assignment until it expires.
          if (!top_up) response->mutable_bucket_action(ask.index)->clear_bucket_action();
          continue;
        }
        const QuotaShare& share = *ask.share;
        impl_.Record(ask.stats_key, {.domain = ask.domain,
                                     .clients = share.clients,
                                     .demand = share.demand,
                                     .assigned = share.granted_total,
                                     .limit = ask.report.limit});
        if (state == buckets_.end()) continue;  // abandoned since
        BucketState& bucket = state->second;
        if (top_up && !bucket.top_up) continue;
        const bool send = !top_up || share.granted > bucket.granted;
        if (share.granted < share.wanted && !bucket.top_up) {
          QuotaReport again = ask.report;
          again.top_up = true;
          bucket.top_up = TopUp{.report = std::move(again),
                                .bucket_id = std::move(ask.bucket_id),
                                .unit = ask.unit,
                                .stats_key = ask.stats_key,
                                .domain = ask.domain,
                                .config = ask.config};
        }
        BucketAction* action = nullptr;
        if (top_up && send) {
          action = response->add_bucket_action();
          *action->mutable_bucket_id() = bucket.top_up->bucket_id;
          SetDuration(
              ask.report.ttl,
              *action->mutable_quota_assignment_action()->mutable_assignment_time_to_live());
          ++impl_.counters.buckets_topped_up;
        } else if (!top_up) {
          action = response->mutable_bucket_action(ask.index);
          ++impl_.counters.buckets_assigned;
        }
        if (share.granted >= share.wanted) bucket.top_up.reset();
        if (action != nullptr) {
          Strategy& strategy =
              *action->mutable_quota_assignment_action()->mutable_rate_limit_strategy();
          if (share.granted == 0) {
            strategy.set_blanket_rule(Strategy::DENY_ALL);
          } else {
            // fill_interval is the rule's unit: Envoy refills tokens_per_fill over its whole
            // seconds continuously, so a grant per minute or hour needs no fraction of a token.
            auto& token_bucket = *strategy.mutable_token_bucket();
            token_bucket.set_max_tokens(static_cast<uint32_t>(share.granted));
            token_bucket.mutable_tokens_per_fill()->set_value(static_cast<uint32_t>(share.granted));
            SetDuration(ask.unit, *token_bucket.mutable_fill_interval());
          }
          bucket.granted = share.granted;
        }
        spdlog::debug("rlqs: bucket {}: clients {}, demand {}, granted {} (wanted {}) of {}{}",
                      ask.report.bucket, share.clients, share.demand, share.granted, share.wanted,
                      share.granted_total, top_up ? ", a top-up" : "");
      }
    }
    if (top_up) {
      EndRound(/*read_next=*/false,
               response->bucket_action_size() > 0 ? std::move(response) : nullptr);
      return;
    }
    auto& actions = *response->mutable_bucket_action();
    actions.erase(std::remove_if(actions.begin(), actions.end(),
                                 [](const BucketAction& a) {
                                   return a.bucket_action_case() ==
                                          BucketAction::BUCKET_ACTION_NOT_SET;
                                 }),
                  actions.end());
    if (actions.empty()) {
      EndRound(/*read_next=*/true);
    } else {
      EndRound(/*read_next=*/false, std::move(response), /*answers_report=*/true);
    }
  }

  // Ends a round: queues its response, if any, for writing (in the order rounds end, and before
  // another round can start), then deletes the stream if gRPC is done with it, else handles a
  // report that arrived meanwhile, or reads the next one if `read_next`. A report's answer is
  // `answers_report`: the next report is read once it is written.
  void EndRound(bool read_next, std::shared_ptr<Response> response = nullptr,
                bool answers_report = false) {
    enum class Next { kRead, kHandle, kDestroy } next = Next::kRead;
    Response* first = nullptr;
    {
      std::lock_guard lock(mu_);
      if (response != nullptr && !finishing_) {
        outgoing_.push_back({std::move(response), answers_report});
        if (!writing_) {
          writing_ = true;
          first = outgoing_.front().response.get();
        }
      }
      busy_ = false;
      if (done_) {
        next = Next::kDestroy;  // OnDone() ran during the round and left the deletion here
      } else if (report_waiting_) {
        report_waiting_ = false;
        busy_ = true;
        next = Next::kHandle;
      }
    }
    if (first != nullptr) StartWrite(first);
    switch (next) {
      case Next::kDestroy:
        Destroy();
        return;
      case Next::kHandle:
        Handle();
        return;
      case Next::kRead:
        if (read_next) ReadNext();
        return;
    }
  }

  void ReadNext() {
    {
      std::lock_guard lock(mu_);
      if (finishing_) return;
    }
    StartRead(&report_);
  }

  void FinishOnce() {
    {
      std::lock_guard lock(mu_);
      if (finishing_) return;
      finishing_ = true;
    }
    Finish(grpc::Status::OK);
  }

  void Destroy() {
    impl_.Close();
    delete this;
  }

  RlqsGrpcService::Impl& impl_;
  const std::string client_;
  Reports report_;
  // Touched by rounds only (one at a time); the lock orders a round's end after its start when
  // they run on different threads.
  std::mutex buckets_mu_;
  absl::flat_hash_map<std::string, BucketState> buckets_;
  double tokens_ = 0;
  std::chrono::steady_clock::time_point refilled_;

  std::mutex mu_;
  bool busy_ = false;            // a round is in flight
  bool report_waiting_ = false;  // a report read during a top-up round
  bool writing_ = false;
  bool finishing_ = false;  // Finish() called: nothing more is read or written
  bool done_ = false;       // OnDone() ran
  std::deque<Outgoing> outgoing_;
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

void RlqsGrpcService::Impl::TopUpAll() {
  std::lock_guard lock(streams_mu);
  for (Stream* stream : streams) stream->MaybeTopUp();
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
