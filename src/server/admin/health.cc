#include "src/server/admin/health.h"

#include <atomic>
#include <optional>
#include <utility>

#include "src/util/mutex.h"

namespace sluice::server {
namespace {

// The limit a health check peeks at; any valid limit serves, since a peek records nothing.
constexpr Limit kHealthCheckLimit{.limit = 1, .period = std::chrono::seconds(1)};

}  // namespace

struct Health::State {
  std::atomic<bool> terminating{false};
  internal::Mutex mu;
  std::optional<bool> last ABSL_GUARDED_BY(mu);
  Listener listener ABSL_GUARDED_BY(mu);
  ListenerCheck listener_check ABSL_GUARDED_BY(mu);

  // Records `healthy`, telling the listener when it changed. Terminating wins over any result of
  // a check that started before it.
  void Report(bool healthy) {
    internal::MutexLock lock(&mu);
    if (terminating.load()) healthy = false;
    if (last == healthy) return;
    last = healthy;
    if (listener) listener(healthy);
  }
};

Health::Health(const RateLimitService& service, std::vector<Store*> stores, HealthOptions options)
    : service_(service),
      stores_(std::move(stores)),
      options_(options),
      state_(std::make_shared<State>()) {}

void Health::MarkTerminating() {
  state_->terminating.store(true);
  state_->Report(false);
}

void Health::SetListenerHealth(ListenerCheck check) {
  internal::MutexLock lock(&state_->mu);
  state_->listener_check = std::move(check);
}

void Health::OnChange(Listener listener) {
  internal::MutexLock lock(&state_->mu);
  state_->listener = std::move(listener);
}

namespace {

// Checks stores[i...] one after another, then completes `done`.
void CheckStores(std::shared_ptr<const std::vector<Store*>> stores, size_t i,
                 absl::AnyInvocable<void(HealthResult) &&> done) {
  if (i == stores->size()) {
    std::move(done)(HealthResult{.healthy = true});
    return;
  }
  // A peek writes nothing but runs the same path as a real check (for Redis: EVALSHA, with
  // NOSCRIPT recovery), so a server that answers PING but cannot run our scripts is unhealthy.
  (*stores)[i]->CheckAsync(
      "sluice-healthcheck", kHealthCheckLimit, 0,
      [stores, i, done = std::move(done)](const absl::StatusOr<Decision>& d) mutable {
        if (!d.ok()) {
          std::move(done)(HealthResult{.healthy = false,
                                       .reason = "store_unavailable",
                                       .message = std::string(d.status().message())});
          return;
        }
        CheckStores(std::move(stores), i + 1, std::move(done));
      });
}

}  // namespace

void Health::Check(Callback done) {
  std::shared_ptr<State> state = state_;
  auto finish = [state, done = std::move(done)](HealthResult r) mutable {
    if (state->terminating.load()) {
      r = HealthResult{.reason = "terminating", .message = "shutting down"};
    }
    state->Report(r.healthy);
    std::move(done)(std::move(r));
  };
  if (state->terminating.load()) {
    finish(HealthResult{});
    return;
  }
  std::shared_ptr<const RateLimitConfig> config = service_.config();
  if (config == nullptr) {
    finish(HealthResult{.reason = "no_config", .message = "no rate limit config loaded"});
    return;
  }
  if (options_.require_domain && config->Domains().empty()) {
    finish(HealthResult{.reason = "no_domain", .message = "the loaded config names no domain"});
    return;
  }
  ListenerCheck listener_check;
  {
    internal::MutexLock lock(&state->mu);
    listener_check = state->listener_check;
  }
  if (listener_check) {
    if (absl::Status s = listener_check(); !s.ok()) {
      finish(HealthResult{.reason = "listener_dead", .message = std::string(s.message())});
      return;
    }
  }
  CheckStores(std::make_shared<const std::vector<Store*>>(stores_), 0, std::move(finish));
}

}  // namespace sluice::server
