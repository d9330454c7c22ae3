#include "sluice/redis_store.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <hiredis/hiredis.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sluice/limit.h"

#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/redis_keys.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::RedisServer;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// Long enough that a window boundary during a test is practically impossible, and checked anyway.
constexpr auto kLongPeriod = std::chrono::hours(24 * 366);

// The count of a stored fixed window, whose state is three little-endian 64-bit integers:
// window start, count, expiry (docs/redis.md, "State encoding"), or "" when there is none.
std::string FixedWindowCount(const std::string& state) {
  if (state.size() != 24) return "";
  uint64_t count = 0;
  for (int b = 7; b >= 0; --b) {
    count = (count << 8) | static_cast<unsigned char>(state[8 + static_cast<size_t>(b)]);
  }
  return std::to_string(count);
}

const std::vector<Algorithm> kAllAlgorithms = {Algorithm::kFixedWindow, Algorithm::kSlidingWindow,
                                               Algorithm::kSlidingLog, Algorithm::kTokenBucket,
                                               Algorithm::kGcra};

absl::StatusOr<std::unique_ptr<RedisStore>> MakeStore(const RedisServer& server,
                                                      RedisStoreOptions options = {}) {
  options.url = server.Url();
  // Generous: sanitizer builds on two shared cores must not turn into timeouts.
  options.command_timeout = milliseconds(5000);
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
  if (!store.ok()) return store.status();
  if (absl::Status s = (*store)->WaitForConnection(milliseconds(10000)); !s.ok()) return s;
  return store;
}

class RedisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore(*server_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  std::string Command(const std::vector<std::string>& argv) {
    absl::StatusOr<std::string> r = server_->Command(argv);
    return r.ok() ? *r : r.status().ToString();
  }

  std::vector<std::string> AllKeys() {
    const std::string keys = Command({"KEYS", "*"});
    if (keys.empty()) return {};
    return absl::StrSplit(keys, ' ');
  }

  std::unique_ptr<RedisServer> server_;
  std::unique_ptr<RedisStore> store_;
};

TEST_F(RedisStoreTest, EnforcesEveryAlgorithm) {
  for (Algorithm algorithm : kAllAlgorithms) {
    const Limit limit{.algorithm = algorithm, .limit = 3, .period = std::chrono::minutes(1)};
    const std::string key = absl::StrCat("user:", std::string(AlgorithmName(algorithm)));
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<Decision> d = store_->Check(key, limit, 1);
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_TRUE(d->allowed);
      EXPECT_EQ(d->remaining, 2 - i);
      EXPECT_EQ(d->limit, 3);
    }
    absl::StatusOr<Decision> denied = store_->Check(key, limit, 1);
    ASSERT_TRUE(denied.ok());
    EXPECT_FALSE(denied->allowed);
    EXPECT_GT(denied->retry_after.count(), 0);
    EXPECT_LE(denied->retry_after, denied->reset_after);
  }
  EXPECT_THAT(AllKeys(), SizeIs(kAllAlgorithms.size()));
  EXPECT_EQ(Command({"EXISTS", "sluice:{user:gcra}:gcra"}), "1");
  EXPECT_EQ(store_->Name(), "redis");
}

