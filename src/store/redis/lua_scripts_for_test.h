// Test-only variants of the Redis store's scripts and library: the same pieces as
// CheckScript(algorithm), CheckAllScript(), LeaseAllScript(), LeaseRefundScript() and
// ProductionLibrary(), with time_for_test.lua instead of time.lua, so ARGV[1] is `now` in
// microseconds (decimal) and the usual arguments follow. Lives in sluice_lua_for_test, which only
// tests link; production code cannot load these scripts.
//
// Example:
//   EVALSHA CheckScriptForTest(Algorithm::kFixedWindow).sha1 1 key 1000000 <check>
//   FCALL CheckScriptForTest(Algorithm::kFixedWindow).function 1 key 1000000 <check>
//   (after FUNCTION LOAD LibraryForTest().text)
//
// Thread safety: immutable after first use.
#ifndef SLUICE_STORE_REDIS_LUA_SCRIPTS_FOR_TEST_H_
#define SLUICE_STORE_REDIS_LUA_SCRIPTS_FOR_TEST_H_

#include "src/store/redis/lua_scripts.h"

namespace sluice {

// LibraryForTest()
const LuaLibrary& LibraryForTest();

// CheckScriptForTest()
const LuaScript& CheckScriptForTest(Algorithm algorithm);

// CheckAllScriptForTest()
const LuaScript& CheckAllScriptForTest();

// LeaseAllScriptForTest(), LeaseRefundScriptForTest(), LeaseHoldersScriptForTest()
const LuaScript& LeaseAllScriptForTest();
const LuaScript& LeaseRefundScriptForTest();
const LuaScript& LeaseHoldersScriptForTest();

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_LUA_SCRIPTS_FOR_TEST_H_
