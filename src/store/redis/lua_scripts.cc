#include "src/store/redis/lua_scripts.h"

#include <array>
#include <chrono>
#include <cstdlib>
#include <span>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include <openssl/evp.h>

#include "src/util/strings.h"

namespace sluice {
namespace internal {
// Defined by the sources that lua_scripts.cmake generates.
extern const std::string_view kCheckFixedWindowLua;
extern const std::string_view kCheckSlidingWindowLua;
extern const std::string_view kCheckSlidingLogLua;
extern const std::string_view kCheckTokenBucketLua;
extern const std::string_view kCheckGcraLua;
extern const std::string_view kCheckAllLua;
extern const std::string_view kLeaseAllLua;
extern const std::string_view kLeaseRefundLua;
extern const std::string_view kLeaseHoldersLua;
extern const std::string_view kLibraryLua;
}  // namespace internal

namespace {

// 2^53 - 1: the largest integer the scripts hold exactly, and so the bound of every time they
// store (common.lua, kMaxTimeUs).
constexpr int64_t kMaxExactInteger = (int64_t{1} << 53) - 1;

// Appends `value` as `bytes` little-endian bytes.
void AppendLittleEndian(uint64_t value, int bytes, std::string& out) {
  for (int i = 0; i < bytes; ++i) {
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }
}

// The i-th little-endian 64-bit integer of `packed`. REQUIRES: packed.size() >= 8 * (i + 1).
int64_t PackedInteger(std::string_view packed, size_t i) {
  uint64_t value = 0;
  for (int b = 7; b >= 0; --b) {
    value = (value << 8) | static_cast<unsigned char>(packed[8 * i + static_cast<size_t>(b)]);
  }
  return static_cast<int64_t>(value);
}

// The packed integers of a script's reply: a string of exactly `count` of them, or Internal.
absl::StatusOr<std::string_view> PackedReply(const RedisReply& reply, size_t count,
                                             const char* what) {
  if (!reply.is_string() || reply.str().size() != 8 * count) {
    return absl::InternalError(absl::StrCat("redis ", what, ": expected ", count,
                                            " packed integers, got ", reply.DebugString()));
  }
  return std::string_view(reply.str());
}

// Decision from the five integers {allowed, limit, remaining, reset_after_us, retry_after_us}
// packed at decision `i` of `packed`, checked against the invariants of docs/algorithms.md so a
// script bug surfaces as Internal instead of a wrong answer.
absl::StatusOr<Decision> ParseDecision(std::string_view packed, size_t first, const char* what) {
  const int64_t allowed = PackedInteger(packed, first);
  const int64_t limit = PackedInteger(packed, first + 1);
  const int64_t remaining = PackedInteger(packed, first + 2);
  const int64_t reset_after = PackedInteger(packed, first + 3);
  const int64_t retry_after = PackedInteger(packed, first + 4);
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

std::string EncodeCheckArgument(uint8_t algorithm, uint64_t limit, uint64_t period_us,
                                uint64_t capacity, uint64_t cost) {
  // common.lua, kCheckFormat '<BI4I8I4I8'.
  std::string check;
  check.reserve(kCheckArgumentBytes);
  AppendLittleEndian(algorithm, 1, check);
  AppendLittleEndian(limit, 4, check);
  AppendLittleEndian(period_us, 8, check);
  AppendLittleEndian(capacity, 4, check);
  AppendLittleEndian(cost, 8, check);
  return check;
}

void AppendCheckArguments(const Limit& limit, int64_t cost, std::vector<std::string>& argv,
                          bool count_rejected, bool refund) {
  const auto algorithm = static_cast<uint8_t>(static_cast<uint8_t>(limit.algorithm) |
                                              (count_rejected ? 0x80 : 0) | (refund ? 0x40 : 0));
  argv.push_back(EncodeCheckArgument(
      algorithm, static_cast<uint64_t>(limit.limit), static_cast<uint64_t>(limit.period.count()),
      static_cast<uint64_t>(limit.Capacity()), static_cast<uint64_t>(cost)));
}

std::string EncodeWantArgument(uint64_t units, uint64_t ttl_us) {
  // lease_entry.lua, kWantFormat '<I8I8'.
  std::string want;
  want.reserve(kWantArgumentBytes);
  AppendLittleEndian(units, 8, want);
  AppendLittleEndian(ttl_us, 8, want);
  return want;
}

void AppendWantArgument(const internal::LeaseWant& want, std::vector<std::string>& argv) {
  argv.push_back(EncodeWantArgument(static_cast<uint64_t>(want.units),
                                    static_cast<uint64_t>(want.ttl.count())));
}

absl::Status ValidateLeaseWant(const internal::LeaseWant& want) {
  if (want.units < 0 || want.units > kMaxCost) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease want: units must be in [0, 2^32], got ", want.units));
  }
  if (want.ttl < std::chrono::milliseconds(1) || want.ttl > kMaxPeriod) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease want: ttl must be in [1 ms, 366 days], got ", want.ttl.count(), "us"));
  }
  return absl::OkStatus();
}

std::string EncodeRefundArgument(uint64_t ends_us, uint64_t granted, uint64_t unspent) {
  // lease_entry.lua, kRefundFormat '<I8I8I8'.
  std::string refund;
  refund.reserve(kRefundArgumentBytes);
  AppendLittleEndian(ends_us, 8, refund);
  AppendLittleEndian(granted, 8, refund);
  AppendLittleEndian(unspent, 8, refund);
  return refund;
}

void AppendRefundArgument(const internal::LeaseRefund& refund, std::vector<std::string>& argv) {
  argv.push_back(EncodeRefundArgument(static_cast<uint64_t>(refund.grant.ends_us),
                                      static_cast<uint64_t>(refund.grant.granted),
                                      static_cast<uint64_t>(refund.unspent)));
}

absl::Status ValidateLeaseRefund(const internal::LeaseRefund& refund) {
  if (absl::Status s = ValidateCheck(refund.check.key, refund.check.limit, 0); !s.ok()) return s;
  const internal::LeaseGrant& grant = refund.grant;
  if (grant.ends_us < 0 || grant.ends_us > kMaxExactInteger || grant.granted < 1 ||
      grant.granted > kMaxCost || refund.unspent < 1 || refund.unspent > grant.granted) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease refund: needs 0 <= ends_us < 2^53, 1 <= granted <= 2^32 and 1 <= unspent <= "
        "granted, got ends_us ",
        grant.ends_us, ", granted ", grant.granted, ", unspent ", refund.unspent));
  }
  return absl::OkStatus();
}

