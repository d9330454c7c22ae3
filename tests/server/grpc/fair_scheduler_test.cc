// FairScheduler: the shares of calls in flight, the reserve for connections with few calls, and
// the round robin of queued calls between connections. No gRPC: this runs under TSan too.
#include "src/server/grpc/fair_scheduler.h"

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "src/util/mutex.h"

namespace sluice::server {
namespace {

using Refusal = FairScheduler::Refusal;

// Admits `n` calls of `connection`; returns how many were admitted, their tickets in `tickets`.
int AdmitMany(FairScheduler& s, const std::string& connection, int n,
              std::vector<FairScheduler::Ticket>& tickets) {
  int admitted = 0;
  for (int i = 0; i < n; ++i) {
    FairScheduler::Ticket t;
    if (s.Admit(connection, t) == Refusal::kNone) {
      tickets.push_back(t);
      ++admitted;
    }
  }
  return admitted;
}

// Runs and releases admitted calls whose tasks do nothing, so that they hold no thread.
void ReleaseAll(FairScheduler& s, std::vector<FairScheduler::Ticket>& tickets) {
  for (const FairScheduler::Ticket& t : tickets) s.Release(t);
  tickets.clear();
}

// Verifies the shares: with a bound of 640 (reserve 80, floor 8, shared 560), a lone connection
// may hold the whole shared part; a second one then gets its floor from the reserve but nothing
// of the used-up shared part; once the first gives back, the shared part is split in two.
TEST(FairScheduler, LoneConnectionTakesTheSharedPartOthersTheirFloor) {
  FairScheduler s({.max_in_flight = 640, .threads = 1});
  std::vector<FairScheduler::Ticket> a;
  std::vector<FairScheduler::Ticket> b;
  EXPECT_EQ(AdmitMany(s, "a", 1000, a), 560);
  EXPECT_EQ(AdmitMany(s, "b", 1000, b), 8);
  EXPECT_EQ(s.Stats().in_flight, 568u);
  EXPECT_EQ(s.Stats().refused_share, 440u + 992u);
  EXPECT_EQ(s.Stats().refused_budget, 0u);
  ReleaseAll(s, a);
  // Two connections hold calls now: each may hold 560 / 2.
  EXPECT_EQ(AdmitMany(s, "a", 1000, a), 280);
  EXPECT_EQ(AdmitMany(s, "b", 1000, b), 272);
  ReleaseAll(s, a);
  ReleaseAll(s, b);
  EXPECT_EQ(s.Stats().in_flight, 0u);
  EXPECT_TRUE(s.WaitIdle(std::chrono::milliseconds(0)));
}

// Verifies the reserve: with the shared part held by a flood, 10 connections that make a few calls
// each (their floor, 8) are all admitted; the bound itself (640) still holds for everyone.
TEST(FairScheduler, ReserveAdmitsFewCallsOfManyConnectionsAfterAFlood) {
  FairScheduler s({.max_in_flight = 640, .threads = 1});
  std::vector<FairScheduler::Ticket> tickets;
  EXPECT_EQ(AdmitMany(s, "flood", 10'000, tickets), 560);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(AdmitMany(s, "client-" + std::to_string(i), 8, tickets), 8) << i;
  }
  EXPECT_EQ(s.Stats().in_flight, 640u);
  FairScheduler::Ticket t;
  EXPECT_EQ(s.Admit("client-new", t), Refusal::kBudget);
  EXPECT_EQ(s.Stats().refused_budget, 1u);
  ReleaseAll(s, tickets);
}

// Verifies a call runs on the caller's thread, before Run() returns, when no other connection has
// calls running or waiting.
TEST(FairScheduler, CallRunsOnTheCallersThreadWhenAlone) {
  FairScheduler s({.threads = 1});
  FairScheduler::Ticket t;
  ASSERT_EQ(s.Admit("a", t), Refusal::kNone);
  std::thread::id ran_on;
  s.Run(
      t, 10, [&] { ran_on = std::this_thread::get_id(); },
      []() -> FairScheduler::Task {
        ADD_FAILURE() << "queued";
        return [] {};
      });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  s.Release(t);
  EXPECT_EQ(s.Stats().ran_queued, 0u);
}

// Verifies the round robin: while one connection's call runs, the calls of three others queue (b
// three, c two, d one, queued in that order); with one thread and a quantum of one call, they run
// b, c, d, b, c, b rather than in the order they came.
TEST(FairScheduler, QueuedCallsRunRoundRobinBetweenConnections) {
  FairScheduler s({.threads = 1, .quantum = 64});
  // "a" runs on a thread of its own until `release_a`, so that every later call queues.
  std::promise<void> a_running;
  std::promise<void> release_a;
  FairScheduler::Ticket a;
  ASSERT_EQ(s.Admit("a", a), Refusal::kNone);
  std::thread a_thread([&] {
    s.Run(
        a, 0,
        [&] {
          a_running.set_value();
          release_a.get_future().wait();
        },
        []() -> FairScheduler::Task { return [] {}; });
    s.Release(a);
  });
  a_running.get_future().wait();
  // The scheduler's one thread is held by the first queued call ("z") until `release_z`, so that
  // the rest queue before any of them runs.
  std::promise<void> z_running;
  std::promise<void> release_z;
  FairScheduler::Ticket z;
  ASSERT_EQ(s.Admit("z", z), Refusal::kNone);
  s.Run(
      z, 0, [] { ADD_FAILURE() << "ran on the caller's thread"; },
      [&]() -> FairScheduler::Task {
        return [&, z] {
          z_running.set_value();
          release_z.get_future().wait();
          s.Release(z);
        };
      });
  z_running.get_future().wait();
  internal::Mutex mu;
  std::string order;
  std::promise<void> all_ran;
  int left = 6;
  for (const char* name : {"b", "b", "b", "c", "c", "d"}) {
    FairScheduler::Ticket t;
    ASSERT_EQ(s.Admit(name, t), Refusal::kNone);
    s.Run(
        t, 0, [] { ADD_FAILURE() << "ran on the caller's thread"; },
        [&, t, name]() -> FairScheduler::Task {
          return [&, t, name] {
            internal::MutexLock lock(&mu);
            order += name;
            s.Release(t);
            if (--left == 0) all_ran.set_value();
          };
        });
  }
  EXPECT_EQ(s.Stats().queued, 6u);
  release_z.set_value();
  all_ran.get_future().wait();
  {
    internal::MutexLock lock(&mu);
    EXPECT_EQ(order, "bcdbcb");
  }
  release_a.set_value();
  a_thread.join();
  EXPECT_TRUE(s.WaitIdle(std::chrono::seconds(10)));
  EXPECT_EQ(s.Stats().ran_queued, 7u);
}

// Verifies a connection with nothing waiting goes first: "f" queues 8 calls (4 per turn at a
// quantum of 4 calls); while its 5th runs, in its second turn, "p" queues one, which runs next,
// before f's turn goes on.
TEST(FairScheduler, ConnectionWithNothingWaitingGoesFirst) {
  FairScheduler s({.threads = 1, .quantum = 256});
  FairScheduler::Ticket a;
  ASSERT_EQ(s.Admit("a", a), Refusal::kNone);
  internal::Mutex mu;
  std::string order;
  std::promise<void> fifth_running;
  std::promise<void> release_fifth;
  std::promise<void> all_ran;
  int left = 9;
  auto task = [&](const std::string& name, FairScheduler::Ticket t, bool hold) {
    return [&, name, t, hold] {
      {
        internal::MutexLock lock(&mu);
        order += name;
      }
      if (hold) {
        fifth_running.set_value();
        release_fifth.get_future().wait();
      }
      s.Release(t);
      internal::MutexLock lock(&mu);
      if (--left == 0) all_ran.set_value();
    };
  };
  // "a" runs on this thread while the others queue, so that nothing runs on the caller's thread.
  s.Run(
      a, 0,
      [&] {
        for (int i = 0; i < 8; ++i) {
          FairScheduler::Ticket t;
          ASSERT_EQ(s.Admit("f", t), Refusal::kNone);
          s.Run(
              t, 0, [] { ADD_FAILURE() << "ran on the caller's thread"; },
              [&, t, i]() -> FairScheduler::Task { return task("f", t, i == 4); });
        }
        fifth_running.get_future().wait();
        FairScheduler::Ticket t;
        ASSERT_EQ(s.Admit("p", t), Refusal::kNone);
        s.Run(
            t, 0, [] { ADD_FAILURE() << "ran on the caller's thread"; },
            [&, t]() -> FairScheduler::Task { return task("p", t, false); });
        release_fifth.set_value();
      },
      []() -> FairScheduler::Task { return [] {}; });
  s.Release(a);
  all_ran.get_future().wait();
  internal::MutexLock lock(&mu);
  EXPECT_EQ(order, "fffffpfff");
}

// Verifies the deficit counts bytes: with a quantum of 1,000 bytes (a call costs its bytes + 64),
// a connection of 936-byte calls runs one per turn while one of 36-byte calls runs ten.
TEST(FairScheduler, TurnsAreSharedByRequestBytes) {
  FairScheduler s({.threads = 1, .quantum = 1000});
  std::promise<void> z_running;
  std::promise<void> release_z;
  FairScheduler::Ticket a;
  ASSERT_EQ(s.Admit("a", a), Refusal::kNone);
  // "a" is busy (running on this thread) while the others queue: Run()'s `now` queues them.
  internal::Mutex mu;
  std::string order;
  std::atomic<int> left{0};
  std::promise<void> all_ran;
  s.Run(
      a, 0,
      [&] {
        FairScheduler::Ticket z;
        ASSERT_EQ(s.Admit("z", z), Refusal::kNone);
        s.Run(
            z, 0, [] { ADD_FAILURE() << "ran on the caller's thread"; },
            [&, z]() -> FairScheduler::Task {
              return [&, z] {
                z_running.set_value();
                release_z.get_future().wait();
                s.Release(z);
              };
            });
        z_running.get_future().wait();
        auto queue = [&](const std::string& name, size_t bytes, int n) {
          for (int i = 0; i < n; ++i) {
            FairScheduler::Ticket t;
            ASSERT_EQ(s.Admit(name, t), Refusal::kNone);
            left.fetch_add(1);
            s.Run(
                t, bytes, [] { ADD_FAILURE() << "ran on the caller's thread"; },
                [&, t, name]() -> FairScheduler::Task {
                  return [&, t, name] {
                    internal::MutexLock lock(&mu);
                    order += name;
                    s.Release(t);
                    if (left.fetch_sub(1) == 1) all_ran.set_value();
                  };
                });
          }
        };
        queue("B", 936, 2);
        queue("s", 36, 20);
      },
      []() -> FairScheduler::Task { return [] {}; });
  s.Release(a);
  release_z.set_value();
  all_ran.get_future().wait();
  internal::MutexLock lock(&mu);
  EXPECT_EQ(order,
            "Bssssssssss"
            "Bssssssssss");
}

}  // namespace
}  // namespace sluice::server
