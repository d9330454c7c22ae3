// The failure-policy decorator (include/sluice/failure_policy.h).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "sluice/failure_policy.h"

#include "src/store/memory/local_fallback.h"
#include "src/util/log_throttle.h"
#include "src/util/mutex.h"
#include "src/util/sha256.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

// `text` with the content of every `{...}` (a key's hash tag: its identity) hashed or redacted as
// `how` says. A `{` without its `}` is left as it is.
std::string HideKeyIdentities(std::string text, FailurePolicy::KeyIdentities how) {
  if (how == FailurePolicy::KeyIdentities::kPlain) return text;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t open = text.find('{', i);
    const size_t close = open == std::string::npos ? open : text.find('}', open + 1);
    if (close == std::string::npos) break;
    out.append(text, i, open + 1 - i);
    const std::string_view tag(text.data() + open + 1, close - open - 1);
    if (how == FailurePolicy::KeyIdentities::kHashed) {
      out.append("h:").append(Sha256Hex(tag).substr(0, 12));
    } else {
      out.append("***");
    }
    out.push_back('}');
    i = close + 1;
  }
  out.append(text, i, std::string::npos);
  return out;
}

// Only the caller's own mistakes pass through untouched; everything else is the store failing.
bool IsStoreFailure(const absl::Status& status) {
  return !status.ok() && !absl::IsInvalidArgument(status);
}

// What a failed check is answered with: FailurePolicy's mode and, for kLocal, its instances.
struct Answer {
  FailureMode mode = FailureMode::kPropagate;
  int64_t expected_instances = 1;
};

// An Answer in one word, so that SetAnswer() and a check reading it never see half of each: the
// mode in the low byte, the instances above it (at most 2^55 - 1, far above any limit, which
// leaves every share at 1 as a larger count would).
constexpr int64_t kMaxPackedInstances = (int64_t{1} << 55) - 1;

uint64_t Pack(FailureMode mode, int64_t expected_instances) {
  const int64_t instances = std::clamp<int64_t>(expected_instances, 1, kMaxPackedInstances);
  return (static_cast<uint64_t>(instances) << 8) | static_cast<uint8_t>(mode);
}

Answer Unpack(uint64_t word) {
  return Answer{.mode = static_cast<FailureMode>(word & 0xFF),
                .expected_instances = static_cast<int64_t>(word >> 8)};
}

class FailurePolicyStoreImpl final : public FailurePolicyStore {
  // A check on a store that answers inline, on Decide()'s frame.
  struct InlineCall {
    FailurePolicyStoreImpl* self = nullptr;
    std::span<const LimitCheck> checks;
    Answer answer;
    MultiDecisionCallback* done = nullptr;
    bool answered = false;
  };

 public:
  // The wrapper's base refers to `primary`; `owned` is null or owns it, and is declared last so
  // that it is destroyed first (see below).
  FailurePolicyStoreImpl(Store& primary, std::unique_ptr<Store> owned, const FailurePolicy& policy)
      : FailurePolicyStore(primary),
        policy_(policy),
        clock_(policy.clock != nullptr ? *policy.clock : Clock::Real()),
        answer_(Pack(policy.mode, policy.expected_instances)),
        error_log_({.max_lines = 1, .interval = std::chrono::seconds(1), .clock = &clock_}),
        breaker_log_({.max_lines = 4, .interval = std::chrono::seconds(1), .clock = &clock_}),
        owned_(std::move(owned)) {
    if (policy.mode == FailureMode::kLocal) MakeLocal();
  }

