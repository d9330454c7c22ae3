#include "src/server/config_reloader.h"

#include <condition_variable>
#include <optional>
#include <utility>

#include "src/util/mutex.h"

namespace sluice::server {

struct ConfigReloader::State {
  State(Load l, Apply a) : load(std::move(l)), apply(std::move(a)) {}

  const Load load;
  const Apply apply;
  internal::Mutex mu;
  std::condition_variable_any changed;
  // The reason of the next load; empty when none is asked for.
  std::optional<std::string> pending ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool finished ABSL_GUARDED_BY(mu) = false;
};

ConfigReloader::ConfigReloader(Load load, Apply apply, ConfigReloaderOptions options)
    : options_(options), state_(std::make_shared<State>(std::move(load), std::move(apply))) {
  thread_ = std::thread([state = state_] { Run(state); });
}

ConfigReloader::~ConfigReloader() { Stop(options_.stop_bound); }

void ConfigReloader::Run(const std::shared_ptr<State>& state) {
  auto finish = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
    state->finished = true;
    state->changed.notify_all();
  };
  for (;;) {
    std::string why;
    {
      internal::MutexLock lock(&state->mu);
      state->changed.wait(state->mu, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
        return state->stopping || state->pending.has_value();
      });
      if (state->stopping) return finish();
      why = *std::move(state->pending);
      state->pending.reset();
    }
    // Without the lock: Request() and Stop() never wait for a load.
    Result config = state->load();
    internal::MutexLock lock(&state->mu);
    // Stopped meanwhile: the objects `apply` refers to may be gone.
    if (state->stopping) return finish();
    // Under the lock, so that Stop() returns only once no apply runs (applying is quick).
    state->apply(why, std::move(config));
  }
}

void ConfigReloader::Request(std::string why) {
  {
    internal::MutexLock lock(&state_->mu);
    if (state_->stopping) return;
    state_->pending = std::move(why);
  }
  state_->changed.notify_all();
}

bool ConfigReloader::Stop(std::chrono::milliseconds bound) {
  if (!thread_.joinable()) return true;
  bool finished = false;
  {
    internal::MutexLock lock(&state_->mu);
    state_->stopping = true;
    state_->changed.notify_all();
    finished = state_->changed.wait_for(
        state_->mu, bound,
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) { return state_->finished; });
  }
  if (finished) {
    thread_.join();
  } else {
    // The load keeps only `state` alive, and will not apply: let it finish parsing on its own.
    thread_.detach();
  }
  return finished;
}

}  // namespace sluice::server