TEST_F(RedisStoreTest, InvalidInputNeverReachesRedis) {
  const Limit ok{.limit = 3};
  EXPECT_EQ(store_->Check("", ok, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Check("k", ok, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Check("k", ok, kMaxCost + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Check("k", Limit{.limit = 0}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Check("k", Limit{.period = std::chrono::microseconds(1500)}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->CheckAll({}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<LimitCheck> too_many(kMaxChecksPerScript + 1,
                                   LimitCheck{.key = "k", .limit = {}, .cost = 1});
  EXPECT_EQ(store_->CheckAll(too_many).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Stats().script_calls, 0u);
  EXPECT_THAT(AllKeys(), IsEmpty());
}

// Keys with the bytes that break naive schemes each get their own state and a safe Redis key.
TEST_F(RedisStoreTest, HostileKeysAreIsolatedAndBounded) {
  const std::vector<std::string> hostile = {"a",
                                            "a{b}c",
                                            "{a}",
                                            "}",
                                            "{",
                                            "a:b",
                                            "a\r\nb",
                                            std::string("a\0b", 3),
                                            "a%7B",
                                            "#",
                                            "a b",
                                            "\xff\xfe",
                                            std::string(1 << 20, 'x'),
                                            std::string(1 << 20, '{'),
                                            std::string((1 << 20) - 1, 'x') + "y"};
  const Limit one{.limit = 1, .period = kLongPeriod};
  for (const std::string& key : hostile) {
    absl::StatusOr<Decision> d = store_->Check(key, one, 1);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed) << "state shared with another key: " << key.substr(0, 20);
  }
  for (const std::string& key : hostile) {
    EXPECT_FALSE(store_->Check(key, one, 1)->allowed) << key.substr(0, 20);
  }
  const std::vector<std::string> keys = AllKeys();
  EXPECT_THAT(keys, SizeIs(hostile.size()));
  for (const std::string& key : keys) {
    EXPECT_LE(key.size(), kMaxRedisKeyBytes);
    EXPECT_TRUE(key.starts_with("sluice:{")) << key;
    EXPECT_EQ(key.find_first_of(std::string("\r\n\0 ", 4)), std::string::npos) << key;
    EXPECT_NE(Command({"PTTL", key}), "-1") << key;
  }
}

// Reliability T7: SCRIPT FLUSH and FUNCTION FLUSH between and during checks are invisible to
// callers.
TEST_F(RedisStoreTest, ScriptFlushCausesNoErrors) {
  const Limit limit{.algorithm = Algorithm::kSlidingLog, .limit = 100'000, .period = kLongPeriod};
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Command({"SCRIPT", "FLUSH"}), "OK");
    ASSERT_EQ(Command({"FUNCTION", "FLUSH"}), "OK");
    absl::StatusOr<Decision> d = store_->Check("flushed", limit, 1);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed);
  }
  constexpr int kCalls = 3000;
  std::atomic<int> errors{0};
  std::atomic<int> allowed{0};
  std::atomic<int> completed{0};
  // A promise, not absl::Notification: TSan cannot see through Debian's Abseil.
  std::promise<void> all_done;
  for (int i = 0; i < kCalls; ++i) {
    store_->CheckAsync("flushed", limit, 1, [&](absl::StatusOr<Decision> d) {
      if (!d.ok()) {
        errors.fetch_add(1);
      } else if (d->allowed) {
        allowed.fetch_add(1);
      }
      if (completed.fetch_add(1) + 1 == kCalls) all_done.set_value();
    });
    if (i % 400 == 0) {
      ASSERT_EQ(Command({"SCRIPT", "FLUSH"}), "OK");
      ASSERT_EQ(Command({"FUNCTION", "FLUSH"}), "OK");
    }
  }
  all_done.get_future().wait();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(allowed.load(), kCalls);
  EXPECT_EQ(Command({"ZCOUNT", "sluice:{flushed}:sl", "0", "+inf"}), absl::StrCat(kCalls + 5));
  EXPECT_GT(store_->Stats().noscript_resends, 0u);
}

// Verifies that checks run as functions of the library (FCALL) by default, loaded at start, and
// with EVALSHA when use_functions is off.
TEST_F(RedisStoreTest, ChecksRunAsFunctionsUnlessTurnedOff) {
  const Limit limit{.limit = 10, .period = kLongPeriod};
  ASSERT_TRUE(store_->Check("k", limit, 1).ok());
  ASSERT_TRUE(store_
                  ->CheckAll({{LimitCheck{.key = "k", .limit = limit, .cost = 1},
                               LimitCheck{.key = "j", .limit = limit, .cost = 1}}})
                  .ok());
  EXPECT_TRUE(store_->Stats().functions);
  EXPECT_EQ(store_->Stats().noscript_resends, 0u);  // preloaded at start
  EXPECT_THAT(Command({"INFO", "commandstats"}), HasSubstr("cmdstat_fcall:calls=2,"));
  EXPECT_THAT(Command({"FUNCTION", "LIST"}), HasSubstr("_check_all"));

  ASSERT_EQ(Command({"FUNCTION", "FLUSH"}), "OK");
  ASSERT_EQ(Command({"CONFIG", "RESETSTAT"}), "OK");
  absl::StatusOr<std::unique_ptr<RedisStore>> evalsha =
      MakeStore(*server_, {.use_functions = false});
  ASSERT_TRUE(evalsha.ok()) << evalsha.status();
  absl::StatusOr<Decision> d = (*evalsha)->Check("k", limit, 1);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->remaining, 7);  // the same state, whichever way the script runs
  EXPECT_FALSE((*evalsha)->Stats().functions);
  EXPECT_THAT(Command({"INFO", "commandstats"}), HasSubstr("cmdstat_evalsha:calls=1,"));
  EXPECT_THAT(Command({"INFO", "commandstats"}), Not(HasSubstr("cmdstat_fcall")));
  EXPECT_EQ(Command({"FUNCTION", "LIST"}), "");
  // The store URL says the same (sluiced and the middleware take a URL).
  absl::StatusOr<std::unique_ptr<RedisStore>> by_url =
      RedisStore::Create({.url = server_->Url() + "?functions=false"});
  ASSERT_TRUE(by_url.ok()) << by_url.status();
  EXPECT_FALSE((*by_url)->Stats().functions);
}

TEST_F(RedisStoreTest, CheckAllIsAllOrNothing) {
  const std::vector<LimitCheck> checks = {
      {.key = "user:1", .limit = {.limit = 10, .period = kLongPeriod}, .cost = 1},
      {.key = "route:/x",
       .limit = {.algorithm = Algorithm::kGcra, .limit = 5, .period = std::chrono::minutes(1)},
       .cost = 1},
      {.key = "global",
       .limit = {.algorithm = Algorithm::kSlidingLog, .limit = 2, .period = kLongPeriod},
       .cost = 1},
  };
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<MultiDecision> m = store_->CheckAll(checks);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE(m->allowed);
  }
  const std::string before = FixedWindowCount(Command({"GET", "sluice:{user:1}:fw"}));
  absl::StatusOr<MultiDecision> m = store_->CheckAll(checks);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->allowed);
  ASSERT_THAT(m->decisions, SizeIs(3));
  EXPECT_TRUE(m->decisions[0].allowed);  // a peek of the stored state
  EXPECT_EQ(m->decisions[0].remaining, 8);
  EXPECT_FALSE(m->decisions[2].allowed);
  EXPECT_EQ(FixedWindowCount(Command({"GET", "sluice:{user:1}:fw"})), before);
  EXPECT_EQ(before, "2");
}

// With `cluster`, keys of one CheckAll must share a slot; one caller key under several
// algorithms always does.
TEST_F(RedisStoreTest, ClusterModeRequiresOneSlotPerCheckAll) {
  absl::StatusOr<std::unique_ptr<RedisStore>> cluster = MakeStore(*server_, {.cluster = true});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::vector<LimitCheck> same_key = {
      {.key = "user:1", .limit = {.limit = 10}, .cost = 1},
      {.key = "user:1", .limit = {.algorithm = Algorithm::kGcra, .limit = 5}, .cost = 1},
  };
  EXPECT_TRUE((*cluster)->CheckAll(same_key).ok());
  const std::vector<LimitCheck> two_keys = {
      {.key = "user:1", .limit = {.limit = 10}, .cost = 1},
      {.key = "user:2", .limit = {.limit = 10}, .cost = 1},
  };
  absl::StatusOr<MultiDecision> refused = (*cluster)->CheckAll(two_keys);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("slot"));
  EXPECT_TRUE(store_->CheckAll(two_keys).ok());  // a single server takes any keys
}

