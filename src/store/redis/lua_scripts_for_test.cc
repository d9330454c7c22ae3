#include "src/store/redis/lua_scripts_for_test.h"

namespace sluice {
namespace internal {
extern const std::string_view kCheckLuaForTest;
extern const std::string_view kCheckAllLuaForTest;
}  // namespace internal

const LuaScript& CheckScriptForTest() {
  static const LuaScript* const script =
      new LuaScript(MakeLuaScript("check_for_test", internal::kCheckLuaForTest));
  return *script;
}

const LuaScript& CheckAllScriptForTest() {
  static const LuaScript* const script =
      new LuaScript(MakeLuaScript("check_all_for_test", internal::kCheckAllLuaForTest));
  return *script;
}

}  // namespace sluice
