// FairScheduler: shares a server's calls in flight and its decision time between the connections
// the calls came on, so that a flood from one client does not starve the others. Both gRPC engines
// use it through RlsGrpcService (rls_grpc_service.h); it knows nothing of gRPC or rate limiting.
//
// Calls in flight. `max_in_flight` bounds the calls admitted and not yet answered (waiting to run,
// running, or waiting for the store). Of it, a reserve of `max_in_flight / 8` is kept for
// connections with fewer than `floor` calls in flight (floor = max_in_flight / 64, between 1 and
// 8), and the rest is shared: a connection at or above its floor is admitted only while the shared
// part is not used up and it holds fewer than shared / (connections holding calls). So a lone
// client may use the whole shared part, a flood on any number of connections at most that, and a
// client that makes a few calls at a time is not refused while fewer than reserve / floor
// connections (156 at the default 10,000) sit at their floor. Admit() says which bound refused a
// call; the caller answers it at once, before reading the request.
//
// Decision time. A call runs on the caller's thread (the engine's) while no other connection has
// calls running or waiting: one busy client, or a quiet server, pays nothing more than a lock.
// Otherwise the call waits in its connection's queue, and `threads` threads of the scheduler's own
// run the queues by deficit round robin (each turn a connection may run calls worth `quantum`
// request bytes, its unused part kept while it has calls waiting), so a connection with one call
// waits for at most one call of each other busy connection, however many the others have queued.
// The engine's threads then only admit and queue: they keep reading every connection, which is
// what lets a client's call reach its queue at all while a flood arrives on the others.
//
// Example:
//   FairScheduler scheduler({.max_in_flight = 10'000});
//   FairScheduler::Ticket ticket;
//   if (scheduler.Admit(peer, ticket) != FairScheduler::Refusal::kNone) return Refuse();
//   scheduler.Run(ticket, request.size(), [&] { Decide(request); },
//                 [&] { return [copy = std::string(request)] { Decide(copy); }; });
//   ...  // when the call is answered, on any thread:
//   scheduler.Release(ticket);
//
// Thread safety: thread-safe. Tasks run on the caller's thread or on the scheduler's threads.
#ifndef SLUICE_SERVER_GRPC_FAIR_SCHEDULER_H_
#define SLUICE_SERVER_GRPC_FAIR_SCHEDULER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"

#include "src/util/mutex.h"

namespace sluice::server {

struct FairSchedulerOptions {
  // Calls admitted and not yet answered, over all connections. Default: 10,000.
  size_t max_in_flight = 10'000;
  // Threads that run the queued calls; 0: one per hardware thread but one, at least 1 and at
  // most 8. Default: 0.
  int threads = 0;
  // Request bytes a connection may run per round-robin turn (a call costs its request's bytes plus
  // 64). Default: 1 KiB (one call of about 60 descriptors).
  size_t quantum = 1024;
};

struct FairSchedulerStats {
  // Calls admitted and not yet answered.
  size_t in_flight = 0;
  // Calls waiting in the queues now.
  size_t queued = 0;
  // Calls refused because `max_in_flight` were in flight.
  uint64_t refused_budget = 0;
  // Calls refused because their connection held its share.
  uint64_t refused_share = 0;
  // Calls that ran queued (on the scheduler's threads) rather than on the caller's.
  uint64_t ran_queued = 0;
};

class FairScheduler {
 public:
  enum class Refusal { kNone, kBudget, kShare };
  using Task = absl::AnyInvocable<void() &&>;
  struct Connection;
  // One admitted call: given to Run() once and to Release() once.
  struct Ticket {
    Connection* connection = nullptr;
  };

  explicit FairScheduler(FairSchedulerOptions options);
  FairScheduler(const FairScheduler&) = delete;
  FairScheduler& operator=(const FairScheduler&) = delete;
  // Runs what is still queued, then joins the threads.
  ~FairScheduler();

  // FairScheduler::Admit()
  //
  // Counts a call of `connection` (any name unique among the open connections, e.g. the peer
  // address) in flight and fills `ticket`: kNone. Or refuses it and counts nothing: kBudget when
  // `max_in_flight` are in flight, kShare when the connection holds its share.
  [[nodiscard]] Refusal Admit(std::string_view connection, Ticket& ticket);

  // FairScheduler::Run()
  //
  // Runs the admitted call: `now()` on this thread, before returning, when no other connection
  // has calls running or waiting; otherwise queues `later()` (which must own what the call needs)
  // to run on a scheduler thread in its connection's turn. `cost` is the request's size in bytes.
  void Run(const Ticket& ticket, size_t cost, absl::FunctionRef<void()> now,
           absl::FunctionRef<Task()> later);

  // FairScheduler::Release()
  //
  // The admitted call was answered: it no longer counts in flight. From any thread, once per
  // admitted call, after its task has started.
  void Release(const Ticket& ticket);

  // Waits up to `bound` until no call is in flight; false if some still are. After true, no
  // Release() touches this object again.
  bool WaitIdle(std::chrono::milliseconds bound);

  FairSchedulerStats Stats() const;

 private:
  struct Queued {
    size_t cost;
    Task task;
  };
  void Work();
  void Queue(Connection* c, size_t cost, Task task);
  // Pops the next call by deficit round robin; REQUIRES: queued_ > 0.
  Queued PopLocked(Connection*& from) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DoneRunning(Connection* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForgetIfIdle(Connection* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_in_flight_;
  const size_t reserve_;
  const size_t floor_;
  const size_t quantum_;
  mutable internal::Mutex mu_;
  std::condition_variable_any work_;  // A call was queued, or stopping.
  std::condition_variable_any idle_;  // in_flight_ reached 0.
  absl::node_hash_map<std::string, Connection> connections_ ABSL_GUARDED_BY(mu_);
  // Connections with calls waiting, in round-robin order: those that had none waiting when they
  // queued (served first), and the others.
  std::deque<Connection*> new_ring_ ABSL_GUARDED_BY(mu_);
  std::deque<Connection*> old_ring_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  // Connections with calls running or waiting to run.
  size_t busy_ ABSL_GUARDED_BY(mu_) = 0;
  // Connections with calls in flight.
  size_t holding_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_budget_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_share_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t ran_queued_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_GRPC_FAIR_SCHEDULER_H_
