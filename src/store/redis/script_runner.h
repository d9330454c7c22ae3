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
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/clock.h"

#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/redis_client.h"
#include "src/store/redis/redis_reply.h"

namespace sluice {

struct ScriptRunnerOptions {
  // Deadline of one Run(), EVALSHA and a possible resend together. Default: 50 ms.
  std::chrono::milliseconds timeout{50};
  // Time source for the deadline. Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
};

// Counters of a runner (values may be slightly outdated).
struct ScriptRunnerStats {
  uint64_t runs = 0;
  // Calls resent with EVAL after a NOSCRIPT reply.
  uint64_t noscript_resends = 0;
};

class ScriptRunner {
 public:
  // `client` is held weakly: when its owner destroys it, calls in flight complete with its
  // Unavailable error and a pending resend fails with Unavailable.
  ScriptRunner(std::weak_ptr<RedisClient> client, const ScriptRunnerOptions& options);
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
           const std::vector<std::string>& args, RedisClient::ReplyCallback done);

  // ScriptRunner::Preload()
  //
  // Sends SCRIPT LOAD for `script` and calls `done` with OK when Redis has it under the expected
  // SHA1, Internal when Redis names it differently, or the error. Optional: Run() loads on demand.
  void Preload(const LuaScript& script, absl::AnyInvocable<void(absl::Status) &&> done);

  ScriptRunnerStats Stats() const;

 private:
  std::weak_ptr<RedisClient> client_;
  std::chrono::milliseconds timeout_;
  Clock& clock_;
  std::atomic<uint64_t> runs_{0};
  // Shared with callbacks, which may outlive the runner by the time it takes the client to fail
  // them.
  std::shared_ptr<std::atomic<uint64_t>> noscript_resends_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_SCRIPT_RUNNER_H_
