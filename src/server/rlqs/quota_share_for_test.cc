#include "src/server/rlqs/quota_share_for_test.h"

#include <string_view>

#include "src/store/redis/lua_scripts.h"

namespace sluice {
namespace internal {
extern const std::string_view kQuotaShareLuaForTest;
}  // namespace internal

const LuaScript& QuotaShareScriptForTest() {
  static const LuaScript script =
      MakeLuaScript("quota_share_for_test", internal::kQuotaShareLuaForTest);
  return script;
}

}  // namespace sluice
