#include "bench/lease_error/count_and_flush.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include <hiredis/hiredis.h>

namespace sluice::lease_error {
namespace {

timeval ToTimeval(std::chrono::milliseconds d) {
  return timeval{.tv_sec = static_cast<time_t>(d.count() / 1000),
                 .tv_usec = static_cast<suseconds_t>(d.count() % 1000 * 1000)};
}

}  // namespace

absl::StatusOr<std::unique_ptr<CountAndFlushStore>> CountAndFlushStore::Create(
    const CountAndFlushOptions& options) {
  if (options.clock == nullptr || options.flush_every <= std::chrono::milliseconds::zero()) {
    return absl::InvalidArgumentError("count-and-flush: a clock and a positive flush interval");
  }
  absl::StatusOr<std::unique_ptr<MemoryStore>> local =
      MemoryStore::Create({.clock = options.clock});
  if (!local.ok()) return local.status();
  return std::unique_ptr<CountAndFlushStore>(new CountAndFlushStore(options, *std::move(local)));
}

CountAndFlushStore::CountAndFlushStore(CountAndFlushOptions options,
                                       std::unique_ptr<MemoryStore> local)
    : options_(std::move(options)), local_(std::move(local)) {
  flusher_ = std::thread([this] { FlushLoop(); });
}

CountAndFlushStore::~CountAndFlushStore() {
  stop_.Notify();
  flusher_.join();
  if (redis_ != nullptr) redisFree(redis_);
}

CountAndFlushStats CountAndFlushStore::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void CountAndFlushStore::Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) {
  if (checks.size() != 1) {
    std::move(done)(absl::UnimplementedError("count-and-flush: one check per call"));
    return;
  }
  const LimitCheck& check = checks[0];
  const int64_t now = options_.clock->EpochNow().count();
  const int64_t period = check.limit.period.count();
  const int64_t window = now / period;
  {
    absl::MutexLock lock(&mu_);
    KeyState& state = keys_[check.key];
    state.limit = check.limit;
    state.window = std::max(state.window, window);
    if (state.blocked_window == window && check.cost > 0) {
      // The global count reached the limit in this window: deny until it ends.
      ++stats_.local_denials;
      const std::chrono::microseconds wait((window + 1) * period - now);
      std::move(done)(MultiDecision{.allowed = false,
                                    .decisions = {Decision{.allowed = false,
                                                           .limit = check.limit.Capacity(),
                                                           .remaining = 0,
                                                           .reset_after = wait,
                                                           .retry_after = wait}}});
      return;
    }
  }
  absl::StatusOr<Decision> local = local_->Check(check.key, check.limit, check.cost);
  if (!local.ok()) {
    std::move(done)(std::move(local).status());
    return;
  }
  if (local->allowed && check.cost > 0) {
    absl::MutexLock lock(&mu_);
    keys_[check.key].pending[window] += check.cost;
  }
  const bool allowed = local->allowed;
  std::move(done)(MultiDecision{.allowed = allowed, .decisions = {*std::move(local)}});
}

void CountAndFlushStore::FlushLoop() {
  const absl::Duration every = absl::FromChrono(options_.flush_every);
  while (!stop_.WaitForNotificationWithTimeout(every)) Flush();
}

bool CountAndFlushStore::Connect() {
  if (redis_ != nullptr && redis_->err == 0) return true;
  if (redis_ != nullptr) redisFree(redis_);
  redis_ = redisConnectWithTimeout(options_.host.c_str(), options_.port,
                                   ToTimeval(options_.redis_timeout));
  if (redis_ == nullptr || redis_->err != 0) return false;
  return redisSetTimeout(redis_, ToTimeval(options_.redis_timeout)) == REDIS_OK;
}

void CountAndFlushStore::Flush() {
  struct Item {
    std::string key;  // the caller's key
    std::string counter;
    int64_t window = 0;
    int64_t delta = 0;
    int64_t limit = 0;
    int64_t ttl_ms = 0;
  };
  const int64_t now = options_.clock->EpochNow().count();
  std::vector<Item> items;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = keys_.begin(); it != keys_.end();) {
      KeyState& state = it->second;
      const int64_t period = state.limit.period.count();
      const int64_t current = now / period;
      const int64_t ttl_ms = 2 * period / 1000 + 1000;
      bool read_current = state.window == current;
      for (const auto& [window, delta] : state.pending) {
        items.push_back({.key = it->first,
                         .counter = absl::StrCat(options_.key_prefix, it->first, ":", window),
                         .window = window,
                         .delta = delta,
                         .limit = state.limit.limit,
                         .ttl_ms = ttl_ms});
        if (window == current) read_current = false;
      }
      state.pending.clear();
      if (read_current) {
        // Nothing admitted here since the last flush: read the global count all the same (INCRBY
        // 0), so that this instance learns when the others have used up the window.
        items.push_back({.key = it->first,
                         .counter = absl::StrCat(options_.key_prefix, it->first, ":", current),
                         .window = current,
                         .delta = 0,
                         .limit = state.limit.limit,
                         .ttl_ms = ttl_ms});
      }
      if (state.window < current - 2 && state.pending.empty()) {
        keys_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  if (items.empty()) return;
  size_t confirmed = 0;
  std::vector<int64_t> totals(items.size(), 0);
  if (Connect()) {
    for (const Item& item : items) {
      redisAppendCommand(redis_, "INCRBY %b %lld", item.counter.data(), item.counter.size(),
                         static_cast<long long>(item.delta));
      redisAppendCommand(redis_, "PEXPIRE %b %lld", item.counter.data(), item.counter.size(),
                         static_cast<long long>(item.ttl_ms));
    }
    for (; confirmed < items.size(); ++confirmed) {
      void* incr = nullptr;
      void* expire = nullptr;
      if (redisGetReply(redis_, &incr) != REDIS_OK) break;
      const auto* reply = static_cast<redisReply*>(incr);
      const bool ok = reply != nullptr && reply->type == REDIS_REPLY_INTEGER;
      if (ok) totals[confirmed] = reply->integer;
      freeReplyObject(incr);
      if (!ok || redisGetReply(redis_, &expire) != REDIS_OK) break;
      freeReplyObject(expire);
    }
  }
  absl::MutexLock lock(&mu_);
  if (confirmed < items.size()) {
    ++stats_.failed_flushes;
  } else {
    ++stats_.flushes;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = keys_.find(items[i].key);
    if (it == keys_.end()) continue;
    if (i >= confirmed) {
      // Not confirmed: keep the units for the next flush (the peers retry too; a command that ran
      // without its reply arriving is then counted twice, which only denies more).
      if (items[i].delta > 0) it->second.pending[items[i].window] += items[i].delta;
      continue;
    }
    if (totals[i] >= items[i].limit && items[i].window == now / it->second.limit.period.count()) {
      it->second.blocked_window = items[i].window;
    }
  }
}

}  // namespace sluice::lease_error
