#include "src/server/grpc/rlqs_stream.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "spdlog/spdlog.h"

#include "src/server/rlqs/quota_allocator.h"
#include "src/server/rlqs/quota_plan.h"
#include "src/util/log_throttle.h"

namespace sluice::server::rlqs_internal {
namespace {

using BucketAction = Response::BucketAction;
using Strategy = envoy::type::v3::RateLimitStrategy;

// Before a bucket's first report the server has no interval to measure over: Envoy's fixed one.
constexpr std::chrono::seconds kFirstInterval{5};

void SetDuration(std::chrono::microseconds d, google::protobuf::Duration& out) {
  out.set_seconds(d.count() / 1'000'000);
  out.set_nanos(static_cast<int32_t>(d.count() % 1'000'000) * 1000);
}

// fill_interval = the rule's unit, plus as many nanoseconds as it has seconds. Envoy rates a
// bucket by the whole seconds (the nanoseconds change nothing), but tells a changed bucket from an
// unchanged one by comparing only the nanoseconds: without them, a rule changed from 10 a second to
// 10 a minute would leave every Envoy on its 10-a-second bucket.
void SetFillInterval(std::chrono::seconds unit, google::protobuf::Duration& out) {
  out.set_seconds(unit.count());
  out.set_nanos(static_cast<int32_t>(unit.count() % 1'000'000'000));
}

}  // namespace

// One stream. Reports and top-ups run as rounds, one at a time: a round asks the allocator for
// a share per bucket and, once every answer is in, writes one response. A report is answered
// whole; a top-up round (RlqsGrpcService::TopUp()) re-asks, with top_up set, for the buckets
// whose last share was held below what the client wanted, and writes only the grants it raised.
// The next report is read once the previous one's answer is written. Responses are written one at
// a time from a queue. Deletes itself once gRPC is done with it (OnDone()) and no round is in
// flight.
class RlqsStream final : public grpc::ServerBidiReactor<Reports, Response> {
 public:
  RlqsStream(RlqsGrpcService::Impl& impl, std::string client)
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
      // The front of the queue is the write in flight; nothing more goes out once one failed or
      // the stream is finishing.
      if (!ok || finishing_) outgoing_.clear();
      if (!outgoing_.empty()) next = outgoing_.front().response.get();
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
      std::lock_guard buckets_lock(buckets_mu_);
      if (top_ups_.empty()) return;
      const std::shared_ptr<const RateLimitConfig> config = impl_.rls.config();
      // Reloaded since: the next report plans the bucket again.
      absl::erase_if(top_ups_, [&config](const auto& entry) {
        return entry.second.question.config.lock() != config;
      });
      for (const auto& [id, top_up] : top_ups_) {
        asks.push_back(Ask{.index = -1, .id = id, .question = top_up.question});
      }
      if (asks.empty()) return;
      busy_ = true;
    }
    ++impl_.counters.top_up_rounds;
    RunRound(std::move(asks), nullptr);
  }

