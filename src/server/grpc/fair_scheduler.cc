#include "src/server/grpc/fair_scheduler.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <utility>

#include "src/util/strings.h"

namespace sluice::server {

// One connection's state, while it has calls in flight.
struct FairScheduler::Connection {
  std::string name;
  size_t in_flight = 0;  // Admitted, not yet released.
  size_t running = 0;    // Tasks running now.
  std::deque<Queued> queue;
  // Deficit round robin: the request bytes it may still run in its turn.
  size_t deficit = 0;
  // Which list of turns it is on: none, the new connections' or the old ones'.
  enum class Ring : uint8_t { kNone, kNew, kOld } ring = Ring::kNone;
  bool busy() const { return running > 0 || !queue.empty(); }
};

namespace {

// What a call costs beside its request bytes, so that empty requests still take turns.
constexpr size_t kCallCost = 64;

int ThreadCount(int wanted) {
  if (wanted > 0) return wanted;
  // One hardware thread is left to the engine's threads, which read every connection: a
  // well-behaved client's call reaches its queue only when they get the CPU. On 2 cores, 2
  // threads here put the probe's p99 during the attack run's flood at 15-26 ms, 1 at 6-7 ms.
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(cores > 1 ? cores - 1 : 1, 1, 8));
}

}  // namespace

FairScheduler::FairScheduler(FairSchedulerOptions options)
    : max_in_flight_(std::max<size_t>(1, options.max_in_flight)),
      reserve_(max_in_flight_ / 8),
      floor_(std::clamp<size_t>(max_in_flight_ / 64, 1, 8)),
      quantum_(std::max<size_t>(1, options.quantum)) {
  const int n = ThreadCount(options.threads);
  threads_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Work(); });
}

FairScheduler::~FairScheduler() {
  {
    internal::MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

FairScheduler::Refusal FairScheduler::Admit(std::string_view connection, Ticket& ticket) {
  internal::MutexLock lock(&mu_);
  if (in_flight_ >= max_in_flight_) {
    ++refused_budget_;
    return Refusal::kBudget;
  }
  auto it = connections_.find(internal::AbslView(connection));
  const size_t held = it == connections_.end() ? 0 : it->second.in_flight;
  if (held >= floor_) {
    // Above its floor a connection draws on the shared part, up to its share of it.
    const size_t shared = max_in_flight_ - reserve_;
    if (in_flight_ >= shared || held >= std::max(floor_, shared / holding_)) {
      ++refused_share_;
      return Refusal::kShare;
    }
  }
  if (it == connections_.end()) {
    it = connections_.try_emplace(std::string(connection)).first;
    it->second.name = it->first;
  }
  Connection& c = it->second;
  if (c.in_flight++ == 0) ++holding_;
  ++in_flight_;
  ticket.connection = &c;
  return Refusal::kNone;
}

void FairScheduler::Run(const Ticket& ticket, size_t cost, absl::FunctionRef<void()> now,
                        absl::FunctionRef<Task()> later) {
  Connection* c = ticket.connection;
  bool alone = false;
  {
    internal::MutexLock lock(&mu_);
    // On this thread when nothing waits and no other connection runs anything: then there is no
    // one to be fair to, and no hand-over to pay.
    alone = queued_ == 0 && (busy_ == 0 || (busy_ == 1 && c->running > 0));
    if (alone) {
      if (!c->busy()) ++busy_;
      ++c->running;
    }
  }
  if (!alone) {
    Queue(c, cost, later());
    return;
  }
  now();
  internal::MutexLock lock(&mu_);
  DoneRunning(c);
}

void FairScheduler::Queue(Connection* c, size_t cost, Task task) {
  {
    internal::MutexLock lock(&mu_);
    if (!c->busy()) ++busy_;
    if (c->ring == Connection::Ring::kNone) {
      // A connection with nothing waiting starts on the new list, a quantum to spend.
      c->ring = Connection::Ring::kNew;
      c->deficit = quantum_;
      new_ring_.push_back(c);
    }
    c->queue.push_back(Queued{.cost = cost + kCallCost, .task = std::move(task)});
    ++queued_;
  }
  work_.notify_one();
}

void FairScheduler::Release(const Ticket& ticket) {
  Connection* c = ticket.connection;
  internal::MutexLock lock(&mu_);
  --in_flight_;
  if (--c->in_flight == 0) {
    --holding_;
    ForgetIfIdle(c);
  }
  if (in_flight_ == 0) idle_.notify_all();
}

void FairScheduler::DoneRunning(Connection* c) {
  --c->running;
  if (!c->busy()) --busy_;
  ForgetIfIdle(c);
}

void FairScheduler::ForgetIfIdle(Connection* c) {
  if (c->in_flight > 0 || c->busy() || c->ring != Connection::Ring::kNone) return;
  auto it = connections_.find(internal::AbslView(c->name));
  connections_.erase(it);
}

FairScheduler::Queued FairScheduler::PopLocked(Connection*& from) {
  using Ring = Connection::Ring;
  for (;;) {
    // The new connections' turns first: a connection that makes a call now and then waits behind
    // no flood, however many connections have calls queued.
    std::deque<Connection*>& ring = new_ring_.empty() ? old_ring_ : new_ring_;
    Connection* c = ring.front();
    if (c->queue.empty()) {
      // Only on the old list: it emptied there, or as a new one (below). Off the lists now.
      ring.pop_front();
      c->ring = Ring::kNone;
      c->deficit = 0;
      ForgetIfIdle(c);
      continue;
    }
    Queued& head = c->queue.front();
    if (c->deficit < head.cost) {
      // Its turn ends: a quantum more for the next, at the end of the old list.
      c->deficit += quantum_;
      ring.pop_front();
      old_ring_.push_back(c);
      c->ring = Ring::kOld;
      continue;
    }
    c->deficit -= head.cost;
    Queued out = std::move(head);
    c->queue.pop_front();
    --queued_;
    if (c->queue.empty() && c->ring == Ring::kNew) {
      // An emptied new connection waits a round on the old list before it can be new again, so
      // that a flood cannot stay new by emptying its queue and filling it again.
      new_ring_.pop_front();
      old_ring_.push_back(c);
      c->ring = Ring::kOld;
    }
    from = c;
    return out;
  }
}

// The analysis cannot follow std::unique_lock over internal::Mutex; every access is under it.
void FairScheduler::Work() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stopping_ || queued_ > 0; });
    if (queued_ == 0) return;  // Stopping, and nothing left to run.
    Connection* c = nullptr;
    Queued next = PopLocked(c);
    ++c->running;
    ++ran_queued_;
    lock.unlock();
    std::move(next.task)();
    lock.lock();
    DoneRunning(c);
  }
}

bool FairScheduler::WaitIdle(std::chrono::milliseconds bound) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, bound,
                        [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return in_flight_ == 0; });
}

FairSchedulerStats FairScheduler::Stats() const {
  internal::MutexLock lock(&mu_);
  return {.in_flight = in_flight_,
          .queued = queued_,
          .refused_budget = refused_budget_,
          .refused_share = refused_share_,
          .ran_queued = ran_queued_};
}

}  // namespace sluice::server
