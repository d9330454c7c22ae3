// ScriptRunner: runs a LuaScript, as a function of its library (FCALL) where the server has
// functions, else by its SHA1 (EVALSHA), and recovers when Redis has lost the script.
//
// Functions (Redis >= 7): the store's scripts are also the functions of one library
// (lua_scripts.h), which Redis persists with its data and replicates, so a restart or a failover
// leaves no window without them, and each call runs only its function's body (an EVAL script
// builds every helper again on every call, which costs Redis more). A call is one FCALL. When the
// server lacks the library (a new or flushed server), it answers "Function not found": the runner
// resends the call once as EVAL with the script's text (which runs whatever happens meanwhile;
// FUNCTION LOAD + FCALL would be two commands, and a flush could come between them) and loads the
// library (FUNCTION LOAD) for the next calls. When the server has no functions ("unknown
// command": Redis < 7) or refuses to load them (an ACL without FUNCTION), calls run with EVALSHA
// from then on. Under maxmemory Redis refuses a function that may write before running it (OOM),
// where an EVAL script still runs its peeks: that call is resent once as EVAL.
//
// EVALSHA (older servers, scripts without a function, or use_functions = false): Redis empties
// its script cache on restart, on failover (a promoted replica never received SCRIPT LOAD) and on
// SCRIPT FLUSH, and then answers NOSCRIPT; the runner resends that call exactly once, as EVAL with
// the script's text, which both runs it and puts it back in the cache. Why EVAL and not SCRIPT
// LOAD + EVALSHA: one round trip instead of two, and no window in which another flush could make
// the resend fail as well.
//
// Only a reply that proves the call did not run is resent (NOSCRIPT, "Function not found",
// "unknown command", OOM from FCALL), and a call is sent at most twice. Any other error reply,
// and every transport failure, goes to the caller as is; in particular a command that timed out
// or whose connection dropped may have run, and is never resent (it could count twice).
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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/clock.h"

#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_reply.h"
#include "src/store/redis/client/redis_router.h"
#include "src/store/redis/lua_scripts.h"

namespace sluice {

struct ScriptRunnerOptions {
  // Deadline of one Run(), the call and a possible resend together. Default: 50 ms.
  std::chrono::milliseconds timeout{50};
  // Time source for the deadline. Not owned. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
  // Durability: when positive, every call is followed in the same pipeline by `WAIT
  // min_replicas min_replicas_timeout`, and a call whose write fewer replicas acknowledged fails
  // with Unavailable (its decision was recorded on the primary only). Default: 0 (no WAIT).
  int min_replicas = 0;
  std::chrono::milliseconds min_replicas_timeout{10};
  // Run the scripts that are functions (LuaScript::library) with FCALL while the server has
  // functions; false: always EVALSHA. Default: true.
  bool use_functions = true;
};

// Counters of a runner (values may be slightly outdated).
struct ScriptRunnerStats {
  uint64_t runs = 0;
  // Calls resent because the server lacked the script or its library (NOSCRIPT, "Function not
  // found"), had no functions, or refused a function under maxmemory.
  uint64_t noscript_resends = 0;
  // Whether calls go out as FCALL: use_functions, until a server turned functions down.
  bool functions = false;
};

class ScriptRunner {
 public:
  // `router` is held weakly: when its owner destroys it, calls in flight complete with its
  // Unavailable error and a pending resend fails with Unavailable. Each call goes to the server
  // that owns its first key (on a Cluster, every key of a call shares one slot), as FCALL and
  // EVALSHA alike.
  ScriptRunner(std::weak_ptr<RedisRouter> router, const ScriptRunnerOptions& options);
  ScriptRunner(const ScriptRunner&) = delete;
  ScriptRunner& operator=(const ScriptRunner&) = delete;
  ~ScriptRunner() = default;

