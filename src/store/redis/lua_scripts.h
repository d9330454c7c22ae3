// The Lua scripts of the Redis store, composed at build time from src/lua/*.lua (see
// lua_scripts.cmake) and named by the SHA1 that EVALSHA uses, computed here once.
//
//   check_<algorithm>  one script per algorithm, holding only that algorithm's code
//               KEYS = {state key}; ARGV = {algorithm, limit, period_us, capacity, cost}
//               -> {allowed (1|0), limit, remaining, reset_after_us, retry_after_us}
//   check_all   every algorithm; KEYS = n state keys; ARGV = 5 arguments per key, in order
//               -> {all_allowed (1|0), then the 5 decision integers per key}
// docs/redis.md describes the layout and the rules every script follows.
//
// Example:
//   const LuaScript& script = CheckScript(Algorithm::kGcra);
//   runner.Run(script, {key}, {"gcra", "100", "60000000", "20", "1"}, callback);
//
// Thread safety: the scripts are immutable and built on first use (thread-safe static init).
#ifndef SLUICE_STORE_REDIS_LUA_SCRIPTS_H_
#define SLUICE_STORE_REDIS_LUA_SCRIPTS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/store.h"

#include "src/store/redis/client/redis_reply.h"

namespace sluice {

// A script as Redis knows it: the text SCRIPT LOAD sends and the SHA1 EVALSHA names it by.
struct LuaScript {
  // For error messages: "check_gcra", "check_all".
  std::string name;
  std::string_view text;
  // 40 lowercase hex digits, as SCRIPT LOAD returns it.
  std::string sha1;
};

// Checks per check_all call; common.lua's kMaxChecks must be the same.
inline constexpr int kMaxChecksPerScript = 64;
// Arguments per check in ARGV.
inline constexpr int kArgsPerCheck = 5;
// Integers per decision in a reply.
inline constexpr int kIntegersPerDecision = 5;
// The error code a script answers invalid arguments with ("SLUICE_BADARG check 1: ...").
inline constexpr std::string_view kScriptBadArgumentCode = "SLUICE_BADARG";

// CheckScript()
//
// Returns the single-check script of `algorithm`, which takes `now` from Redis TIME. Each
// algorithm has its own script, so an EVALSHA runs only the code its check needs (docs/redis.md,
// "Cost per call"); the script still receives the algorithm's name and refuses any other.
const LuaScript& CheckScript(Algorithm algorithm);

// CheckScript()
//
// Returns CheckScript(Algorithm::kFixedWindow): for callers that need some production script
// rather than a particular decision (preloading tests).
const LuaScript& CheckScript();

// ProductionScripts()
//
// Returns every production script: the five single-check scripts, then CheckAllScript().
std::span<const LuaScript* const> ProductionScripts();

// CheckAllScript()
//
// Returns the all-or-nothing multi-check script, which takes `now` from Redis TIME.
const LuaScript& CheckAllScript();

// MakeLuaScript()
//
// Returns a script named `name` with text `text` (which must outlive it) and its SHA1.
LuaScript MakeLuaScript(std::string name, std::string_view text);

// AppendCheckArguments()
//
// Appends the five ARGV entries of one check to `argv`: AlgorithmName(), limit, period in
// microseconds, Capacity() and cost, in decimal. REQUIRES: ValidateLimit(limit) and
// ValidateCost(cost) are OK.
void AppendCheckArguments(const Limit& limit, int64_t cost, std::vector<std::string>& argv);

// ParseCheckReply()
//
// Returns the Decision in a check script's reply, or Internal when the reply does not have the
// documented shape and bounds (which would be a script bug, never a denial).
absl::StatusOr<Decision> ParseCheckReply(const RedisReply& reply);

// ParseCheckAllReply()
//
// Returns the MultiDecision in a check_all script's reply for `checks` checks, or Internal when
// the reply does not have the documented shape and bounds.
absl::StatusOr<MultiDecision> ParseCheckAllReply(const RedisReply& reply, size_t checks);

// Sha1Hex()
//
// Returns the SHA1 of `bytes` as 40 lowercase hex digits.
std::string Sha1Hex(std::string_view bytes);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_LUA_SCRIPTS_H_
