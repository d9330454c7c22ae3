#include "src/store/redis/lua_scripts.h"

#include <array>
#include <chrono>
#include <cstdlib>
#include <span>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include <openssl/evp.h>

namespace sluice {
namespace internal {
// Defined by the sources that lua_scripts.cmake generates.
extern const std::string_view kCheckFixedWindowLua;
extern const std::string_view kCheckSlidingWindowLua;
extern const std::string_view kCheckSlidingLogLua;
extern const std::string_view kCheckTokenBucketLua;
extern const std::string_view kCheckGcraLua;
extern const std::string_view kCheckAllLua;
}  // namespace internal

namespace {

// Decision from the five integers {allowed, limit, remaining, reset_after_us, retry_after_us},
// checked against the invariants of docs/algorithms.md so a script bug surfaces as Internal
// instead of a wrong answer.
absl::StatusOr<Decision> ParseDecision(std::span<const RedisReply> v, const char* what) {
  for (const RedisReply& element : v) {
    if (!element.is_integer()) {
      return absl::InternalError(
          absl::StrCat("redis ", what, ": expected integers, got ", element.DebugString()));
    }
  }
  const int64_t allowed = v[0].integer();
  const int64_t limit = v[1].integer();
  const int64_t remaining = v[2].integer();
  const int64_t reset_after = v[3].integer();
  const int64_t retry_after = v[4].integer();
  const bool valid = (allowed == 0 || allowed == 1) && limit >= 1 && limit <= kMaxLimit &&
                     remaining >= 0 && remaining <= limit && reset_after >= 0 &&
                     (allowed == 1 ? retry_after == 0 : retry_after >= -1);
  if (!valid) {
    return absl::InternalError(absl::StrCat("redis ", what, ": decision out of bounds: {", allowed,
                                            ", ", limit, ", ", remaining, ", ", reset_after, ", ",
                                            retry_after, "}"));
  }
  return Decision{.allowed = allowed == 1,
                  .limit = limit,
                  .remaining = remaining,
                  .reset_after = std::chrono::microseconds(reset_after),
                  .retry_after = std::chrono::microseconds(retry_after)};
}

}  // namespace

void AppendCheckArguments(const Limit& limit, int64_t cost, std::vector<std::string>& argv) {
  argv.emplace_back(AlgorithmName(limit.algorithm));
  argv.push_back(absl::StrCat(limit.limit));
  argv.push_back(absl::StrCat(limit.period.count()));
  argv.push_back(absl::StrCat(limit.Capacity()));
  argv.push_back(absl::StrCat(cost));
}

absl::StatusOr<Decision> ParseCheckReply(const RedisReply& reply) {
  if (!reply.is_array() || reply.elements().size() != kIntegersPerDecision) {
    return absl::InternalError(
        absl::StrCat("redis check: expected an array of 5 integers, got ", reply.DebugString()));
  }
  return ParseDecision(reply.elements(), "check");
}

absl::StatusOr<MultiDecision> ParseCheckAllReply(const RedisReply& reply, size_t checks) {
  if (!reply.is_array() || reply.elements().size() != 1 + kIntegersPerDecision * checks) {
    return absl::InternalError(absl::StrCat("redis check_all: expected an array of ",
                                            1 + kIntegersPerDecision * checks, " integers, got ",
                                            reply.DebugString()));
  }
  const std::vector<RedisReply>& v = reply.elements();
  if (!v[0].is_integer() || (v[0].integer() != 0 && v[0].integer() != 1)) {
    return absl::InternalError(
        absl::StrCat("redis check_all: bad all_allowed flag ", v[0].DebugString()));
  }
  MultiDecision multi{.allowed = v[0].integer() == 1, .decisions = {}};
  multi.decisions.reserve(checks);
  bool every_allowed = true;
  for (size_t i = 0; i < checks; ++i) {
    absl::StatusOr<Decision> d = ParseDecision(
        std::span<const RedisReply>(v).subspan(1 + kIntegersPerDecision * i, kIntegersPerDecision),
        "check_all");
    if (!d.ok()) return d.status();
    every_allowed = every_allowed && d->allowed;
    multi.decisions.push_back(*d);
  }
  // all_allowed must agree with the decisions: when a check is denied nothing was recorded.
  if (multi.allowed != every_allowed) {
    return absl::InternalError("redis check_all: all_allowed disagrees with the decisions");
  }
  return multi;
}

std::string Sha1Hex(std::string_view bytes) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  // EVP_Digest fails only when OpenSSL cannot allocate; a wrong SHA1 would make every call a
  // NOSCRIPT round trip, so the process stops instead.
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha1(), nullptr) != 1) {
    std::abort();
  }
  std::string hex;
  hex.reserve(size_t{2} * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xF]);
  }
  return hex;
}

LuaScript MakeLuaScript(std::string name, std::string_view text) {
  return LuaScript{.name = std::move(name), .text = text, .sha1 = Sha1Hex(text)};
}

const LuaScript& CheckScript(Algorithm algorithm) {
  // Indexed by the enum's value, in its order (lua_scripts.cmake composes them in the same order).
  static const std::array<const LuaScript*, kAlgorithmCount>* const scripts =
      new std::array<const LuaScript*, kAlgorithmCount>{
          new LuaScript(MakeLuaScript("check_fixed_window", internal::kCheckFixedWindowLua)),
          new LuaScript(MakeLuaScript("check_sliding_window", internal::kCheckSlidingWindowLua)),
          new LuaScript(MakeLuaScript("check_sliding_log", internal::kCheckSlidingLogLua)),
          new LuaScript(MakeLuaScript("check_token_bucket", internal::kCheckTokenBucketLua)),
          new LuaScript(MakeLuaScript("check_gcra", internal::kCheckGcraLua)),
      };
  return *(*scripts)[static_cast<size_t>(algorithm)];
}

const LuaScript& CheckScript() { return CheckScript(Algorithm::kFixedWindow); }

const LuaScript& CheckAllScript() {
  static const LuaScript* const script =
      new LuaScript(MakeLuaScript("check_all", internal::kCheckAllLua));
  return *script;
}

std::span<const LuaScript* const> ProductionScripts() {
  static const std::array<const LuaScript*, kAlgorithmCount + 1> scripts = {
      &CheckScript(Algorithm::kFixedWindow), &CheckScript(Algorithm::kSlidingWindow),
      &CheckScript(Algorithm::kSlidingLog),  &CheckScript(Algorithm::kTokenBucket),
      &CheckScript(Algorithm::kGcra),        &CheckAllScript()};
  return scripts;
}

}  // namespace sluice