// The server window of `now`, to detect a window boundary during an exactness test.
int64_t ServerWindow(RedisServer& server) {
  const std::vector<std::string> t = absl::StrSplit(*server.Command({"TIME"}), ' ');
  const int64_t now_us = std::stoll(t[0]) * 1'000'000 + std::stoll(t[1]);
  return now_us / std::chrono::microseconds(kLongPeriod).count();
}

// Reliability T1 (threads): one hot key, many threads: exactly `limit` admitted, never more.
TEST_F(RedisStoreTest, ExactUnderThreads) {
  for (Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingLog}) {
    const Limit limit{.algorithm = algorithm, .limit = 500, .period = kLongPeriod};
    const int64_t window = ServerWindow(*server_);
    std::atomic<int> allowed{0};
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 150; ++i) {
          absl::StatusOr<Decision> d = store_->Check("hot", limit, 1);
          if (!d.ok()) {
            errors.fetch_add(1);
          } else if (d->allowed) {
            allowed.fetch_add(1);
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(ServerWindow(*server_), window) << "crossed a window boundary; rerun";
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(allowed.load(), 500) << AlgorithmName(algorithm);
  }
}

// Reliability T1 (processes): 4 processes, each with its own store and 32 checks in flight at a
// time, on one key: exactly `limit` admitted in total.
TEST(RedisStoreProcesses, ExactAcrossProcesses) {
  absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  constexpr int kProcesses = 4;
  constexpr int kInFlight = 32;
  constexpr int kRounds = 12;  // 4 x 32 x 12 = 1536 offered
  for (Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingLog}) {
    const Limit limit{.algorithm = algorithm, .limit = 1000, .period = kLongPeriod};
    const int64_t window = ServerWindow(**server);
    std::vector<pid_t> children;
    std::vector<int> pipes;
    for (int p = 0; p < kProcesses; ++p) {
      int fds[2];
      ASSERT_EQ(pipe(fds), 0);
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        // Child: its own store (connection, I/O thread); reports "allowed errors" on the pipe.
        close(fds[0]);
        int allowed = 0;
        int errors = 0;
        absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore(**server);
        if (!store.ok()) {
          errors = -1;
        } else {
          for (int round = 0; round < kRounds; ++round) {
            std::atomic<int> pending{kInFlight};
            std::atomic<int> round_allowed{0};
            std::atomic<int> round_errors{0};
            // A promise, not absl::Notification: TSan cannot see through Debian's Abseil.
            std::promise<void> done;
            for (int i = 0; i < kInFlight; ++i) {
              (*store)->CheckAsync("hot", limit, 1, [&](absl::StatusOr<Decision> d) {
                if (!d.ok()) {
                  round_errors.fetch_add(1);
                } else if (d->allowed) {
                  round_allowed.fetch_add(1);
                }
                if (pending.fetch_sub(1) == 1) done.set_value();
              });
            }
            done.get_future().wait();
            allowed += round_allowed.load();
            errors += round_errors.load();
          }
        }
        const std::string report = absl::StrCat(allowed, " ", errors);
        (void)!write(fds[1], report.data(), report.size());
        close(fds[1]);
        _exit(0);
      }
      close(fds[1]);
      children.push_back(pid);
      pipes.push_back(fds[0]);
    }
    int total_allowed = 0;
    int total_errors = 0;
    for (int p = 0; p < kProcesses; ++p) {
      char buffer[64] = {};
      const ssize_t n = read(pipes[p], buffer, sizeof(buffer) - 1);
      close(pipes[p]);
      int status = 0;
      waitpid(children[p], &status, 0);
      ASSERT_GT(n, 0);
      const std::vector<std::string> parts = absl::StrSplit(std::string(buffer, n), ' ');
      total_allowed += std::stoi(parts[0]);
      total_errors += std::stoi(parts[1]);
    }
    ASSERT_EQ(ServerWindow(**server), window) << "crossed a window boundary; rerun";
    EXPECT_EQ(total_errors, 0);
    EXPECT_EQ(total_allowed, 1000) << AlgorithmName(algorithm);
  }
  // The server agrees with what the clients were told.
  EXPECT_EQ(FixedWindowCount(*(*server)->Command({"GET", "sluice:{hot}:fw"})), "1000");
  EXPECT_EQ(*(*server)->Command({"ZCOUNT", "sluice:{hot}:sl", "0", "+inf"}), "1000");
}

