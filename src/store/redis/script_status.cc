#include "src/store/redis/script_status.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include "src/store/redis/client/redis_error.h"
#include "src/store/redis/lua_scripts.h"

namespace sluice::internal {

absl::Status WithKey(const absl::Status& status, const std::string& redis_key) {
  return {status.code(), absl::StrCat(status.message(), " [", redis_key, "]")};
}

absl::Status ScriptErrorToStatus(const RedisReply& reply) {
  const std::string& message = reply.str();
  if (message.starts_with(kScriptBadArgumentCode)) {
    return absl::InvalidArgumentError(absl::StrCat("redis script: ", message));
  }
  if (message.starts_with("SLUICE_")) {
    return absl::InternalError(absl::StrCat("redis script: ", message));
  }
  return ReplyErrorToStatus("EVALSHA", reply);
}

}  // namespace sluice::internal
