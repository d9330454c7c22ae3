// Test-only variants of the Redis store's scripts: the same pieces as CheckScript(algorithm) and
// CheckAllScript(), with time_for_test.lua instead of time.lua, so ARGV[1] is `now` in
// microseconds and the usual arguments follow. Lives in sluice_lua_for_test, which only tests
// link; production code cannot load these scripts.
//
// Example:
//   EVALSHA CheckScriptForTest(Algorithm::kFixedWindow).sha1 1 key 1000000 fixed_window 10 1000000
//   10 1
//
// Thread safety: immutable after first use.
#ifndef SLUICE_STORE_REDIS_LUA_SCRIPTS_FOR_TEST_H_
#define SLUICE_STORE_REDIS_LUA_SCRIPTS_FOR_TEST_H_

#include "src/store/redis/lua_scripts.h"

namespace sluice {

// CheckScriptForTest()
const LuaScript& CheckScriptForTest(Algorithm algorithm);

// CheckAllScriptForTest()
const LuaScript& CheckAllScriptForTest();

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_LUA_SCRIPTS_FOR_TEST_H_
