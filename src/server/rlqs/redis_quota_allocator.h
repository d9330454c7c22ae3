// RedisQuotaAllocator: the QuotaAllocator shared by every sluiced on one Redis: each report is one
// call of the quota_share script (src/lua/quota_share.lua) on the bucket's hash, which takes the
// time from Redis TIME and gives the hash a TTL that ends with its last record. Redis work is one
// call per (client, bucket) report, whatever the request rate.
//
// Example:
//   RedisQuotaAllocator allocator(router, {.key_prefix = "sluice:"});
//   allocator.Allocate(report, [](absl::StatusOr<QuotaShare> share) { ... });  // a Redis thread
//
// Thread safety: thread-safe.
#ifndef SLUICE_SERVER_RLQS_REDIS_QUOTA_ALLOCATOR_H_
#define SLUICE_SERVER_RLQS_REDIS_QUOTA_ALLOCATOR_H_

#include <chrono>
#include <memory>
#include <string>

#include "sluice/clock.h"

#include "src/server/rlqs/quota_allocator.h"
#include "src/store/redis/client/redis_router.h"
#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/script_runner.h"

namespace sluice {

struct RedisQuotaAllocatorOptions {
  // Prepended to "rlqs:<bucket>", the bucket's key. Default: "sluice:".
  std::string key_prefix = "sluice:";
  // Deadline of one bucket's call. Reports are off Envoy's request path (every 5 s), and a report
  // of many buckets sends all its calls at once, so the deadline allows for them queueing behind
  // each other: with 50 ms, 10 reports of 100 buckets at once timed out on a loaded 2-core
  // machine. Default: 1 s.
  std::chrono::milliseconds timeout{1000};
};

// QuotaShareScript()
//
// Returns the production quota_share script (time from Redis TIME), run with EVALSHA.
const LuaScript& QuotaShareScript();

class RedisQuotaAllocator final : public QuotaAllocator {
 public:
  RedisQuotaAllocator(std::weak_ptr<RedisRouter> router, const RedisQuotaAllocatorOptions& options)
      : RedisQuotaAllocator(std::move(router), options, QuotaShareScript(), nullptr) {}

  // For tests: runs `script`, and when `now_clock` is set passes its EpochNow() in microseconds
  // as ARGV[1] (the time_for_test.lua variant of the script). Neither is owned.
  RedisQuotaAllocator(std::weak_ptr<RedisRouter> router, const RedisQuotaAllocatorOptions& options,
                      const LuaScript& script, Clock* now_clock);

  // Calls `done` on the Redis client's thread (inline for an invalid report).
  void Allocate(const QuotaReport& report, ShareCallback done) override;

  // The Redis key of `bucket`.
  std::string BucketKey(const std::string& bucket) const;

 private:
  RedisQuotaAllocatorOptions options_;
  ScriptRunner runner_;
  const LuaScript& script_;
  Clock* now_clock_;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_RLQS_REDIS_QUOTA_ALLOCATOR_H_