// Reliability T14: an evicting maxmemory-policy is reported at start.
TEST(RedisStoreServer, WarnsAboutAnEvictingPolicy) {
  absl::StatusOr<std::unique_ptr<RedisServer>> server =
      RedisServer::Start({.config = {{"maxmemory-policy", "allkeys-lru"}}});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore(**server);
  ASSERT_TRUE(store.ok()) << store.status();
  // One connection answers in order: after this check, the CONFIG GET sent at start is handled.
  ASSERT_TRUE((*store)->Check("k", Limit{}, 1).ok());
  EXPECT_THAT((*store)->Warnings(), ElementsAre(HasSubstr("maxmemory-policy allkeys-lru")));
}

// Reliability T14: at maxmemory with noeviction, a check that must write fails with Unavailable
// (the failure policy's path), a peek still answers, and nothing crashes.
TEST(RedisStoreServer, OutOfMemoryIsUnavailable) {
  absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore(**server);
  ASSERT_TRUE(store.ok()) << store.status();
  const Limit limit{.limit = 10, .period = kLongPeriod};
  ASSERT_TRUE((*store)->Check("k", limit, 1).ok());
  ASSERT_EQ(*(*server)->Command({"CONFIG", "SET", "maxmemory", "1"}), "OK");
  absl::StatusOr<Decision> write = (*store)->Check("k", limit, 1);
  EXPECT_EQ(write.status().code(), absl::StatusCode::kUnavailable) << write.status();
  EXPECT_THAT(write.status().message(), HasSubstr("OOM"));
  absl::StatusOr<Decision> peek = (*store)->Check("k", limit, 0);
  ASSERT_TRUE(peek.ok()) << peek.status();
  EXPECT_EQ(peek->remaining, 9);
  ASSERT_EQ(*(*server)->Command({"CONFIG", "SET", "maxmemory", "0"}), "OK");
  EXPECT_TRUE((*store)->Check("k", limit, 1).ok());
}

