#include "src/store/redis/script_runner.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/store_url.h"

#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_error.h"
#include "src/store/redis/lua_scripts.h"
#include "tests/testing/fake_redis_server.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::EndpointOf;
using ::sluice::testing::FakeRedisServer;
using ::sluice::testing::RedisServer;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// A one-shot event between a callback's thread and the test. (absl::Notification would do, but
// its release happens inside the Abseil library, which ThreadSanitizer does not see, so reading
// what the callback wrote would be reported as a race.)
class Notification {
 public:
  void Notify() { promise_.set_value(); }
  void WaitForNotification() { future_.wait(); }

 private:
  std::promise<void> promise_;
  std::future<void> future_ = promise_.get_future();
};

// Counts its runs in a key, so a test can tell how often Redis ran it.
constexpr std::string_view kCountingScript =
    "local n = redis.call('INCR', KEYS[1])\n"
    "if ARGV[1] == 'fail' then return redis.error_reply('TESTFAIL after counting') end\n"
    "return n";

// Counts its run, then keeps Redis busy for ARGV[1] ms (longer than the test's timeout).
constexpr std::string_view kSlowScript =
    "redis.call('INCR', KEYS[1])\n"
    "local function now() local t = redis.call('TIME') return t[1] * 1000 + t[2] / 1000 end\n"
    "local start = now()\n"
    "while now() - start < tonumber(ARGV[1]) do end\n"
    "return 1";

// The counting script as the function of a library: what lua_scripts.cmake makes of the store's
// scripts, in miniature (MakeLuaLibrary() puts the version in place of @VERSION@).
constexpr std::string_view kCountingLibrarySource =
    "#!lua name=sluice_@VERSION@\n"
    "local function Count(keys, args)\n"
    "  local n = redis.call('INCR', keys[1])\n"
    "  if args[1] == 'fail' then return redis.error_reply('TESTFAIL after counting') end\n"
    "  return n\n"
    "end\n"
    "redis.register_function('sluice_@VERSION@_counting', Count)\n";

const LuaLibrary& CountingLibrary() {
  static const LuaLibrary* const library = new LuaLibrary(MakeLuaLibrary(kCountingLibrarySource));
  return *library;
}

// The counting script, also the function "<library>_counting".
const LuaScript& CountingFunction() {
  static const LuaScript* const script =
      new LuaScript(MakeLibraryScript("counting", kCountingScript, CountingLibrary()));
  return *script;
}

// How many times the server ran `command` ("fcall"), from INFO commandstats.
int64_t CommandCalls(RedisServer& server, const std::string& command) {
  absl::StatusOr<std::string> info = server.Command({"INFO", "commandstats"});
  if (!info.ok()) return -1;
  const std::string needle = absl::StrCat("cmdstat_", command, ":calls=");
  const size_t at = info->find(needle);
  return at == std::string::npos ? 0 : std::stoll(info->substr(at + needle.size()));
}

class ScriptRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(server_->Url());
    ASSERT_TRUE(url.ok());
    absl::StatusOr<std::unique_ptr<RedisClient>> client =
        RedisClient::Create({.endpoint = EndpointOf(*url), .command_timeout = milliseconds(2000)});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::shared_ptr<RedisClient>(std::move(*client));
    ASSERT_TRUE(client_->WaitForConnection(milliseconds(5000)).ok());
    runner_ =
        std::make_unique<ScriptRunner>(client_, ScriptRunnerOptions{.timeout = milliseconds(2000)});
  }

  absl::StatusOr<RedisReply> RunSync(const LuaScript& script, const std::vector<std::string>& keys,
                                     const std::vector<std::string>& args) {
    Notification done;
    absl::StatusOr<RedisReply> result;
    runner_->Run(script, keys, args, [&](absl::StatusOr<RedisReply> reply) {
      result = std::move(reply);
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  }

  std::string Get(const std::string& key) { return *server_->Command({"GET", key}); }

  std::unique_ptr<RedisServer> server_;
  std::shared_ptr<RedisClient> client_;
  std::unique_ptr<ScriptRunner> runner_;
};

TEST_F(ScriptRunnerTest, LoadsAnUnknownScriptTransparently) {
  const LuaScript script = MakeLuaScript("counting", kCountingScript);
  absl::StatusOr<RedisReply> first = RunSync(script, {"n"}, {"ok"});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->DebugString(), "1");
  EXPECT_EQ(runner_->Stats().noscript_resends, 1u);
  // Now cached: a plain EVALSHA.
  EXPECT_EQ(RunSync(script, {"n"}, {"ok"})->DebugString(), "2");
  EXPECT_EQ(runner_->Stats().noscript_resends, 1u);
  EXPECT_EQ(*server_->Command({"SCRIPT", "EXISTS", script.sha1}), "1");
}