  // The fallback limiter is in memory, so the wrapper waits on I/O exactly when its store does:
  // Name() and AnswersInline() are the wrapped store's.
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    // Read once: the whole check is answered as it started, whatever SetAnswer() does meanwhile.
    const Answer answer = Unpack(answer_.load(std::memory_order_acquire));
    if (!AdmitToStore()) {
      // The store is not called while the breaker is open, but what it can decide from memory
      // (a live lease) is still decided exactly.
      if (std::optional<MultiDecision> local = DecideLocallyOn(inner(), checks)) {
        std::move(done)(*std::move(local));
        return;
      }
      std::move(done)(FallbackAll(checks, answer));
      return;
    }
    if (inner().AnswersInline()) {
      // The store answers before DecideOn() returns, while `checks` and `done` are still on this
      // frame: the callback refers to them there, with no copy of the checks and one pointer to
      // capture, so no allocation (the memory store's every check).
      InlineCall call{.self = this, .checks = checks, .answer = answer, .done = &done};
      DecideOn(inner(), checks, [&call](absl::StatusOr<MultiDecision> result) {
        call.answered = true;
        call.self->Complete(std::move(result), call.checks, call.answer, *call.done);
      });
      if (!call.answered) {
        std::move(done)(absl::InternalError(
            absl::StrCat("store ", internal::AbslView(inner().Name()), " did not answer inline")));
      }
      return;
    }
    // The checks need not outlive this call: keep a copy for the fallback, unless the answer hands
    // errors back as they are (kPropagate), which needs none.
    std::vector<LimitCheck> copy;
    if (answer.mode != FailureMode::kPropagate) copy.assign(checks.begin(), checks.end());
    DecideOn(inner(), checks,
             [this, answer, copy = std::move(copy),
              done = std::move(done)](absl::StatusOr<MultiDecision> result) mutable {
               Complete(std::move(result), copy, answer, done);
             });
  }

  FailureStats Stats() const override {
    internal::MutexLock lock(&mu_);
    return FailureStats{
        .store_errors = store_errors_.load(std::memory_order_relaxed),
        .fallback_decisions = fallback_decisions_.load(std::memory_order_relaxed),
        .local_decisions = local_decisions_.load(std::memory_order_relaxed),
        .breaker_open = open_,
        .breaker_opens = breaker_opens_,
        .breaker_closes = breaker_closes_,
        .log_lines_suppressed = error_log_.total_suppressed() + breaker_log_.total_suppressed()};
  }

  void SetAnswer(FailureMode mode, int64_t expected_instances) override {
    // The limiter first: a check that reads kLocal finds it.
    if (mode == FailureMode::kLocal) MakeLocal();
    answer_.store(Pack(mode, expected_instances), std::memory_order_release);
  }

 private:
  // Creates the local limiter of kLocal unless there is one. A memory store that cannot be made
  // leaves none: kLocal then answers Internal (FallbackAll()).
  void MakeLocal() {
    internal::MutexLock lock(&mu_);
    if (local_owned_ != nullptr) return;
    absl::StatusOr<std::unique_ptr<internal::LocalFallback>> local =
        internal::LocalFallback::Create(clock_, policy_.local_max_bytes);
    if (!local.ok()) return;
    local_owned_ = *std::move(local);
    local_.store(local_owned_.get(), std::memory_order_release);
  }

  // Hands the store's `result` to `done`, or the policy's answer (`answer`) to `checks` when the
  // store failed.
  void Complete(absl::StatusOr<MultiDecision>&& result, std::span<const LimitCheck> checks,
                const Answer& answer, MultiDecisionCallback& done) {
    if (!IsStoreFailure(result.status())) {
      OnStoreAnswered();
      std::move(done)(std::move(result));
      return;
    }
    OnStoreFailed(result.status(), answer.mode);
    if (answer.mode == FailureMode::kPropagate) {
      std::move(done)(std::move(result));
      return;
    }
    std::move(done)(FallbackAll(checks, answer));
  }

  // The answer of kPropagate (while the breaker is open), kAllow or kDeny to one limit.
  absl::StatusOr<Decision> Fallback(const Limit& limit, FailureMode mode) {
    fallback_decisions_.fetch_add(1, std::memory_order_relaxed);
    Decision d;
    switch (mode) {
      case FailureMode::kPropagate:
        return absl::UnavailableError(
            absl::StrCat("store ", internal::AbslView(inner().Name()),
                         " skipped: circuit open after repeated failures"));
      case FailureMode::kAllow:
        d = Decision{.allowed = true, .limit = limit.Capacity(), .remaining = limit.Capacity()};
        break;
      case FailureMode::kDeny:
        d = Decision{.allowed = false,
                     .limit = limit.Capacity(),
                     .remaining = 0,
                     .reset_after = policy_.deny_retry_after,
                     .retry_after = policy_.deny_retry_after};
        break;
      case FailureMode::kLocal:
        // FallbackAll() answers kLocal whole, all-or-nothing.
        return absl::InternalError("local fallback store unavailable");
    }
    d.from_fallback = true;
    return d;
  }

  absl::StatusOr<MultiDecision> FallbackAll(std::span<const LimitCheck> checks,
                                            const Answer& answer) {
    internal::LocalFallback* local =
        answer.mode == FailureMode::kLocal ? local_.load(std::memory_order_acquire) : nullptr;
    if (local != nullptr) {
      fallback_decisions_.fetch_add(1, std::memory_order_relaxed);
      int64_t instances = answer.expected_instances;
      if (policy_.divide_by_leaseholders) {
        instances = std::max(instances, SharingInstancesOn(inner()).value_or(0));
      }
      absl::StatusOr<MultiDecision> decided = local->Decide(checks, instances);
      if (decided.ok()) local_decisions_.fetch_add(1, std::memory_order_relaxed);
      return decided;
    }
    MultiDecision out{.allowed = true, .decisions = {}};
    for (const LimitCheck& c : checks) {
      // A credit is never denied: under kDeny it is answered as kAllow would (nothing recorded).
      const FailureMode mode =
          c.refund && answer.mode == FailureMode::kDeny ? FailureMode::kAllow : answer.mode;
      absl::StatusOr<Decision> d = Fallback(c.limit, mode);
      if (!d.ok()) return d.status();
      out.allowed = out.allowed && d->allowed;
      out.decisions.push_back(*d);
    }
    return out;
  }

  // Circuit breaker: closed -> (threshold consecutive failures) -> open for breaker_open_for ->
  // one probe at a time -> closed on the first success.
  bool AdmitToStore() {
    if (policy_.breaker_failure_threshold <= 0) return true;
    // The common case, a store that has not failed since it last answered, takes no lock.
    if (!troubled_.load(std::memory_order_acquire)) return true;
    internal::MutexLock lock(&mu_);
    if (!open_) return true;
    if (clock_.Now() < open_until_ || probe_in_flight_) return false;
    probe_in_flight_ = true;
    return true;
  }

  void OnStoreAnswered() {
    if (policy_.breaker_failure_threshold <= 0) return;
    if (!troubled_.load(std::memory_order_acquire)) return;  // Nothing to reset.
    std::chrono::steady_clock::duration was_open{};
    {
      internal::MutexLock lock(&mu_);
      consecutive_failures_ = 0;
      probe_in_flight_ = false;
      if (!open_) {
        troubled_.store(false, std::memory_order_release);
        return;
      }
      open_ = false;
      troubled_.store(false, std::memory_order_release);
      ++breaker_closes_;
      was_open = clock_.Now() - opened_at_;
    }
    if (!policy_.log_failures) return;
    if (internal::LogPermit p = breaker_log_.Acquire(); p.log) {
      spdlog::info("store {}: circuit breaker closed, the store answers again after {} ms{}",
                   inner().Name(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(was_open).count(),
                   internal::SuppressedNote(p.suppressed));
    }
  }

  // `mode` is the answer the failed check gets, for the log lines.
  void OnStoreFailed(const absl::Status& status, FailureMode mode) {
    store_errors_.fetch_add(1, std::memory_order_relaxed);
    // Every failed check of an outage lands here: one line a second says what is wrong, the
    // counters say how often.
    if (policy_.log_failures) {
      if (internal::LogPermit p = error_log_.Acquire(); p.log) {
        spdlog::warn("store {}: check failed ({}): {}{}", inner().Name(), FailureModeAnswer(mode),
                     HideKeyIdentities(status.ToString(), policy_.log_key_identities),
                     internal::SuppressedNote(p.suppressed));
      }
    }
    if (policy_.breaker_failure_threshold <= 0) return;
    int failures = 0;
    {
      internal::MutexLock lock(&mu_);
      troubled_.store(true, std::memory_order_release);
      probe_in_flight_ = false;
      failures = ++consecutive_failures_;
      if (!open_ && consecutive_failures_ < policy_.breaker_failure_threshold) return;
      open_until_ = clock_.Now() + policy_.breaker_open_for;
      if (open_) return;  // A failed probe: still open, not a transition.
      open_ = true;
      opened_at_ = clock_.Now();
      ++breaker_opens_;
    }
    if (!policy_.log_failures) return;
    if (internal::LogPermit p = breaker_log_.Acquire(); p.log) {
      spdlog::warn(
          "store {}: circuit breaker open after {} consecutive failures; {} for {} ms, "
          "then probing{}",
          inner().Name(), failures, FailureModeAnswer(mode),
          std::chrono::duration_cast<std::chrono::milliseconds>(policy_.breaker_open_for).count(),
          internal::SuppressedNote(p.suppressed));
    }
  }

  // How checks are answered while the store fails, for logs.
  static std::string_view FailureModeAnswer(FailureMode mode) {
    switch (mode) {
      case FailureMode::kPropagate:
        return "returning the error";
      case FailureMode::kAllow:
        return "allowing";
      case FailureMode::kDeny:
        return "denying";
      case FailureMode::kLocal:
        return "limiting locally";
    }
    return "unknown";
  }

  const FailurePolicy policy_;
  Clock& clock_;
  // The current Answer, packed (Pack()); set by SetAnswer().
  std::atomic<uint64_t> answer_;
  std::atomic<uint64_t> store_errors_{0};
  std::atomic<uint64_t> fallback_decisions_{0};
  std::atomic<uint64_t> local_decisions_{0};
  mutable internal::Mutex mu_;
  // The local limiter of kLocal, once made (MakeLocal()); never replaced, so local_ stays valid
  // for the wrapper's life.
  std::unique_ptr<internal::LocalFallback> local_owned_ ABSL_GUARDED_BY(mu_);
  std::atomic<internal::LocalFallback*> local_{nullptr};
  // True from a failure until a check succeeds with the breaker closed: while false, neither a
  // check nor its answer needs mu_. Written under mu_.
  std::atomic<bool> troubled_{false};
  int consecutive_failures_ ABSL_GUARDED_BY(mu_) = 0;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  bool probe_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point open_until_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point opened_at_ ABSL_GUARDED_BY(mu_);
  uint64_t breaker_opens_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t breaker_closes_ ABSL_GUARDED_BY(mu_) = 0;
  internal::LogThrottle error_log_;
  internal::LogThrottle breaker_log_;
  // Declared last so it is destroyed first: its destructor may still complete callbacks that use
  // the members above.
  std::unique_ptr<Store> owned_;
};

}  // namespace

