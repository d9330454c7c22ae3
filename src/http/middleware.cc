#include "sluice/http/middleware.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

#include "sluice/failure_policy.h"

#include "src/http/problem_json.h"
#include "src/http/request_call.h"
#include "src/http/request_target.h"
#include "src/util/mutex.h"
#include "src/util/strings.h"

namespace sluice::http {

namespace {
// A cache line on the machines we run on. Not std::hardware_destructive_interference_size: GCC
// warns that its value may differ between compilers, and clang's libstdc++ headers lack it.
constexpr size_t kCacheLine = 64;
// The local limiter of StoreErrorAction::kLocal (the guard's) holds at most this much.
constexpr size_t kLocalLimiterMaxBytes = size_t{64} << 20;

// Sets what the middleware's guard answers a failed check with, as `response` says. kLocal is the
// failure policy's kLocal. reject and allow are the answers the middleware gives to an error that
// reaches it (RequestCall::Finish()), so the guard hands those errors on (kPropagate): a policy's
// kAllow would count the request `ok` and its kDeny send a 503 of another kind.
void AnswerAsConfigured(FailurePolicyStore& guard, const ResponseSpec& response) {
  if (response.store_error == StoreErrorAction::kLocal) {
    guard.SetAnswer(FailureMode::kLocal, response.local_fallback_instances);
  } else {
    guard.SetAnswer(FailureMode::kPropagate, 1);
  }
}

// The 400 answer to a path that a router could read as another route than the rules do
// (RequestView::refuse_ambiguous_path), or nullopt when the request goes on to the rules.
std::optional<Verdict> RefuseAmbiguousPath(const RequestView& request) {
  if (!request.refuse_ambiguous_path) return std::nullopt;
  const std::string_view why = internal::AmbiguousPath(internal::RoutingPath(request.path));
  if (why.empty()) return std::nullopt;
  return Verdict{.outcome = Verdict::Outcome::kReject,
                 .status = 400,
                 .headers = {},
                 .content_type = std::string(internal::kProblemContentType),
                 .body = internal::ProblemJson(
                     "about:blank", "Bad Request", 400,
                     absl::StrCat("The request target has ", ::sluice::internal::AbslView(why),
                                  "; send the path in its normal form."),
                     {})};
}
}  // namespace

// The config in use. Not std::atomic<std::shared_ptr>: libstdc++ 12's load() releases its inner
// lock with a relaxed store, so a load racing a store is a data race in the C++ memory model
// (ThreadSanitizer reports it); a mutex costs a load the same two atomic operations. A change also
// sets the guard's answer, under the same lock, so that changes come one at a time and a request
// that loads a config finds the guard answering as it says. (One that loaded the config before may
// still find the newer answer: the answer is read when the store is asked.)
class Middleware::ConfigSlot {
 public:
  explicit ConfigSlot(std::shared_ptr<const MiddlewareConfig> config)
      : config_(std::move(config)) {}

  std::shared_ptr<const MiddlewareConfig> Load() const {
    ::sluice::internal::MutexLock lock(&mu_);
    return config_;
  }

  // Swaps in `config` (not null) and sets `guard`'s answer from it.
  void Store(std::shared_ptr<const MiddlewareConfig> config, FailurePolicyStore& guard) {
    {
      ::sluice::internal::MutexLock lock(&mu_);
      AnswerAsConfigured(guard, config->spec().response);
      config_.swap(config);
    }
    // `config` now holds the old config, released here, outside the lock.
  }

 private:
  mutable ::sluice::internal::Mutex mu_;
  std::shared_ptr<const MiddlewareConfig> config_ ABSL_GUARDED_BY(mu_);
};

// Each counter on its own cache line: they are bumped by every request on every thread.
struct Middleware::Counters {
  alignas(kCacheLine) std::atomic<uint64_t> enabled{0};
  alignas(kCacheLine) std::atomic<uint64_t> enforced{0};
  alignas(kCacheLine) std::atomic<uint64_t> over_limit{0};
  alignas(kCacheLine) std::atomic<uint64_t> ok{0};
  alignas(kCacheLine) std::atomic<uint64_t> error{0};
  // Rare: shares a line with the one above.
  std::atomic<uint64_t> ambiguous_path{0};

