// QuotaShareScriptForTest(): the quota_share script with time_for_test.lua instead of time.lua,
// so ARGV[1] is `now` in microseconds (decimal) and the usual arguments follow. Lives in
// sluice_rlqs_lua_for_test, which only tests link.
//
// Thread safety: immutable after first use.
#ifndef SLUICE_SERVER_RLQS_QUOTA_SHARE_FOR_TEST_H_
#define SLUICE_SERVER_RLQS_QUOTA_SHARE_FOR_TEST_H_

#include "src/store/redis/lua_scripts.h"

namespace sluice {

const LuaScript& QuotaShareScriptForTest();

}  // namespace sluice

#endif  // SLUICE_SERVER_RLQS_QUOTA_SHARE_FOR_TEST_H_
