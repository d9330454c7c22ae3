// The Status of a store script's call: the one translation of a script's error reply, and the
// Redis key added to every failure, shared by the checks (redis_store.cc) and the leasing calls
// (redis_lease.cc).
//
// Thread safety: pure functions.
#ifndef SLUICE_STORE_REDIS_SCRIPT_STATUS_H_
#define SLUICE_STORE_REDIS_SCRIPT_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_reply.h"

namespace sluice::internal {

// WithKey()
//
// Returns `status` with the Redis key added to its message, so a failure names the limit it hit.
// Keys are escaped and at most kMaxRedisKeyBytes long (docs/keys.md), so they are safe to log.
absl::Status WithKey(const absl::Status& status, const std::string& redis_key);

// ScriptErrorToStatus()
//
// Returns the Status of a script's error reply: SLUICE_BADARG (the script refused an argument the
// C++ validation accepted: still the caller's input) is InvalidArgument; any other SLUICE_ code
// (SLUICE_BADSTATE) is Internal; Redis's own errors map as redis_error.h says (BUSY, OOM,
// LOADING, READONLY: Unavailable; others, such as WRONGTYPE on a key someone else wrote:
// Internal).
absl::Status ScriptErrorToStatus(const RedisReply& reply);

// ScriptResult()
//
// Returns what a script call answered: `parse(*reply)` (an absl::StatusOr) for a reply that is not
// an error, else the call's failure or ScriptErrorToStatus(); every failure names `redis_key`.
template <typename Parse>
auto ScriptResult(const absl::StatusOr<RedisReply>& reply, const std::string& redis_key,
                  Parse parse) -> decltype(parse(*reply)) {
  if (!reply.ok()) return WithKey(reply.status(), redis_key);
  if (reply->is_error()) return WithKey(ScriptErrorToStatus(*reply), redis_key);
  auto parsed = parse(*reply);
  if (!parsed.ok()) return WithKey(parsed.status(), redis_key);
  return parsed;
}

}  // namespace sluice::internal

#endif  // SLUICE_STORE_REDIS_SCRIPT_STATUS_H_
