#include "sluice/http/middleware.h"

#include <atomic>
#include <cstddef>
#include <span>
#include <utility>

#include "src/http/request_call.h"

namespace sluice::http {

namespace {
// A cache line on the machines we run on. Not std::hardware_destructive_interference_size: GCC
// warns that its value may differ between compilers, and clang's libstdc++ headers lack it.
constexpr size_t kCacheLine = 64;
}  // namespace

// Each counter on its own cache line: they are bumped by every request on every thread.
struct Middleware::Counters {
  alignas(kCacheLine) std::atomic<uint64_t> enabled{0};
  alignas(kCacheLine) std::atomic<uint64_t> enforced{0};
  alignas(kCacheLine) std::atomic<uint64_t> over_limit{0};
  alignas(kCacheLine) std::atomic<uint64_t> ok{0};
  alignas(kCacheLine) std::atomic<uint64_t> error{0};

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
  return std::unique_ptr<Middleware>(new Middleware(std::move(options)));
}

Middleware::Middleware(MiddlewareOptions options)
    : options_(std::move(options)),
      config_(options_.config),
      counters_(std::make_unique<Counters>()),
      store_answers_inline_(options_.store->AnswersInline()) {
  // The snapshot lives in config_ only, so that SetConfig() is the one owner of changes.
  options_.config.reset();
}

Middleware::~Middleware() = default;

Verdict Middleware::Decide(const RequestView& request) {
  internal::RequestCall call(config_.load(), this);
  if (call.Prepare(request, options_) == internal::RequestCall::State::kUnlimited) return Verdict{};
  counters_->enabled.fetch_add(1, std::memory_order_relaxed);
  internal::Tally tally;
  const std::span<const LimitCheck> checks = call.checks();
  Verdict verdict =
      checks.size() == 1
          ? call.Finish(options_.store->Check(checks[0].key, checks[0].limit, checks[0].cost),
                        options_, tally)
          : call.Finish(options_.store->CheckAll(checks), options_, tally);
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
  // Shared between this frame and the store's callback: the checks must outlive CheckAllAsync()
  // even when the callback runs (and is destroyed) inline.
  auto call = std::make_shared<internal::RequestCall>(config_.load(), this);
  if (call->Prepare(request, options_) == internal::RequestCall::State::kUnlimited) {
    std::move(done)(Verdict{});
    return;
  }
  counters_->enabled.fetch_add(1, std::memory_order_relaxed);
  call->done = std::move(done);
  // One check (the common case) takes the store's single-key path: its cheapest, and one limit
  // needs no all-or-nothing check.
  const std::span<const LimitCheck> checks = call->checks();
  auto finish = [call](auto result) {
    internal::Tally tally;
    Middleware& self = *call->owner;
    Verdict verdict = call->Finish(std::move(result), self.options_, tally);
    self.counters_->Add(tally);
    std::move(call->done)(std::move(verdict));
  };
  if (checks.size() == 1) {
    options_.store->CheckAsync(
        checks[0].key, checks[0].limit, checks[0].cost,
        [finish = std::move(finish)](absl::StatusOr<Decision> result) mutable {
          finish(std::move(result));
        });
    return;
  }
  options_.store->CheckAllAsync(
      checks, [finish = std::move(finish)](absl::StatusOr<MultiDecision> result) mutable {
        finish(std::move(result));
      });
}

absl::Status Middleware::SetConfig(std::shared_ptr<const MiddlewareConfig> config) {
  if (config == nullptr) return absl::InvalidArgumentError("middleware: config is null");
  config_.store(std::move(config));
  return absl::OkStatus();
}

absl::Status Middleware::Reload(const std::filesystem::path& path) {
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config = LoadMiddlewareConfig(path);
  if (!config.ok()) return config.status();
  return SetConfig(*std::move(config));
}

std::shared_ptr<const MiddlewareConfig> Middleware::config() const { return config_.load(); }

MiddlewareStats Middleware::Stats() const {
  return MiddlewareStats{.enabled = counters_->enabled.load(std::memory_order_relaxed),
                         .enforced = counters_->enforced.load(std::memory_order_relaxed),
                         .over_limit = counters_->over_limit.load(std::memory_order_relaxed),
                         .ok = counters_->ok.load(std::memory_order_relaxed),
                         .error = counters_->error.load(std::memory_order_relaxed)};
}

}  // namespace sluice::http
