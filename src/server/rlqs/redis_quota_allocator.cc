#include "src/server/rlqs/redis_quota_allocator.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include "src/store/redis/script_status.h"

namespace sluice {
namespace internal {
extern const std::string_view kQuotaShareLua;
}  // namespace internal

namespace {

absl::StatusOr<QuotaShare> ParseShare(const RedisReply& reply, std::chrono::seconds ttl) {
  absl::StatusOr<std::span<const RedisReply>> values = reply.AsArray();
  if (!values.ok()) return values.status();
  if (values->size() != 5) {
    return absl::InternalError(
        absl::StrCat("quota_share: expected 5 integers, got ", values->size()));
  }
  int64_t v[5];
  for (size_t i = 0; i < 5; ++i) {
    absl::StatusOr<int64_t> n = (*values)[i].AsInteger();
    if (!n.ok()) return n.status();
    if (*n < 0) return absl::InternalError("quota_share: negative value in reply");
    v[i] = *n;
  }
  return QuotaShare{.granted = static_cast<uint64_t>(v[0]),
                    .wanted = static_cast<uint64_t>(v[4]),
                    .ttl = ttl,
                    .clients = static_cast<uint64_t>(v[1]),
                    .demand = static_cast<uint64_t>(v[2]),
                    .granted_total = static_cast<uint64_t>(v[3])};
}

}  // namespace

const LuaScript& QuotaShareScript() {
  static const LuaScript script = MakeLuaScript("quota_share", internal::kQuotaShareLua);
  return script;
}

RedisQuotaAllocator::RedisQuotaAllocator(std::weak_ptr<RedisRouter> router,
                                         const RedisQuotaAllocatorOptions& options,
                                         const LuaScript& script, Clock* now_clock)
    : options_(options),
      runner_(std::move(router), {.timeout = options.timeout, .use_functions = false}),
      script_(script),
      now_clock_(now_clock) {}

std::string RedisQuotaAllocator::BucketKey(const std::string& bucket) const {
  return absl::StrCat(options_.key_prefix, "rlqs:", bucket);
}

void RedisQuotaAllocator::Allocate(const QuotaReport& report, ShareCallback done) {
  if (absl::Status status = ValidateQuotaReport(report); !status.ok()) {
    std::move(done)(std::move(status));
    return;
  }
  std::vector<std::string> args;
  if (now_clock_ != nullptr) args.push_back(absl::StrCat(now_clock_->EpochNow().count()));
  args.push_back(report.client);
  args.push_back(absl::StrCat(std::min(report.demand, kMaxQuotaDemand)));
  args.push_back(absl::StrCat(report.limit));
  args.push_back(absl::StrCat(std::chrono::microseconds(report.ttl).count()));
  args.push_back(report.top_up ? "1" : "0");
  std::string key = BucketKey(report.bucket);
  const std::chrono::seconds ttl = report.ttl;
  runner_.Run(script_, {key}, args,
              [key, ttl, done = std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
                std::move(done)(internal::ScriptResult(
                    reply, key, [ttl](const RedisReply& r) { return ParseShare(r, ttl); }));
              });
}

}  // namespace sluice
