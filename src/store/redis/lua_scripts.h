// The Lua code of the Redis store, composed at build time from src/lua/*.lua (see
// lua_scripts.cmake), in two forms of the same pieces:
//   - one function library (FUNCTION LOAD, then FCALL; Redis >= 7), named after a hash of its
//     text, so that sluice versions sharing one Redis keep their own functions;
//   - EVAL scripts, named by the SHA1 that EVALSHA uses (computed here once), for older servers.
//
//   check_<algorithm>  one per algorithm, holding only that algorithm's code
//               KEYS = {state key}; ARGV = {check}
//               -> decision
//   check_all   every algorithm; KEYS = n state keys; ARGV = one check per key, in order
//               -> all_allowed, then each decision; the only script deciding credits
//               (LimitCheck::refund)
//   lease_all   as check_all, with distinct keys and one want per check after the checks
//               -> all_allowed, now_us, then each decision with its grant and the lease's end
//   lease_refund
//               KEYS = n state keys; ARGV = n checks, then n refunds -> now_us, units given back
// (docs/algorithms.md, "Leases").
// A check is one binary argument (AppendCheckArguments()), a reply one binary string of
// little-endian 64-bit integers (5 per decision: allowed, limit, remaining, reset_after_us,
// retry_after_us): parsing and building decimal text was most of what a call cost Redis.
// docs/redis.md describes the layout and the rules every script follows.
//
// Example:
//   const LuaScript& script = CheckScript(Algorithm::kGcra);
//   std::vector<std::string> args;
//   AppendCheckArguments(limit, 1, args);
//   runner.Run(script, {key}, args, callback);
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

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/store.h"

#include "src/store/lease/lease_source.h"
#include "src/store/redis/client/redis_reply.h"