  // ScriptRunner::Run()
  //
  // Runs `script` with `keys` and `args` and calls `done` exactly once with the reply (an error
  // reply other than the recovered ones is a RedisReply, as RedisClient delivers it), or with the
  // client's Unavailable / DeadlineExceeded. REQUIRES: `script` and its library outlive the call
  // (those of lua_scripts.h are static).
  void Run(const LuaScript& script, const std::vector<std::string>& keys,
           const std::vector<std::string>& args, RedisRouter::ReplyCallback done);

  // ScriptRunner::PrepareOn()
  //
  // Loads on `client`'s server what calls of `scripts` need, ahead of them: their library
  // (FUNCTION LOAD) while functions are in use and the scripts have one, else each script
  // (SCRIPT LOAD). A server without functions, or that refuses to load them, turns functions off
  // for every later call (logged), and gets the scripts instead. Calls `done` once per library
  // or script with OK, Internal when the server names it differently than expected, or the
  // error. Optional: Run() loads on demand, on whichever server lacks it.
  // REQUIRES: `scripts` is not empty and outlives the calls (the static ProductionScripts()).
  void PrepareOn(const std::shared_ptr<RedisClient>& client,
                 std::span<const LuaScript* const> scripts,
                 const std::function<void(std::string_view name, absl::Status)>& done) const;

  // ScriptRunner::Preload()
  //
  // Sends SCRIPT LOAD for `script` to every primary the router knows now and calls `done` once
  // per primary with OK when that server has it under the expected SHA1, Internal when it names it
  // differently, or the error.
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
  // What the runner's callbacks share with it (they may outlive it by the time it takes the
  // client to fail them).
  struct Shared {
    explicit Shared(bool use_functions) : functions(use_functions) {}
    std::atomic<bool> functions;
    std::atomic<uint64_t> resends{0};
    // A FUNCTION LOAD is in flight.
    std::atomic<bool> loading{false};
    // Turns functions off for good (once; logs why).
    void DisableFunctions(std::string_view why);
  };
  // One Run() in flight.
  struct Call;

  // Sends the call as FCALL or EVALSHA; the On...() functions receive the reply, ResendAsEval()
  // makes the one resend.
  static void SendFcall(std::unique_ptr<Call> call, const std::shared_ptr<RedisRouter>& router);
  static void SendEvalsha(std::unique_ptr<Call> call, const std::shared_ptr<RedisRouter>& router);
  static void OnFcallReply(std::unique_ptr<Call> call, absl::StatusOr<RedisReply> reply);
  static void OnEvalshaReply(std::unique_ptr<Call> call, absl::StatusOr<RedisReply> reply);
  static void ResendAsEval(std::unique_ptr<Call> call);
  // Sends FUNCTION LOAD of the call's library to its server, unless one is in flight.
  static void LoadLibrary(const Call& call);
  static void Finish(std::unique_ptr<Call> call, absl::StatusOr<RedisReply> reply);
  // Sets `left` to the time left for a resend and returns true, or returns false when there is
  // too little left for one.
  static bool HasTimeForResend(const Call& call, std::chrono::milliseconds& left);

  // The command of one call: the script alone, or the script and its WAIT in one pipeline.
  static RedisCommand MakeCall(const std::vector<std::string>& argv, const Durability& durability);
  // The script's own reply within `reply`, or nullptr when a durable call's reply is malformed.
  static const RedisReply* ScriptReplyOf(const RedisReply& reply, const Durability& durability);
  // The caller's outcome of a call: the script's reply, or Unavailable when too few replicas
  // acknowledged it.
  static absl::StatusOr<RedisReply> FinishCall(absl::StatusOr<RedisReply> reply,
                                               const Durability& durability);
  // SCRIPT LOAD of `script` on `client`.
  static void ScriptLoadOn(RedisClient& client, const LuaScript& script,
                           std::chrono::milliseconds timeout,
                           std::function<void(absl::Status)> done);

  std::weak_ptr<RedisRouter> router_;
  std::chrono::milliseconds timeout_;
  Durability durability_;
  Clock& clock_;
  std::atomic<uint64_t> runs_{0};
  std::shared_ptr<Shared> shared_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_SCRIPT_RUNNER_H_