absl::StatusOr<Decision> ParseCheckReply(const RedisReply& reply) {
  absl::StatusOr<std::string_view> packed = PackedReply(reply, kIntegersPerDecision, "check");
  if (!packed.ok()) return packed.status();
  return ParseDecision(*packed, 0, "check");
}

absl::StatusOr<MultiDecision> ParseCheckAllReply(const RedisReply& reply, size_t checks) {
  absl::StatusOr<std::string_view> packed =
      PackedReply(reply, 1 + kIntegersPerDecision * checks, "check_all");
  if (!packed.ok()) return packed.status();
  const int64_t all_allowed = PackedInteger(*packed, 0);
  if (all_allowed != 0 && all_allowed != 1) {
    return absl::InternalError(absl::StrCat("redis check_all: bad all_allowed flag ", all_allowed));
  }
  MultiDecision multi{.allowed = all_allowed == 1, .decisions = {}};
  multi.decisions.reserve(checks);
  bool every_allowed = true;
  for (size_t i = 0; i < checks; ++i) {
    absl::StatusOr<Decision> d = ParseDecision(*packed, 1 + kIntegersPerDecision * i, "check_all");
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

absl::StatusOr<internal::LeasedDecision> ParseLeaseAllReply(const RedisReply& reply,
                                                            size_t checks) {
  absl::StatusOr<std::string_view> packed =
      PackedReply(reply, 2 + kIntegersPerLeasedCheck * checks, "lease_all");
  if (!packed.ok()) return packed.status();
  const int64_t all_allowed = PackedInteger(*packed, 0);
  const int64_t now_us = PackedInteger(*packed, 1);
  if ((all_allowed != 0 && all_allowed != 1) || now_us < 0 || now_us > kMaxExactInteger) {
    return absl::InternalError(
        absl::StrCat("redis lease_all: bad header {", all_allowed, ", ", now_us, "}"));
  }
  internal::LeasedDecision leased{
      .decision = MultiDecision{.allowed = all_allowed == 1, .decisions = {}}, .grants = {}};
  leased.decision.decisions.reserve(checks);
  leased.grants.reserve(checks);
  bool every_allowed = true;
  for (size_t i = 0; i < checks; ++i) {
    const size_t first = 2 + kIntegersPerLeasedCheck * i;
    absl::StatusOr<Decision> d = ParseDecision(*packed, first, "lease_all");
    if (!d.ok()) return d.status();
    const int64_t granted = PackedInteger(*packed, first + 5);
    const int64_t ends_us = PackedInteger(*packed, first + 6);
    // A grant only to an admitted check of an allowed call, and a lease that ends after now.
    const bool valid = granted == 0 ? ends_us == 0
                                    : granted > 0 && granted <= kMaxCost && all_allowed == 1 &&
                                          ends_us > now_us && ends_us <= kMaxExactInteger;
    if (!valid) {
      return absl::InternalError(absl::StrCat("redis lease_all: grant out of bounds: {", granted,
                                              ", ", ends_us, "} at ", now_us));
    }
    every_allowed = every_allowed && d->allowed;
    leased.decision.decisions.push_back(*d);
    leased.grants.push_back(
        internal::LeaseGrant{.granted = granted, .now_us = now_us, .ends_us = ends_us});
  }
  if (leased.decision.allowed != every_allowed) {
    return absl::InternalError("redis lease_all: all_allowed disagrees with the decisions");
  }
  return leased;
}

absl::StatusOr<LeaseRefundReply> ParseLeaseRefundReply(const RedisReply& reply, size_t refunds) {
  absl::StatusOr<std::string_view> packed = PackedReply(reply, 1 + refunds, "lease_refund");
  if (!packed.ok()) return packed.status();
  LeaseRefundReply out{.now_us = PackedInteger(*packed, 0), .given = {}};
  out.given.reserve(refunds);
  for (size_t i = 0; i < refunds; ++i) {
    const int64_t given = PackedInteger(*packed, 1 + i);
    if (given < 0 || given > kMaxCost) {
      return absl::InternalError(
          absl::StrCat("redis lease_refund: units given back out of bounds: ", given));
    }
    out.given.push_back(given);
  }
  return out;
}

absl::StatusOr<int64_t> ParseLeaseHoldersReply(const RedisReply& reply) {
  // lease_holders keeps at most 10,000 records (kMaxHolders in lease_entry.lua).
  if (!reply.is_integer() || reply.integer() < 0 || reply.integer() > 10'000) {
    return absl::InternalError("redis lease_holders: expected an integer count in [0, 10000]");
  }
  return reply.integer();
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

LuaLibrary MakeLuaLibrary(std::string_view source) {
  const std::string version = Sha1Hex(source).substr(0, 16);
  return LuaLibrary{
      .name = absl::StrCat("sluice_", version),
      .text = absl::StrReplaceAll(internal::AbslView(source), {{"@VERSION@", version}})};
}

LuaScript MakeLibraryScript(std::string name, std::string_view text, const LuaLibrary& library) {
  LuaScript script = MakeLuaScript(std::move(name), text);
  script.function = absl::StrCat(library.name, "_", script.name);
  script.library = &library;
  return script;
}

const LuaLibrary& ProductionLibrary() {
  static const LuaLibrary* const library = new LuaLibrary(MakeLuaLibrary(internal::kLibraryLua));
  return *library;
}

const LuaScript& CheckScript(Algorithm algorithm) {
  // Indexed by the enum's value, in its order (lua_scripts.cmake composes them in the same order).
  static const std::array<const LuaScript*, kAlgorithmCount>* const scripts = [] {
    const LuaLibrary& library = ProductionLibrary();
    return new std::array<const LuaScript*, kAlgorithmCount>{
        new LuaScript(
            MakeLibraryScript("check_fixed_window", internal::kCheckFixedWindowLua, library)),
        new LuaScript(
            MakeLibraryScript("check_sliding_window", internal::kCheckSlidingWindowLua, library)),
        new LuaScript(
            MakeLibraryScript("check_sliding_log", internal::kCheckSlidingLogLua, library)),
        new LuaScript(
            MakeLibraryScript("check_token_bucket", internal::kCheckTokenBucketLua, library)),
        new LuaScript(MakeLibraryScript("check_gcra", internal::kCheckGcraLua, library)),
    };
  }();
  return *(*scripts)[static_cast<size_t>(algorithm)];
}

const LuaScript& CheckScript() { return CheckScript(Algorithm::kFixedWindow); }

const LuaScript& CheckAllScript() {
  static const LuaScript* const script =
      new LuaScript(MakeLibraryScript("check_all", internal::kCheckAllLua, ProductionLibrary()));
  return *script;
}

const LuaScript& LeaseAllScript() {
  static const LuaScript* const script =
      new LuaScript(MakeLibraryScript("lease_all", internal::kLeaseAllLua, ProductionLibrary()));
  return *script;
}

const LuaScript& LeaseRefundScript() {
  static const LuaScript* const script = new LuaScript(
      MakeLibraryScript("lease_refund", internal::kLeaseRefundLua, ProductionLibrary()));
  return *script;
}

const LuaScript& LeaseHoldersScript() {
  static const LuaScript* const script = new LuaScript(
      MakeLibraryScript("lease_holders", internal::kLeaseHoldersLua, ProductionLibrary()));
  return *script;
}

std::span<const LuaScript* const> ProductionScripts() {
  static const std::array<const LuaScript*, kAlgorithmCount + 4> scripts = {
      &CheckScript(Algorithm::kFixedWindow),
      &CheckScript(Algorithm::kSlidingWindow),
      &CheckScript(Algorithm::kSlidingLog),
      &CheckScript(Algorithm::kTokenBucket),
      &CheckScript(Algorithm::kGcra),
      &CheckAllScript(),
      &LeaseAllScript(),
      &LeaseRefundScript(),
      &LeaseHoldersScript()};
  return scripts;
}

}  // namespace sluice