namespace sluice {

// A function library as FUNCTION LOAD takes it.
struct LuaLibrary {
  // "sluice_" and 16 hex digits of the SHA1 of the library's source.
  std::string name;
  // Starts with "#!lua name=<name>".
  std::string text;
};

// A script as Redis knows it: the text SCRIPT LOAD sends and the SHA1 EVALSHA names it by, and,
// for the store's scripts, the same code as a function of a library (FCALL `function`).
struct LuaScript {
  // For error messages: "check_gcra", "check_all".
  std::string name;
  std::string_view text;
  // 40 lowercase hex digits, as SCRIPT LOAD returns it.
  std::string sha1;
  // "<library name>_<name>"; empty when the script exists only as EVAL text.
  std::string function{};
  // The library holding `function`, or nullptr. Not owned (the libraries are static).
  const LuaLibrary* library = nullptr;
};

// Checks per check_all call; common.lua's kMaxChecks must be the same.
inline constexpr int kMaxChecksPerScript = 64;
// Arguments per check in ARGV.
inline constexpr int kArgsPerCheck = 1;
// Bytes of one check's argument (common.lua, kCheckBytes).
inline constexpr size_t kCheckArgumentBytes = 25;
// Integers per decision in a reply.
inline constexpr int kIntegersPerDecision = 5;
// Bytes of one want of lease_all (lease_entry.lua, kWantBytes) and of one refund of lease_refund
// (kRefundBytes).
inline constexpr size_t kWantArgumentBytes = 16;
inline constexpr size_t kRefundArgumentBytes = 24;
// Integers per check in a lease_all reply: the decision's five, granted and ends_us.
inline constexpr int kIntegersPerLeasedCheck = 7;
// The error code a script answers invalid arguments with ("SLUICE_BADARG check 1: ...").
inline constexpr std::string_view kScriptBadArgumentCode = "SLUICE_BADARG";

// CheckScript()
//
// Returns the single-check script of `algorithm`, which takes `now` from Redis TIME. Each
// algorithm has its own script (and function), so a call runs only the code its check needs
// (docs/redis.md, "Cost per call"); the script still receives the algorithm and refuses any other.
const LuaScript& CheckScript(Algorithm algorithm);

// CheckScript()
//
// Returns CheckScript(Algorithm::kFixedWindow): for callers that need some production script
// rather than a particular decision (preloading tests).
const LuaScript& CheckScript();

// ProductionScripts()
//
// Returns every production script: the five single-check scripts, then CheckAllScript(),
// LeaseAllScript(), LeaseRefundScript() and LeaseHoldersScript().
std::span<const LuaScript* const> ProductionScripts();

// ProductionLibrary()
//
// Returns the function library that holds every production script as a function.
const LuaLibrary& ProductionLibrary();

// CheckAllScript()
//
// Returns the all-or-nothing multi-check script, which takes `now` from Redis TIME.
const LuaScript& CheckAllScript();

// LeaseAllScript(), LeaseRefundScript(), LeaseHoldersScript()
//
// Return the leasing scripts, which take `now` from Redis TIME.
const LuaScript& LeaseAllScript();
const LuaScript& LeaseRefundScript();
const LuaScript& LeaseHoldersScript();

// MakeLuaScript()
//
// Returns a script named `name` with text `text` (which must outlive it) and its SHA1, with no
// function.
LuaScript MakeLuaScript(std::string name, std::string_view text);

// MakeLuaLibrary()
//
// Returns the library whose source is `source`, a text that starts with
// "#!lua name=sluice_@VERSION@" and names its functions 'sluice_@VERSION@_...': @VERSION@ becomes
// the first 16 hex digits of the source's SHA1.
LuaLibrary MakeLuaLibrary(std::string_view source);

// MakeLibraryScript()
//
// Returns MakeLuaScript(name, text) that is also the function `<library.name>_<name>` of
// `library`, which must outlive it.
LuaScript MakeLibraryScript(std::string name, std::string_view text, const LuaLibrary& library);

// AppendCheckArguments()
//
// Appends the ARGV entry of one check to `argv`: kCheckArgumentBytes, little-endian: the
// algorithm (u8, its enum value, plus 0x80 with `count_rejected`: common.lua's kCountRejected,
// plus 0x40 with `refund`, a credit of `cost` units: kRefund), limit (u32), period in
// microseconds (u64), Capacity() (u32) and cost (u64).
// REQUIRES: ValidateLimit(limit) and ValidateCost(cost) are OK; count_rejected only for a fixed
// window and never with refund; a refund only for check_all (the scripts refuse it otherwise).
void AppendCheckArguments(const Limit& limit, int64_t cost, std::vector<std::string>& argv,
                          bool count_rejected = false, bool refund = false);

// EncodeCheckArgument()
//
// Returns AppendCheckArguments()'s argument for raw fields, unchecked: for tests of the scripts'
// own validation, which must refuse what ValidateLimit() would.
std::string EncodeCheckArgument(uint8_t algorithm, uint64_t limit, uint64_t period_us,
                                uint64_t capacity, uint64_t cost);

// AppendWantArgument()
//
// Appends the ARGV entry of one want of lease_all: kWantArgumentBytes, little-endian: units (u64)
// and ttl in microseconds (u64). REQUIRES: ValidateLeaseWant(want) is OK.
void AppendWantArgument(const internal::LeaseWant& want, std::vector<std::string>& argv);

// EncodeWantArgument()
//
// Returns AppendWantArgument()'s argument for raw fields, unchecked (tests of the validation).
std::string EncodeWantArgument(uint64_t units, uint64_t ttl_us);

// ValidateLeaseWant()
//
// Returns OK when 0 <= want.units <= kMaxCost and 1 ms <= want.ttl <= kMaxPeriod (what lease_all
// accepts; the algorithms then clamp the ttl to the limit's period), else InvalidArgument.
absl::Status ValidateLeaseWant(const internal::LeaseWant& want);

// AppendRefundArgument()
//
// Appends the ARGV entry of one refund of lease_refund: kRefundArgumentBytes, little-endian:
// ends_us, granted and unspent (u64 each). REQUIRES: ValidateLeaseRefund(refund) is OK.
void AppendRefundArgument(const internal::LeaseRefund& refund, std::vector<std::string>& argv);

// EncodeRefundArgument()
//
// Returns AppendRefundArgument()'s argument for raw fields, unchecked.
std::string EncodeRefundArgument(uint64_t ends_us, uint64_t granted, uint64_t unspent);

// ValidateLeaseRefund()
//
// Returns OK when the refund's check is valid (its cost is not used) and 0 <= ends_us < 2^53,
// 1 <= granted <= kMaxCost and 1 <= unspent <= granted, else InvalidArgument.
absl::Status ValidateLeaseRefund(const internal::LeaseRefund& refund);

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

// ParseLeaseAllReply()
//
// Returns the decisions and grants in a lease_all reply for `checks` checks, or Internal when the
// reply does not have the documented shape and bounds (a grant to a denied check, a lease that
// ends before the decision, ...).
absl::StatusOr<internal::LeasedDecision> ParseLeaseAllReply(const RedisReply& reply, size_t checks);

// What lease_refund answered.
struct LeaseRefundReply {
  int64_t now_us = 0;
  // Units each refund gave back, in order.
  std::vector<int64_t> given;
};

// ParseLeaseRefundReply()
//
// Returns the reply of lease_refund for `refunds` refunds, or Internal when it does not have the
// documented shape (units given back outside [0, 2^32]).
absl::StatusOr<LeaseRefundReply> ParseLeaseRefundReply(const RedisReply& reply, size_t refunds);

// ParseLeaseHoldersReply()
//
// Returns the number of instances a lease_holders reply counted, or Internal when it is not an
// integer in [0, 10000].
absl::StatusOr<int64_t> ParseLeaseHoldersReply(const RedisReply& reply);

// Sha1Hex()
//
// Returns the SHA1 of `bytes` as 40 lowercase hex digits.
std::string Sha1Hex(std::string_view bytes);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_LUA_SCRIPTS_H_