absl::StatusOr<FailureMode> ParseFailureMode(std::string_view name) {
  if (name == "error") return FailureMode::kPropagate;
  if (name == "allow") return FailureMode::kAllow;
  if (name == "deny") return FailureMode::kDeny;
  if (name == "local") return FailureMode::kLocal;
  return absl::InvalidArgumentError(absl::StrCat("unknown failure mode '", internal::AbslView(name),
                                                 "' (expected error, allow, deny or local)"));
}

std::string_view FailureModeName(FailureMode mode) {
  switch (mode) {
    case FailureMode::kPropagate:
      return "error";
    case FailureMode::kAllow:
      return "allow";
    case FailureMode::kDeny:
      return "deny";
    case FailureMode::kLocal:
      return "local";
  }
  return "unknown";
}

std::unique_ptr<FailurePolicyStore> WithFailurePolicy(std::unique_ptr<Store> primary,
                                                      const FailurePolicy& policy) {
  Store& store = *primary;
  return std::make_unique<FailurePolicyStoreImpl>(store, std::move(primary), policy);
}

std::unique_ptr<FailurePolicyStore> WithFailurePolicy(Store& primary, const FailurePolicy& policy) {
  return std::make_unique<FailurePolicyStoreImpl>(primary, nullptr, policy);
}

}  // namespace sluice