  void Add(const internal::Tally& t) {
    if (t.ok) ok.fetch_add(1, std::memory_order_relaxed);
    if (t.over_limit) over_limit.fetch_add(1, std::memory_order_relaxed);
    if (t.enforced) enforced.fetch_add(1, std::memory_order_relaxed);
    if (t.error) error.fetch_add(1, std::memory_order_relaxed);
  }
};

absl::StatusOr<std::unique_ptr<Middleware>> Middleware::Create(MiddlewareOptions options) {
  if (options.store == nullptr) return absl::InvalidArgumentError("middleware: store is required");
  if (options.config == nullptr) {
    return absl::InvalidArgumentError("middleware: config is required");
  }
  if (options.clock == nullptr) options.clock = &Clock::Real();
  // Every store gets the middleware's failure policy, which answers a failed check as the
  // config's store_error says (AnswerAsConfigured()). A store that can hang gets, besides, its
  // breaker and logged failures even when the application did not think of them: without them, a
  // paused Redis costs every request its whole deadline, unseen. A store that answers inline
  // cannot hang, and a FailurePolicyStore of the application's has its own breaker and logs: over
  // those the guard only answers (what the application's policy hands on, for the latter).
  const bool can_hang = !options.store->AnswersInline() &&
                        dynamic_cast<FailurePolicyStore*>(options.store) == nullptr;
  std::unique_ptr<FailurePolicyStore> guard = WithFailurePolicy(
      *options.store,
      {.mode = FailureMode::kPropagate,
       .breaker_failure_threshold = can_hang ? FailurePolicy{}.breaker_failure_threshold : 0,
       .clock = options.clock,
       .local_max_bytes = kLocalLimiterMaxBytes,
       .log_failures = can_hang,
       .log_key_identities = options.log_key_identities});
  AnswerAsConfigured(*guard, options.config->spec().response);
  return std::unique_ptr<Middleware>(new Middleware(std::move(options), std::move(guard)));
}

Middleware::Middleware(MiddlewareOptions options, std::unique_ptr<FailurePolicyStore> guard)
    : options_(std::move(options)),
      config_(std::make_unique<ConfigSlot>(options_.config)),
      counters_(std::make_unique<Counters>()),
      guard_(std::move(guard)),
      store_answers_inline_(guard_->AnswersInline()) {
  // The snapshot lives in config_ only, so that SetConfig() is the one owner of changes.
  options_.config.reset();
}

Middleware::~Middleware() = default;

Verdict Middleware::Decide(const RequestView& request) {
  if (std::optional<Verdict> refused = RefuseAmbiguousPath(request)) {
    counters_->ambiguous_path.fetch_add(1, std::memory_order_relaxed);
    return *std::move(refused);
  }
  internal::RequestCall call(config_->Load(), this);
  if (call.Prepare(request, options_) == internal::RequestCall::State::kUnlimited) return Verdict{};
  counters_->enabled.fetch_add(1, std::memory_order_relaxed);
  internal::Tally tally;
  Verdict verdict = call.Finish(guard_->CheckAll(call.checks()), options_, tally);
  counters_->Add(tally);
  return verdict;
}

void Middleware::DecideAsync(const RequestView& request, VerdictCallback done) {
  // A store that never waits (the memory store) needs none of the state kept below for a late
  // answer: decide here.
  if (store_answers_inline_) {
    std::move(done)(Decide(request));
    return;
  }
  if (std::optional<Verdict> refused = RefuseAmbiguousPath(request)) {
    counters_->ambiguous_path.fetch_add(1, std::memory_order_relaxed);
    std::move(done)(*std::move(refused));
    return;
  }
  // Shared between this frame and the store's callback: the checks must outlive CheckAllAsync()
  // even when the callback runs (and is destroyed) inline.
  auto call = std::make_shared<internal::RequestCall>(config_->Load(), this);
  if (call->Prepare(request, options_) == internal::RequestCall::State::kUnlimited) {
    std::move(done)(Verdict{});
    return;
  }
  counters_->enabled.fetch_add(1, std::memory_order_relaxed);
  call->done = std::move(done);
  guard_->CheckAllAsync(call->checks(), [call](absl::StatusOr<MultiDecision> result) mutable {
    internal::Tally tally;
    Middleware& self = *call->owner;
    Verdict verdict = call->Finish(std::move(result), self.options_, tally);
    self.counters_->Add(tally);
    std::move(call->done)(std::move(verdict));
  });
}

absl::Status Middleware::SetConfig(std::shared_ptr<const MiddlewareConfig> config) {
  if (config == nullptr) return absl::InvalidArgumentError("middleware: config is null");
  config_->Store(std::move(config), *guard_);
  return absl::OkStatus();
}

absl::Status Middleware::Reload(const std::filesystem::path& path) {
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config = LoadMiddlewareConfig(path);
  if (!config.ok()) return config.status();
  return SetConfig(*std::move(config));
}

std::shared_ptr<const MiddlewareConfig> Middleware::config() const { return config_->Load(); }

MiddlewareStats Middleware::Stats() const {
  return MiddlewareStats{
      .enabled = counters_->enabled.load(std::memory_order_relaxed),
      .enforced = counters_->enforced.load(std::memory_order_relaxed),
      .over_limit = counters_->over_limit.load(std::memory_order_relaxed),
      .ok = counters_->ok.load(std::memory_order_relaxed),
      .error = counters_->error.load(std::memory_order_relaxed),
      .local_fallback = guard_->Stats().local_decisions,
      .ambiguous_path = counters_->ambiguous_path.load(std::memory_order_relaxed)};
}

}  // namespace sluice::http
