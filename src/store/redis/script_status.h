// The Status of a store script's call: the one translation of a script's error reply, and the
// Redis key added to every failure, shared by the checks (redis_store.cc) and the leasing calls
// (redis_lease.cc).
//
// Thread safety: pure functions.
#ifndef SLUICE_STORE_REDIS_SCRIPT_STATUS_H_
#define SLUICE_STORE_REDIS_SCRIPT_STATUS_H_

#include <string>

#include "absl/status/status.h"

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

}  // namespace sluice::internal

#endif  // SLUICE_STORE_REDIS_SCRIPT_STATUS_H_