 private:
  struct BucketState {
    std::chrono::steady_clock::time_point last_report;
    uint64_t granted = 0;     // the grant last sent
    uint64_t max_tokens = 0;  // its token bucket's max_tokens; 0: none (a blanket rule)
    bool saturated = false;   // the last report had denials
  };
  // What a bucket asks the allocator, and what its answer needs.
  struct Question {
    QuotaReport report;
    std::chrono::seconds unit{1};
    std::string stats_key;
    std::string domain;
    // The config the report was planned with: a top-up after a reload would share the old limit.
    std::weak_ptr<const RateLimitConfig> config;
  };
  // Kept for a bucket whose last share was below what the client wanted.
  struct TopUp {
    Question question;  // report.top_up set
    rlqs::BucketId bucket_id;
  };
  // One bucket's question in a round. `index` is its action in a report's response; -1 in a
  // top-up round.
  struct Ask {
    int index = -1;
    std::string id;
    Question question;
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
        top_ups_.erase(id);
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
      state->second.saturated = usage.num_requests_denied() > 0;
      top_ups_.erase(id);  // this report supersedes it
      const std::chrono::seconds ttl = QuotaTtl(interval.value_or(kFirstInterval));
      auto& assignment = *action.mutable_quota_assignment_action();
      SetDuration(ttl, *assignment.mutable_assignment_time_to_live());
      if (plan.kind != QuotaBucketPlan::Kind::kShared) {
        state->second.max_tokens = 0;
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
                         .question = {.report = {.bucket = plan.bucket_key,
                                                 .client = client_,
                                                 .demand = demand,
                                                 .limit = plan.limit,
                                                 .ttl = ttl},
                                      .unit = plan.unit,
                                      .stats_key = plan.stats_key,
                                      .domain = report_.domain(),
                                      .config = config}});
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
      impl_.allocator.Allocate(ask.question.report, [this, round, left, response,
                                                     &ask](absl::StatusOr<QuotaShare> share) {
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
        const Question& question = ask.question;
        auto state = buckets_.find(ask.id);
        if (!ask.share.ok()) {
          ++impl_.counters.allocation_errors;
          if (internal::LogPermit permit = impl_.allocation_error_log.Acquire(); permit.log) {
            spdlog::warn("rlqs: bucket {}: {}{}", question.report.bucket,
                         ask.share.status().ToString(),
                         internal::SuppressedNote(permit.suppressed));
          }
          // No answer for the bucket: Envoy keeps its assignment until it expires.
          if (!top_up) response->mutable_bucket_action(ask.index)->clear_bucket_action();
          continue;
        }
        const QuotaShare& share = *ask.share;
        impl_.Record(question.stats_key, {.domain = question.domain,
                                          .clients = share.clients,
                                          .demand = share.demand,
                                          .assigned = share.granted_total,
                                          .limit = question.report.limit});
        if (state == buckets_.end()) continue;  // abandoned since
        BucketState& bucket = state->second;
        auto pending = top_ups_.find(ask.id);
        if (top_up && pending == top_ups_.end()) continue;  // superseded by a report
        BucketAction* action = nullptr;
        if (!top_up) {
          action = response->mutable_bucket_action(ask.index);
          ++impl_.counters.buckets_assigned;
          if (share.granted < share.wanted) {
            TopUp again{.question = question,
                        .bucket_id = action->bucket_id()};  // the report's, as it named it
            again.question.report.top_up = true;
            top_ups_.insert_or_assign(ask.id, std::move(again));
          } else {
            top_ups_.erase(ask.id);
          }
        } else if (share.granted > bucket.granted) {
          action = response->add_bucket_action();
          *action->mutable_bucket_id() = pending->second.bucket_id;
          SetDuration(
              question.report.ttl,
              *action->mutable_quota_assignment_action()->mutable_assignment_time_to_live());
          ++impl_.counters.buckets_topped_up;
        }
        if (top_up && share.granted >= share.wanted) top_ups_.erase(pending);
        if (action != nullptr) {
          Strategy& strategy =
              *action->mutable_quota_assignment_action()->mutable_rate_limit_strategy();
          if (share.granted == 0) {
            strategy.set_blanket_rule(Strategy::DENY_ALL);
            bucket.max_tokens = 0;
          } else {
            // fill_interval is the rule's unit: Envoy refills tokens_per_fill over its whole
            // seconds continuously, so a grant per minute or hour needs no fraction of a token.
            bucket.max_tokens = QuotaMaxTokens(share.granted, bucket.max_tokens, bucket.saturated);
            auto& token_bucket = *strategy.mutable_token_bucket();
            token_bucket.set_max_tokens(static_cast<uint32_t>(bucket.max_tokens));
            token_bucket.mutable_tokens_per_fill()->set_value(static_cast<uint32_t>(share.granted));
            SetFillInterval(question.unit, *token_bucket.mutable_fill_interval());
          }
          bucket.granted = share.granted;
        }
        spdlog::debug("rlqs: bucket {}: clients {}, demand {}, granted {} (wanted {}) of {}{}",
                      question.report.bucket, share.clients, share.demand, share.granted,
                      share.wanted, share.granted_total, top_up ? ", a top-up" : "");
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
        if (outgoing_.size() == 1) first = outgoing_.front().response.get();  // none in flight
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
  // The buckets whose grant is held below their share, by id: what a top-up round asks again.
  absl::flat_hash_map<std::string, TopUp> top_ups_;
  double tokens_ = 0;
  std::chrono::steady_clock::time_point refilled_;

  std::mutex mu_;
  bool busy_ = false;            // a round is in flight
  bool report_waiting_ = false;  // a report read during a top-up round
  bool finishing_ = false;       // Finish() called: nothing more is read or written
  bool done_ = false;            // OnDone() ran
  std::deque<Outgoing> outgoing_;
};

// Refuses a stream past the bound at once.
class RefusedStream final : public grpc::ServerBidiReactor<Reports, Response> {
 public:
  RefusedStream() {
    Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "rlqs: too many streams"));
  }
  void OnDone() override { delete this; }
};

grpc::ServerBidiReactor<Reports, Response>* NewRlqsStream(RlqsGrpcService::Impl& impl,
                                                          std::string client) {
  return new RlqsStream(impl, std::move(client));
}

grpc::ServerBidiReactor<Reports, Response>* NewRefusedRlqsStream() { return new RefusedStream(); }

void MaybeTopUp(RlqsStream& stream) { stream.MaybeTopUp(); }

}  // namespace sluice::server::rlqs_internal