// Reliability T15: another client's long script makes Redis answer BUSY; the store reports
// Unavailable at once instead of waiting, and works again afterwards.
TEST(RedisStoreServer, BusyServerIsUnavailable) {
  absl::StatusOr<std::unique_ptr<RedisServer>> server =
      RedisServer::Start({.config = {{"busy-reply-threshold", "100"}}});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<RedisStore>> store = MakeStore(**server);
  ASSERT_TRUE(store.ok()) << store.status();
  const int port = (*server)->port();
  std::thread busy([port] {
    redisContext* c = redisConnect("127.0.0.1", port);
    if (c == nullptr || c->err != 0) return;
    // Spins for 1.5 s of server time without writing.
    auto* r = static_cast<redisReply*>(redisCommand(
        c, "EVAL %s 0",
        "local function ms() local t = redis.call('TIME') return t[1] * 1000 + t[2] / 1000 end "
        "local start = ms() while ms() - start < 1500 do end return 1"));
    if (r != nullptr) freeReplyObject(r);
    redisFree(c);
  });
  // Wait (with a watchdog) until the server reports BUSY.
  bool saw_busy = false;
  for (int i = 0; i < 10'000 && !saw_busy; ++i) {
    absl::StatusOr<std::string> ping = (*server)->Command({"PING"});
    saw_busy = ping.ok() && ping->starts_with("ERR:BUSY");
  }
  ASSERT_TRUE(saw_busy);
  absl::StatusOr<Decision> d = (*store)->Check("k", Limit{}, 1);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable) << d.status();
  EXPECT_THAT(d.status().message(), HasSubstr("BUSY"));
  busy.join();
  EXPECT_TRUE((*store)->Check("k", Limit{}, 1).ok());
}

TEST(RedisStoreCreate, RejectsBadOptions) {
  EXPECT_EQ(RedisStore::Create({.url = "memory"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RedisStore::Create({.url = "http://x"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RedisStore::Create({.key_prefix = "{x}"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RedisStore::Create({.command_timeout = milliseconds(0)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Redis down: checks fail cleanly with Unavailable or DeadlineExceeded, never hang or crash.
TEST(RedisStoreCreate, DownServerGivesCleanErrors) {
  absl::StatusOr<int> port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(
      {.url = absl::StrCat("redis://127.0.0.1:", *port), .command_timeout = milliseconds(200)});
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<Decision> d = (*store)->Check("k", Limit{}, 1);
  EXPECT_TRUE(d.status().code() == absl::StatusCode::kUnavailable ||
              d.status().code() == absl::StatusCode::kDeadlineExceeded)
      << d.status();
}

}  // namespace
}  // namespace sluice