TEST_F(ScriptRunnerTest, RecoversFromScriptFlushBetweenCalls) {
  const LuaScript script = MakeLuaScript("counting", kCountingScript);
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(server_->Command({"SCRIPT", "FLUSH"}).ok());
    absl::StatusOr<RedisReply> reply = RunSync(script, {"n"}, {"ok"});
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->DebugString(), absl::StrCat(i));  // ran exactly once per call
  }
  EXPECT_EQ(runner_->Stats().noscript_resends, 5u);
}

// Verifies that an error reply other than NOSCRIPT is final: the script ran, so a resend would
// run it twice.
TEST_F(ScriptRunnerTest, OtherErrorRepliesAreNotResent) {
  const LuaScript script = MakeLuaScript("counting", kCountingScript);
  ASSERT_TRUE(RunSync(script, {"n"}, {"ok"}).ok());
  absl::StatusOr<RedisReply> reply = RunSync(script, {"n"}, {"fail"});
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->is_error());
  EXPECT_THAT(reply->str(), HasSubstr("TESTFAIL"));
  EXPECT_EQ(Get("n"), "2");
}

// Verifies that a call whose outcome is unknown (timed out) is never resent.
TEST_F(ScriptRunnerTest, TimedOutCallsAreNotResent) {
  const LuaScript slow = MakeLuaScript("slow", kSlowScript);
  ScriptRunner impatient(client_, {.timeout = milliseconds(50)});
  // Load it first so that the timed-out call is the script itself, not the load.
  ASSERT_TRUE(RunSync(slow, {"slow"}, {"0"}).ok());
  Notification done;
  absl::StatusOr<RedisReply> result;
  impatient.Run(slow, {"slow"}, {"300"}, [&](absl::StatusOr<RedisReply> reply) {
    result = std::move(reply);
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
  // A later command waits for the slow script on the server, then sees exactly one more run.
  EXPECT_EQ(RunSync(MakeLuaScript("get", "return redis.call('GET', KEYS[1])"), {"slow"}, {})
                ->DebugString(),
            "\"2\"");
  EXPECT_EQ(impatient.Stats().noscript_resends, 0u);
}

TEST_F(ScriptRunnerTest, PreloadVerifiesTheSha) {
  Notification done;
  absl::Status status;
  runner_->Preload(CheckScript(), [&](absl::Status s) {
    status = s;
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(*server_->Command({"SCRIPT", "EXISTS", CheckScript().sha1}), "1");
}

// Reliability T7: SCRIPT FLUSH while many calls are in flight; no caller sees an error and every
// call runs exactly once.
TEST_F(ScriptRunnerTest, FlushDuringConcurrentCallsCausesNoErrors) {
  const LuaScript script = MakeLuaScript("counting", kCountingScript);
  constexpr int kCalls = 4000;
  std::atomic<int> errors{0};
  std::atomic<int> completed{0};
  Notification all_done;
  for (int i = 0; i < kCalls; ++i) {
    runner_->Run(script, {"n"}, {"ok"}, [&](absl::StatusOr<RedisReply> reply) {
      if (!reply.ok() || reply->is_error()) errors.fetch_add(1);
      if (completed.fetch_add(1) + 1 == kCalls) all_done.Notify();
    });
    if (i % 500 == 0) {
      // Through the same client: ordered with the calls on the one connection.
      client_->Send({"SCRIPT", "FLUSH"}, [](absl::StatusOr<RedisReply>) {});
    }
    if (i % 700 == 0) {
      ASSERT_TRUE(server_->Command({"SCRIPT", "FLUSH"}).ok());
    }
  }
  all_done.WaitForNotification();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(Get("n"), absl::StrCat(kCalls));
  EXPECT_GT(runner_->Stats().noscript_resends, 0u);
}

TEST_F(ScriptRunnerTest, RunsAScriptOfALibraryAsAFunction) {
  const LuaScript& script = CountingFunction();
  // The first call finds no function: the runner resends it once as EVAL, and loads the library.
  absl::StatusOr<RedisReply> first = RunSync(script, {"n"}, {"ok"});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->DebugString(), "1");
  EXPECT_EQ(runner_->Stats().noscript_resends, 1u);
  EXPECT_EQ(RunSync(script, {"n"}, {"ok"})->DebugString(), "2");
  EXPECT_EQ(runner_->Stats().noscript_resends, 1u);
  EXPECT_TRUE(runner_->Stats().functions);
  EXPECT_EQ(CommandCalls(*server_, "fcall"), 2);
  EXPECT_EQ(CommandCalls(*server_, "eval"), 1);
  EXPECT_EQ(CommandCalls(*server_, "evalsha"), 0);
  EXPECT_THAT(*server_->Command({"FUNCTION", "LIST", "LIBRARYNAME", CountingLibrary().name}),
              HasSubstr(script.function));
}

TEST_F(ScriptRunnerTest, RunsScriptsWithEvalshaWhenFunctionsAreOff) {
  ScriptRunner evalsha(client_, {.timeout = milliseconds(2000), .use_functions = false});
  Notification done;
  evalsha.Run(CountingFunction(), {"n"}, {"ok"}, [&](absl::StatusOr<RedisReply> reply) {
    EXPECT_TRUE(reply.ok() && reply->DebugString() == "1") << reply.status();
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_FALSE(evalsha.Stats().functions);
  EXPECT_EQ(CommandCalls(*server_, "fcall"), 0);
  EXPECT_EQ(*server_->Command({"FUNCTION", "LIST"}), "");
}

// Verifies that a call whose function errs is final, as a script's error is: it ran.
TEST_F(ScriptRunnerTest, FunctionErrorsAreNotResent) {
  ASSERT_TRUE(RunSync(CountingFunction(), {"n"}, {"ok"}).ok());
  absl::StatusOr<RedisReply> reply = RunSync(CountingFunction(), {"n"}, {"fail"});
  ASSERT_TRUE(reply.ok());
  EXPECT_THAT(reply->str(), HasSubstr("TESTFAIL"));
  EXPECT_EQ(Get("n"), "2");
  EXPECT_EQ(runner_->Stats().noscript_resends, 1u);  // the first load only
}

// FUNCTION FLUSH (and SCRIPT FLUSH) while many calls are in flight; no caller sees an error and
// every call runs exactly once.
TEST_F(ScriptRunnerTest, FunctionFlushDuringConcurrentCallsCausesNoErrors) {
  constexpr int kCalls = 4000;
  std::atomic<int> errors{0};
  std::atomic<int> completed{0};
  Notification all_done;
  for (int i = 0; i < kCalls; ++i) {
    runner_->Run(CountingFunction(), {"n"}, {"ok"}, [&](absl::StatusOr<RedisReply> reply) {
      if (!reply.ok() || reply->is_error()) errors.fetch_add(1);
      if (completed.fetch_add(1) + 1 == kCalls) all_done.Notify();
    });
    if (i % 500 == 0) {
      // Through the same client: ordered with the calls on the one connection.
      client_->Send({"FUNCTION", "FLUSH"}, [](absl::StatusOr<RedisReply>) {});
    }
    if (i % 700 == 0) {
      ASSERT_TRUE(server_->Command({"FUNCTION", "FLUSH"}).ok());
      ASSERT_TRUE(server_->Command({"SCRIPT", "FLUSH"}).ok());
    }
  }
  all_done.WaitForNotification();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(Get("n"), absl::StrCat(kCalls));
  EXPECT_GT(runner_->Stats().noscript_resends, 1u);
  EXPECT_TRUE(runner_->Stats().functions);
}

// Verifies that a server whose ACL refuses FUNCTION LOAD gets the call as EVAL, and EVALSHA from
// then on.
TEST_F(ScriptRunnerTest, FallsBackToScriptsWhenFunctionLoadIsRefused) {
  ASSERT_EQ(*server_->Command({"ACL", "SETUSER", "nofunction", "on", ">secret", "~*", "&*", "+@all",
                               "-function"}),
            "OK");
  absl::StatusOr<StoreUrl> url =
      ParseStoreUrl(absl::StrCat("redis://nofunction:secret@127.0.0.1:", server_->port()));
  ASSERT_TRUE(url.ok()) << url.status();
  absl::StatusOr<std::unique_ptr<RedisClient>> limited =
      RedisClient::Create({.endpoint = EndpointOf(*url), .command_timeout = milliseconds(2000)});
  ASSERT_TRUE(limited.ok()) << limited.status();
  std::shared_ptr<RedisClient> client(std::move(*limited));
  ASSERT_TRUE(client->WaitForConnection(milliseconds(5000)).ok());
  ScriptRunner runner(client, {.timeout = milliseconds(2000)});
  for (int i = 1; i <= 3; ++i) {
    Notification done;
    runner.Run(CountingFunction(), {"n"}, {"ok"}, [&](absl::StatusOr<RedisReply> reply) {
      EXPECT_TRUE(reply.ok() && reply->DebugString() == absl::StrCat(i)) << reply.status();
      done.Notify();
    });
    done.WaitForNotification();
  }
  EXPECT_FALSE(runner.Stats().functions);
  EXPECT_EQ(runner.Stats().noscript_resends, 1u);  // the first call, as EVAL
  EXPECT_EQ(CommandCalls(*server_, "evalsha"), 2);
  EXPECT_EQ(Get("n"), "3");
}

// Verifies that a server without functions (before Redis 7.0, here a fake answering as 6.2 does)
// gets the call as EVAL, and EVALSHA from then on; PrepareOn() loads the scripts there instead.
TEST(ScriptRunnerOldServer, FallsBackToScriptsWithoutFunctions) {
  std::atomic<int> evals{0};
  std::atomic<int> script_loads{0};
  FakeRedisServer fake([&](FakeRedisServer::Connection& c, const std::vector<std::string>& argv) {
    if (argv[0] == "FCALL" || argv[0] == "FUNCTION") {
      c.Write(absl::StrCat("-ERR unknown command `", argv[0], "`, with args beginning with: \r\n"));
    } else if (argv[0] == "EVAL") {
      evals.fetch_add(1);
      c.Write(":7\r\n");
    } else if (argv[0] == "EVALSHA") {
      c.Write(":8\r\n");
    } else if (argv[0] == "SCRIPT") {
      script_loads.fetch_add(1);
      c.Write(absl::StrCat("$40\r\n", CountingFunction().sha1, "\r\n"));
    } else {
      c.Write("+OK\r\n");
    }
  });
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(absl::StrCat("redis://127.0.0.1:", fake.port()));
  ASSERT_TRUE(url.ok());
  absl::StatusOr<std::unique_ptr<RedisClient>> created =
      RedisClient::Create({.endpoint = EndpointOf(*url), .command_timeout = milliseconds(2000)});
  ASSERT_TRUE(created.ok()) << created.status();
  std::shared_ptr<RedisClient> client(std::move(*created));
  ASSERT_TRUE(client->WaitForConnection(milliseconds(5000)).ok());
  ScriptRunner runner(client, {.timeout = milliseconds(2000)});
  auto run = [&runner] {
    Notification done;
    std::string got;
    runner.Run(CountingFunction(), {"n"}, {"ok"}, [&](absl::StatusOr<RedisReply> reply) {
      got = reply.ok() ? reply->DebugString() : reply.status().ToString();
      done.Notify();
    });
    done.WaitForNotification();
    return got;
  };
  EXPECT_EQ(run(), "7");  // FCALL, unknown: resent as EVAL
  EXPECT_FALSE(runner.Stats().functions);
  EXPECT_EQ(run(), "8");  // EVALSHA from now on
  EXPECT_EQ(evals.load(), 1);
  // Preparing a server without functions loads the scripts (with functions off, straight away).
  const LuaScript* const scripts[] = {&CountingFunction()};
  Notification prepared;
  runner.PrepareOn(client, scripts, [&](std::string_view name, absl::Status status) {
    EXPECT_EQ(name, "counting");
    EXPECT_TRUE(status.ok()) << status;
    prepared.Notify();
  });
  prepared.WaitForNotification();
  EXPECT_EQ(script_loads.load(), 1);
}

TEST_F(ScriptRunnerTest, PrepareOnLoadsTheLibraryOnce) {
  const LuaScript* const scripts[] = {&CountingFunction()};
  for (int i = 0; i < 2; ++i) {  // the second finds it loaded already: fine
    Notification done;
    runner_->PrepareOn(client_, scripts, [&](std::string_view name, absl::Status status) {
      EXPECT_EQ(name, CountingLibrary().name);
      EXPECT_TRUE(status.ok()) << status;
      done.Notify();
    });
    done.WaitForNotification();
  }
  EXPECT_TRUE(runner_->Stats().functions);
  EXPECT_EQ(RunSync(CountingFunction(), {"n"}, {"ok"})->DebugString(), "1");
  EXPECT_EQ(runner_->Stats().noscript_resends, 0u);
}

// Verifies that under maxmemory, where Redis refuses a function that may write before it runs,
// the call runs as EVAL: a call that only reads still answers.
TEST_F(ScriptRunnerTest, RunsAsScriptWhenOutOfMemory) {
  ASSERT_TRUE(RunSync(CountingFunction(), {"n"}, {"ok"}).ok());
  ASSERT_EQ(*server_->Command({"CONFIG", "SET", "maxmemory", "1"}), "OK");
  absl::StatusOr<RedisReply> reply = RunSync(CountingFunction(), {"n"}, {"ok"});
  ASSERT_EQ(*server_->Command({"CONFIG", "SET", "maxmemory", "0"}), "OK");
  ASSERT_TRUE(reply.ok()) << reply.status();
  // The script ran (as EVAL) and its write was refused: OOM, from the script, nothing counted.
  EXPECT_TRUE(reply->is_error());
  EXPECT_THAT(reply->str(), HasSubstr("OOM"));
  EXPECT_EQ(Get("n"), "1");
  EXPECT_TRUE(runner_->Stats().functions);
  EXPECT_EQ(RunSync(CountingFunction(), {"n"}, {"ok"})->DebugString(), "2");
}

TEST_F(ScriptRunnerTest, FailsCleanlyWhenTheClientIsGone) {
  const LuaScript script = MakeLuaScript("counting", kCountingScript);
  client_.reset();
  absl::StatusOr<RedisReply> reply = RunSync(script, {"n"}, {"ok"});
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
}

// Durability (min_replicas): a primary with one replica that follows it.
class ScriptRunnerDurabilityTest : public ScriptRunnerTest {
 protected:
  void SetUp() override {
    ScriptRunnerTest::SetUp();
    if (HasFatalFailure()) return;
    // Redis 7 waits 5 s for more replicas before a diskless full sync; one is all there is.
    ASSERT_TRUE(server_->Command({"CONFIG", "SET", "repl-diskless-sync-delay", "0"}).ok());
    absl::StatusOr<std::unique_ptr<RedisServer>> replica = RedisServer::Start(
        {.config = {{"replicaof", absl::StrCat("127.0.0.1 ", server_->port())}}});
    ASSERT_TRUE(replica.ok()) << replica.status();
    replica_ = std::move(*replica);
    // Wait (bounded) until the primary counts the replica as connected and in sync.
    for (int i = 0; i < 200; ++i) {
      absl::StatusOr<std::string> info = server_->Command({"INFO", "replication"});
      if (info.ok() && absl::StrContains(*info, "connected_slaves:1") &&
          absl::StrContains(*info, "state=online")) {
        return;
      }
      absl::SleepFor(absl::Milliseconds(25));  // Watchdog poll of a real server, not a clock.
    }
    FAIL() << "replica did not come online";
  }

  absl::StatusOr<RedisReply> RunDurable(ScriptRunner& runner, const LuaScript& script) {
    Notification done;
    absl::StatusOr<RedisReply> result;
    runner.Run(script, {"n"}, {"ok"}, [&](absl::StatusOr<RedisReply> reply) {
      result = std::move(reply);
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  }

  std::unique_ptr<RedisServer> replica_;
};

TEST_F(ScriptRunnerDurabilityTest, ReturnsTheDecisionOnceEnoughReplicasAcknowledged) {
  const LuaScript script = MakeLuaScript("counting", kCountingScript);
  ScriptRunner durable(client_, {.timeout = milliseconds(2000),
                                 .min_replicas = 1,
                                 .min_replicas_timeout = milliseconds(1000)});
  // The first call is resent as EVAL after NOSCRIPT: the resend carries its WAIT too.
  absl::StatusOr<RedisReply> first = RunDurable(durable, script);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->DebugString(), "1");
  absl::StatusOr<RedisReply> second = RunDurable(durable, script);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->DebugString(), "2");
  EXPECT_EQ(durable.Stats().noscript_resends, 1u);
  // The replica has the write: WAIT really waited for it.
  EXPECT_EQ(*replica_->Command({"GET", "n"}), "2");
}

TEST_F(ScriptRunnerDurabilityTest, FunctionCallsWaitForTheirReplicasToo) {
  ScriptRunner durable(client_, {.timeout = milliseconds(2000),
                                 .min_replicas = 1,
                                 .min_replicas_timeout = milliseconds(1000)});
  // The first call is resent as EVAL (and the library loaded): the resend carries its WAIT too.
  for (int i = 1; i <= 2; ++i) {
    absl::StatusOr<RedisReply> reply = RunDurable(durable, CountingFunction());
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->DebugString(), absl::StrCat(i));
    EXPECT_EQ(*replica_->Command({"GET", "n"}), absl::StrCat(i));
  }
  EXPECT_EQ(durable.Stats().noscript_resends, 1u);
  // The library is replicated with the data: a promoted replica has it.
  EXPECT_THAT(*replica_->Command({"FUNCTION", "LIST"}), HasSubstr(CountingFunction().function));
}

TEST_F(ScriptRunnerDurabilityTest, FailsUnavailableWhenTooFewReplicasAcknowledge) {
  const LuaScript script = MakeLuaScript("counting", kCountingScript);
  ScriptRunner durable(
      client_,
      // Long enough for the one replica's acknowledgement to arrive (20 ms was flaky: "0 of 2"),
      // while the second one never can.
      {.timeout = milliseconds(2000), .min_replicas = 2, .min_replicas_timeout = milliseconds(500)});
  absl::StatusOr<RedisReply> reply = RunDurable(durable, script);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable) << reply.status();
  EXPECT_THAT(reply.status().message(), HasSubstr("1 of 2 replicas"));
  // The decision was recorded on the primary (and is not undone): ran exactly once.
  EXPECT_EQ(Get("n"), "1");
}

TEST_F(ScriptRunnerDurabilityTest, ScriptErrorsStandWhateverWaitSays) {
  const LuaScript script = MakeLuaScript("counting", kCountingScript);
  ScriptRunner durable(client_, {.timeout = milliseconds(2000),
                                 .min_replicas = 1,
                                 .min_replicas_timeout = milliseconds(1000)});
  Notification done;
  absl::StatusOr<RedisReply> result;
  durable.Run(script, {"n"}, {"fail"}, [&](absl::StatusOr<RedisReply> reply) {
    result = std::move(reply);
    done.Notify();
  });
  done.WaitForNotification();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->is_error());
  EXPECT_THAT(result->str(), HasSubstr("TESTFAIL"));
}

}  // namespace
}  // namespace sluice
