// ScriptRunner: runs a LuaScript by its SHA1, and recovers when Redis has lost the script.
//
// Every call is one EVALSHA. Redis empties its script cache on restart, on failover (a promoted
// replica never received SCRIPT LOAD) and on SCRIPT FLUSH, and then answers NOSCRIPT; the runner
// resends that call exactly once, as EVAL with the script's text, which both runs it and puts it
// back in the cache, so the next calls are plain EVALSHAs again. The caller never sees NOSCRIPT.
//
// Why EVAL and not SCRIPT LOAD + EVALSHA for the resend: EVAL is one round trip instead of two,
// and it leaves no window in which another flush could make the resend fail as well.
//
// NOSCRIPT is the only error that is resent: it proves the script did not run. Any other error
// reply, and every transport failure, goes to the caller as is; in particular a command that timed
// out or whose connection dropped may have run, and is never resent (it could count twice).
//
// Example:
//   ScriptRunner runner(client, {.timeout = 50ms});
//   runner.Run(CheckScript(), {key}, std::move(args), [](absl::StatusOr<RedisReply> reply) {...});
//
// Thread safety: thread-safe. Callbacks run as RedisClient::Send() runs them: on the client's I/O
// thread, or inline when the client rejects the command up front.
#ifndef SLUICE_STORE_REDIS_SCRIPT_RUNNER_H_
#define SLUICE_STORE_REDIS_SCRIPT_RUNNER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/clock.h"

#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_reply.h"
#include "src/store/redis/client/redis_router.h"

namespace sluice {

struct ScriptRunnerOptions {
  // Deadline of one Run(), EVALSHA and a possible resend together. Default: 50 ms.
  std::chrono::milliseconds timeout{50};
  // Time source for the deadline. Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
  // Durability: when positive, every call is followed in the same pipeline by `WAIT
  // min_replicas min_replicas_timeout`, and a call whose write fewer replicas acknowledged fails
  // with Unavailable (its decision was recorded on the primary only). Default: 0 (no WAIT).
  int min_replicas = 0;
  std::chrono::milliseconds min_replicas_timeout{10};
};

// Counters of a runner (values may be slightly outdated).
struct ScriptRunnerStats {
  uint64_t runs = 0;
  // Calls resent with EVAL after a NOSCRIPT reply.
  uint64_t noscript_resends = 0;
};

class ScriptRunner {
 public:
  // `router` is held weakly: when its owner destroys it, calls in flight complete with its
  // Unavailable error and a pending resend fails with Unavailable. Each call goes to the server
  // that owns its first key (on a Cluster, every key of a call shares one slot).
  ScriptRunner(std::weak_ptr<RedisRouter> router, const ScriptRunnerOptions& options);
  ScriptRunner(const ScriptRunner&) = delete;
  ScriptRunner& operator=(const ScriptRunner&) = delete;
  ~ScriptRunner() = default;

  // ScriptRunner::Run()
  //
  // Runs `script` with `keys` and `args` and calls `done` exactly once with the reply (an error
  // reply other than NOSCRIPT is a RedisReply, as RedisClient delivers it), or with the client's
  // Unavailable / DeadlineExceeded. REQUIRES: `script` outlives the call (the scripts of
  // lua_scripts.h are static).
  void Run(const LuaScript& script, const std::vector<std::string>& keys,
           const std::vector<std::string>& args, RedisRouter::ReplyCallback done);

  // ScriptRunner::Preload()
  //
  // Sends SCRIPT LOAD for `script` to every primary the router knows now and calls `done` once
  // per primary with OK when that server has it under the expected SHA1, Internal when it names it
  // differently, or the error. Optional: Run() loads on demand, on whichever server lacks it.
  void Preload(const LuaScript& script, const std::function<void(absl::Status)>& done);

  // ScriptRunner::PreloadOn()
  //
  // As Preload(), on one server: for a router that finds a new primary.
  void PreloadOn(RedisClient& client, const LuaScript& script,
                 std::function<void(absl::Status)> done) const;

  ScriptRunnerStats Stats() const;

 private:
  struct Durability {
    int min_replicas = 0;
    std::chrono::milliseconds timeout{0};
  };

  // The command of one call: the script alone, or the script and its WAIT in one pipeline.
  RedisCommand MakeCall(const std::vector<std::string>& argv) const;
  static RedisCommand MakeCall(const std::vector<std::string>& argv, const Durability& durability);
  // The script's own reply within `reply`, or nullptr when a durable call's reply is malformed.
  static const RedisReply* ScriptReplyOf(const RedisReply& reply, const Durability& durability);
  // The caller's outcome of a call: the script's reply, or Unavailable when too few replicas
  // acknowledged it.
  static absl::StatusOr<RedisReply> FinishCall(absl::StatusOr<RedisReply> reply,
                                               const Durability& durability);

  std::weak_ptr<RedisRouter> router_;
  std::chrono::milliseconds timeout_;
  Durability durability_;
  Clock& clock_;
  std::atomic<uint64_t> runs_{0};
  // Shared with callbacks, which may outlive the runner by the time it takes the client to fail
  // them.
  std::shared_ptr<std::atomic<uint64_t>> noscript_resends_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_SCRIPT_RUNNER_H_
