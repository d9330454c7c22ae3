// Test support for the Lua script tests: a blocking hiredis connection that runs the scripts with
// EVALSHA (loading them on NOSCRIPT) or as functions with FCALL (loading their library when
// Redis does not have it), and helpers to build their arguments.
//
// These tests drive the scripts directly, below RedisStore, so that a failure points at Lua and
// not at the transport. Tests of the scripts run in both forms (LuaCall), which are composed from
// the same pieces and must decide the same.
//
// Thread safety: one ScriptConnection per thread.
#ifndef SLUICE_TESTS_STORE_REDIS_LUA_TEST_SUPPORT_H_
#define SLUICE_TESTS_STORE_REDIS_LUA_TEST_SUPPORT_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include <hiredis/hiredis.h>

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/store.h"

#include "src/store/lease/lease_source.h"
#include "src/store/redis/client/redis_reply.h"
#include "src/store/redis/lua_scripts.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {

// How a ScriptConnection runs a script.
enum class LuaCall { kEvalsha, kFcall };

inline std::string LuaCallName(const ::testing::TestParamInfo<LuaCall>& info) {
  return info.param == LuaCall::kEvalsha ? "Evalsha" : "Fcall";
}

// Converts a hiredis reply tree to a RedisReply.
inline RedisReply FromHiredis(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_STRING:
      return RedisReply::String(std::string(r->str, r->len));
    case REDIS_REPLY_STATUS:
      return RedisReply::Status(std::string(r->str, r->len));
    case REDIS_REPLY_ERROR:
      return RedisReply::Error(std::string(r->str, r->len));
    case REDIS_REPLY_INTEGER:
      return RedisReply::Integer(r->integer);
    case REDIS_REPLY_ARRAY: {
      std::vector<RedisReply> elements;
      for (size_t i = 0; i < r->elements; ++i) elements.push_back(FromHiredis(r->element[i]));
      return RedisReply::Array(std::move(elements));
    }
    default:
      return RedisReply::Nil();
  }
}

class ScriptConnection {
 public:
  static absl::StatusOr<std::unique_ptr<ScriptConnection>> Connect(int port) {
    timeval timeout{10, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeout);
    if (c == nullptr || c->err != 0) {
      std::string err = c != nullptr ? c->errstr : "out of memory";
      if (c != nullptr) redisFree(c);
      return absl::UnavailableError(err);
    }
    redisSetTimeout(c, timeout);
    return std::unique_ptr<ScriptConnection>(new ScriptConnection(c));
  }

  ScriptConnection(const ScriptConnection&) = delete;
  ScriptConnection& operator=(const ScriptConnection&) = delete;
  ~ScriptConnection() { redisFree(c_); }

  // Runs one command; a Redis error reply is a RedisReply of type kError, not a failed status.
  absl::StatusOr<RedisReply> Run(const std::vector<std::string>& argv) {
    std::vector<const char*> args;
    std::vector<size_t> lens;
    for (const std::string& a : argv) {
      args.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(c_, static_cast<int>(args.size()), args.data(), lens.data()));
    if (reply == nullptr) return absl::UnavailableError(c_->errstr);
    RedisReply out = FromHiredis(reply);
    freeReplyObject(reply);
    return out;
  }

