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
extern const std::string_view kLeaseAllLuaForTest;
extern const std::string_view kLeaseRefundLuaForTest;
extern const std::string_view kLeaseHoldersLuaForTest;
extern const std::string_view kLibraryLuaForTest;
}  // namespace internal

const LuaLibrary& LibraryForTest() {
  static const LuaLibrary* const library =
      new LuaLibrary(MakeLuaLibrary(internal::kLibraryLuaForTest));
  return *library;
}

const LuaScript& CheckScriptForTest(Algorithm algorithm) {
  // The function names are the production ones under the test library's name.
  static const std::array<const LuaScript*, kAlgorithmCount>* const scripts = [] {
    const LuaLibrary& library = LibraryForTest();
    auto make = [&library](const char* name, std::string_view text) {
      return new LuaScript(MakeLibraryScript(name, text, library));
    };
    return new std::array<const LuaScript*, kAlgorithmCount>{
        make("check_fixed_window", internal::kCheckFixedWindowLuaForTest),
        make("check_sliding_window", internal::kCheckSlidingWindowLuaForTest),
        make("check_sliding_log", internal::kCheckSlidingLogLuaForTest),
        make("check_token_bucket", internal::kCheckTokenBucketLuaForTest),
        make("check_gcra", internal::kCheckGcraLuaForTest),
    };
  }();
  return *(*scripts)[static_cast<size_t>(algorithm)];
}

const LuaScript& CheckAllScriptForTest() {
  static const LuaScript* const script = new LuaScript(
      MakeLibraryScript("check_all", internal::kCheckAllLuaForTest, LibraryForTest()));
  return *script;
}

const LuaScript& LeaseAllScriptForTest() {
  static const LuaScript* const script = new LuaScript(
      MakeLibraryScript("lease_all", internal::kLeaseAllLuaForTest, LibraryForTest()));
  return *script;
}

const LuaScript& LeaseRefundScriptForTest() {
  static const LuaScript* const script = new LuaScript(
      MakeLibraryScript("lease_refund", internal::kLeaseRefundLuaForTest, LibraryForTest()));
  return *script;
}

const LuaScript& LeaseHoldersScriptForTest() {
  static const LuaScript* const script = new LuaScript(
      MakeLibraryScript("lease_holders", internal::kLeaseHoldersLuaForTest, LibraryForTest()));
  return *script;
}

}  // namespace sluice
