#include "src/store/redis/lua_scripts_for_test.h"

#include <array>

namespace sluice {
namespace internal {
// Defined by the sources that lua_scripts.cmake generates.
extern const std::string_view kCheckFixedWindowLuaForTest;
extern const std::string_view kCheckSlidingWindowLuaForTest;
extern const std::string_view kCheckSlidingLogLuaForTest;
extern const std::string_view kCheckTokenBucketLuaForTest;
extern const std::string_view kCheckGcraLuaForTest;
extern const std::string_view kCheckAllLuaForTest;
}  // namespace internal

const LuaScript& CheckScriptForTest(Algorithm algorithm) {
  static const std::array<const LuaScript*, kAlgorithmCount>* const scripts =
      new std::array<const LuaScript*, kAlgorithmCount>{
          new LuaScript(
              MakeLuaScript("check_fixed_window_for_test", internal::kCheckFixedWindowLuaForTest)),
          new LuaScript(MakeLuaScript("check_sliding_window_for_test",
                                      internal::kCheckSlidingWindowLuaForTest)),
          new LuaScript(
              MakeLuaScript("check_sliding_log_for_test", internal::kCheckSlidingLogLuaForTest)),
          new LuaScript(
              MakeLuaScript("check_token_bucket_for_test", internal::kCheckTokenBucketLuaForTest)),
          new LuaScript(MakeLuaScript("check_gcra_for_test", internal::kCheckGcraLuaForTest)),
      };
  return *(*scripts)[static_cast<size_t>(algorithm)];
}

const LuaScript& CheckAllScriptForTest() {
  static const LuaScript* const script =
      new LuaScript(MakeLuaScript("check_all_for_test", internal::kCheckAllLuaForTest));
  return *script;
}

}  // namespace sluice