  // Runs `script` as set_call() says: EVALSHA, loading the script when Redis answers NOSCRIPT;
  // or, for a script that is also a function, FCALL, loading its library when Redis lacks it.
  absl::StatusOr<RedisReply> Eval(const LuaScript& script, const std::vector<std::string>& keys,
                                  const std::vector<std::string>& args) {
    if (call_ == LuaCall::kFcall && script.library != nullptr) {
      std::vector<std::string> argv = {"FCALL", script.function, absl::StrCat(keys.size())};
      argv.insert(argv.end(), keys.begin(), keys.end());
      argv.insert(argv.end(), args.begin(), args.end());
      absl::StatusOr<RedisReply> reply = Run(argv);
      if (reply.ok() && reply->is_error() &&
          reply->str().find("Function not found") != std::string::npos) {
        absl::StatusOr<RedisReply> loaded = Run({"FUNCTION", "LOAD", script.library->text});
        if (!loaded.ok()) return loaded.status();
        if (loaded->str() != script.library->name) {
          return absl::InternalError(absl::StrCat("FUNCTION LOAD: ", loaded->DebugString()));
        }
        reply = Run(argv);
      }
      return reply;
    }
    std::vector<std::string> argv = {"EVALSHA", script.sha1, absl::StrCat(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<RedisReply> reply = Run(argv);
    if (reply.ok() && reply->is_error() && reply->str().starts_with("NOSCRIPT")) {
      absl::StatusOr<RedisReply> loaded = Run({"SCRIPT", "LOAD", std::string(script.text)});
      if (!loaded.ok()) return loaded.status();
      if (loaded->str() != script.sha1) {
        return absl::InternalError(absl::StrCat("SCRIPT LOAD: ", loaded->DebugString()));
      }
      reply = Run(argv);
    }
    return reply;
  }

  // How many times the server ran `command` (lowercase, "fcall") since its start or the last
  // CONFIG RESETSTAT, from INFO commandstats; -1 when the reply cannot be read.
  int64_t CommandCalls(const std::string& command) {
    absl::StatusOr<RedisReply> info = Run({"INFO", "commandstats"});
    if (!info.ok() || !info->is_string()) return -1;
    const std::string needle = absl::StrCat("cmdstat_", command, ":calls=");
    const size_t at = info->str().find(needle);
    if (at == std::string::npos) return 0;
    return std::strtoll(info->str().c_str() + at + needle.size(), nullptr, 10);
  }

  void set_call(LuaCall call) { call_ = call; }
  LuaCall call() const { return call_; }

  // The integer reply of a command, or -2 on any other reply (for terse assertions).
  int64_t Integer(const std::vector<std::string>& argv) {
    absl::StatusOr<RedisReply> r = Run(argv);
    return r.ok() && r->is_integer() ? r->integer() : -2;
  }

 private:
  explicit ScriptConnection(redisContext* c) : c_(c) {}
  redisContext* c_;
  LuaCall call_ = LuaCall::kEvalsha;
};

// The fixture of the script tests: one redis-server for the suite, and for each test a fresh
// connection calling the scripts as the test's parameter says, on an empty database.
class LuaScriptsFixture : public ::testing::TestWithParam<LuaCall> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::unique_ptr<ScriptConnection>> conn =
        ScriptConnection::Connect(server_->port());
    ASSERT_TRUE(conn.ok()) << conn.status();
    conn_ = std::move(*conn);
    conn_->set_call(GetParam());
    ASSERT_TRUE(conn_->Run({"FLUSHALL"}).ok());
  }

  int64_t DbSize() { return conn_->Integer({"DBSIZE"}); }

  static inline RedisServer* server_ = nullptr;
  std::unique_ptr<ScriptConnection> conn_;
};

// The ARGV of one check for the ...ForTest single-check script: now first.
inline std::vector<std::string> CheckArgsForTest(int64_t now_us, const Limit& limit, int64_t cost,
                                                 bool count_rejected = false) {
  std::vector<std::string> argv = {absl::StrCat(now_us)};
  AppendCheckArguments(limit, cost, argv, count_rejected);
  return argv;
}

// Runs the test-time single-check script and parses its reply.
inline absl::StatusOr<Decision> CheckForTest(ScriptConnection& conn, const LuaScript& script,
                                             const std::string& key, int64_t now_us,
                                             const Limit& limit, int64_t cost,
                                             bool count_rejected = false) {
  absl::StatusOr<RedisReply> reply =
      conn.Eval(script, {key}, CheckArgsForTest(now_us, limit, cost, count_rejected));
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return absl::InternalError(reply->str());
  return ParseCheckReply(*reply);
}

// Runs the test-time lease_all `script` on `checks` (distinct keys) with `wants` at `now_us` and
// parses its reply; a script error is Internal with its message.
inline absl::StatusOr<internal::LeasedDecision> LeaseForTest(
    ScriptConnection& conn, const LuaScript& script, int64_t now_us,
    const std::vector<LimitCheck>& checks, const std::vector<internal::LeaseWant>& wants) {
  std::vector<std::string> keys;
  std::vector<std::string> args = {absl::StrCat(now_us)};
  for (const LimitCheck& check : checks) {
    keys.push_back(check.key);
    AppendCheckArguments(check.limit, check.cost, args);
  }
  for (const internal::LeaseWant& want : wants) AppendWantArgument(want, args);
  absl::StatusOr<RedisReply> reply = conn.Eval(script, keys, args);
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return absl::InternalError(reply->str());
  return ParseLeaseAllReply(*reply, checks.size());
}

// Runs the test-time lease_refund `script` on `refunds` at `now_us`; returns the units each gave
// back.
inline absl::StatusOr<std::vector<int64_t>> RefundForTest(
    ScriptConnection& conn, const LuaScript& script, int64_t now_us,
    const std::vector<internal::LeaseRefund>& refunds) {
  std::vector<std::string> keys;
  std::vector<std::string> args = {absl::StrCat(now_us)};
  for (const internal::LeaseRefund& refund : refunds) {
    keys.push_back(refund.check.key);
    AppendCheckArguments(refund.check.limit, 0, args);
  }
  for (const internal::LeaseRefund& refund : refunds) AppendRefundArgument(refund, args);
  absl::StatusOr<RedisReply> reply = conn.Eval(script, keys, args);
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return absl::InternalError(reply->str());
  absl::StatusOr<LeaseRefundReply> parsed = ParseLeaseRefundReply(*reply, refunds.size());
  if (!parsed.ok()) return parsed.status();
  if (parsed->now_us != now_us) return absl::InternalError("lease_refund: another now_us");
  return parsed->given;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_STORE_REDIS_LUA_TEST_SUPPORT_H_
