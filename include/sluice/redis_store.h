// RedisStore: limit state in Redis, shared by every instance that uses the same Redis.
//
// Each check is one Lua script call (a function of sluice's library, FCALL, on Redis >= 7;
// EVALSHA before), so deciding and recording are one atomic step on the server, and time comes
// from the Redis server's clock (TIME), never from the application host: instances with skewed
// clocks still agree. Every key written gets a TTL in the same script, at the moment its state
// stops mattering, so Redis memory stays bounded by the live limits. See docs/redis.md for the
// scripts and docs/keys.md for the key scheme.
//
// Errors: InvalidArgument for a bad key, limit or cost (Redis is not called); Unavailable when
// Redis cannot be reached or refuses to serve (connection lost, BUSY, OOM, LOADING, READONLY);
// DeadlineExceeded when a call misses `command_timeout` (its outcome is unknown and it is never
// resent); Internal for a reply that breaks the script's contract. A failure policy
// (failure_policy.h) turns these into decisions when wanted.
//
// CheckAll() runs every check in one script call, atomically: on a single Redis server (or a
// Sentinel-managed one) any keys can be combined. Redis Cluster requires every key of one script
// in one slot. Keys with one tag (sluice/key.h) always share a slot; for keys in different slots,
// `cross_slot` chooses: refuse them with InvalidArgument (the default, all-or-nothing kept), or
// split them into one atomic call per slot with a stated bound on what a denied request may
// consume (docs/redis.md, "Keys on Redis Cluster").
//
// Example:
//   absl::StatusOr<std::unique_ptr<RedisStore>> store =
//       RedisStore::Create({.url = "redis://10.0.0.5:6379/0", .command_timeout = 15ms});
//   if (!store.ok()) return store.status();
//
// Thread safety: thread-safe. Async callbacks run on the store's I/O thread, or inline before the
// call returns when the input is invalid or the check is refused without reaching Redis (not
// connected, queue full). Callbacks must not block; the sync methods must not be called from
// them.
#ifndef SLUICE_REDIS_STORE_H_
#define SLUICE_REDIS_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/clock.h"
#include "sluice/lease_stats.h"
#include "sluice/store.h"

namespace sluice {

// What CheckAll() does on Redis Cluster with keys in more than one slot.
enum class CrossSlot : uint8_t {
  // Refuse the call with InvalidArgument: CheckAll() stays all-or-nothing.
  kRefuse,
  // One atomic script per slot, sent in parallel; the call is allowed only when every slot's
  // script allowed its checks. Not all-or-nothing across slots: a call denied in one slot has
  // still recorded its costs in the slots that allowed theirs (at most its cost per check in
  // another slot, as envoyproxy/ratelimit, which never rolls back). A store error in any slot
  // fails the whole call, whatever the others recorded.
  kSplit,
};

struct RedisStoreOptions {
  // Where Redis is, as a store URL (store_url.h): "redis://[user:password@]host[:port][/db]",
  // "rediss://..." for TLS. Its timeout_ms, connect_timeout_ms and connections parameters override
  // the fields below. Default: "redis://127.0.0.1:6379".
  std::string url = "redis://127.0.0.1:6379";
  // Prepended to every key; printable ASCII without '{' or '}', at most 64 bytes (docs/keys.md).
  // Default: "sluice:".
  std::string key_prefix = "sluice:";
  // Deadline of one check, from the call to its decision, including a resend after NOSCRIPT.
  // Default: 50 ms. Behind Envoy's 20 ms rate limit timeout use about 15 ms.
  std::chrono::milliseconds command_timeout{50};
  // Deadline of one connection attempt (TCP, TLS, AUTH, SELECT). Default: 1 s.
  std::chrono::milliseconds connect_timeout{1000};
  // Connections multiplexing all checks. Default: 1 (already reaches Redis's ceiling).
  int connections = 1;
  // Set when the server is a Redis Cluster (implied by a redis-cluster:// URL): CheckAll() then
  // sends keys of one slot together and treats the others as `cross_slot` says. Default: false.
  bool cluster = false;
  // With `cluster`: what CheckAll() does with keys in several slots. Default: kRefuse.
  CrossSlot cross_slot = CrossSlot::kRefuse;
  // At start, ask the server for its maxmemory-policy and warn (log, and Warnings()) when it may
  // evict keys: an evicted limiter key silently resets its limit. Needs CONFIG GET, which a
  // restricted ACL user may lack; a refusal is ignored. Default: true.
  bool check_eviction_policy = true;
  // Time source for deadlines. Not owned; must outlive the store. Default (nullptr): Clock::Real().
  Clock* clock = nullptr;
  // Durability (set from the URL's min_replicas and min_replicas_timeout_ms, which win): when
  // positive, each decision is returned only after `WAIT min_replicas min_replicas_timeout`
  // confirms that many replicas have its write; otherwise the check fails with Unavailable and
  // the failure policy answers (docs/redis.md, "Durability"). Default: 0 (no WAIT).
  int min_replicas = 0;
  std::chrono::milliseconds min_replicas_timeout{10};
  // Run the scripts as functions of one library (FUNCTION LOAD once, then FCALL) where the server
  // has functions (Redis >= 7): Redis keeps them across restarts and failovers, and each call
  // costs it less. A server without functions, or whose ACL refuses FUNCTION LOAD, is detected
  // and gets EVALSHA. false: always EVALSHA (docs/redis.md, "Functions"). Default: true.
  bool use_functions = true;
};

// Counters of a Redis store (values may be slightly outdated).
struct RedisStoreStats {
  // Script calls made (one per Check or CheckAll that reached the client).
  uint64_t script_calls = 0;
  // Calls resent because Redis lacked the script or its function library (NOSCRIPT, "Function
  // not found": a flushed cache, a new server), had no functions, or refused a function at
  // maxmemory.
  uint64_t noscript_resends = 0;
  // Whether checks run as functions (FCALL) now: use_functions, until a server turned them down.
  bool functions = false;
  // Connections established (first connects and reconnects), connection attempts that failed,
  // and established connections lost, over every server. Each loss, the first failed attempt of
  // a series and each recovery are also logged (URL redacted, at most four lines a second per
  // client); failed checks are logged by the failure policy (failure_policy.h).
  uint64_t connects = 0;
  uint64_t connect_failures = 0;
  uint64_t disconnects = 0;
  // With `lease=true` in the URL: true, and the leases' counters (docs/redis.md, "Leases").
  bool leases = false;
  LeaseStats lease{};
};

class RedisStore : public Store {
 public:
  // RedisStore::Create()
  //
  // Returns a store that connects in the background (checks made before the first connection
  // wait for it within their deadline), or InvalidArgument for a bad URL, prefix or option.
  // Redis being down is not an error here: checks fail with Unavailable until it is back.
  static absl::StatusOr<std::unique_ptr<RedisStore>> Create(const RedisStoreOptions& options);

  // RedisStore::WaitForConnection()
  //
  // Blocks until a connection is ready (OK), or returns DeadlineExceeded after `timeout`, or the
  // connection error (PermissionDenied for bad credentials). For start-up checks and tests.
  virtual absl::Status WaitForConnection(std::chrono::milliseconds timeout) = 0;

  // RedisStore::Warnings()
  //
  // Returns warnings about the server found so far, e.g. an evicting maxmemory-policy.
  virtual std::vector<std::string> Warnings() const = 0;

  // RedisStore::Stats()
  virtual RedisStoreStats Stats() const = 0;

  std::string_view Name() const override { return "redis"; }
};

}  // namespace sluice

#endif  // SLUICE_REDIS_STORE_H_
