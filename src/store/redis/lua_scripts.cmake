# The Lua scripts of the Redis store, composed at build time from the pieces in src/lua/ and
# embedded as C++ strings (sluice_embed_text). Included by src/store/redis/CMakeLists.txt.
#
#   check            = common + time          + algorithms + parse_check + check_entry
#   check_all        = common + time          + algorithms + parse_check + check_all_entry
#   check_for_test   = common + time_for_test + algorithms + parse_check + check_entry
#   check_all_for_test likewise.
# Production and test scripts share every piece except the time source; the ...ForTest scripts
# are only in sluice_lua_for_test, which only tests link.
set(SLUICE_LUA_DIR ${PROJECT_SOURCE_DIR}/src/lua)
set(SLUICE_LUA_BODY
  ${SLUICE_LUA_DIR}/fixed_window.lua
  ${SLUICE_LUA_DIR}/sliding_window.lua
  ${SLUICE_LUA_DIR}/sliding_log.lua
  ${SLUICE_LUA_DIR}/token_bucket.lua
  ${SLUICE_LUA_DIR}/gcra.lua
  ${SLUICE_LUA_DIR}/parse_check.lua)
set(SLUICE_LUA_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/lua)

# sluice_lua_script(NAME TIME_PIECE ENTRY_PIECE VAR OUT_CC_VAR): composes ${NAME}.lua and embeds
# it as sluice::internal::VAR; sets OUT_CC_VAR to the generated C++ source.
function(sluice_lua_script name time_piece entry_piece var out_cc_var)
  set(pieces ${SLUICE_LUA_DIR}/common.lua ${SLUICE_LUA_DIR}/${time_piece} ${SLUICE_LUA_BODY}
      ${SLUICE_LUA_DIR}/${entry_piece})
  string(REPLACE ";" "|" pieces_arg "${pieces}")
  set(lua ${SLUICE_LUA_GEN_DIR}/${name}.lua)
  add_custom_command(
    OUTPUT ${lua}
    COMMAND ${CMAKE_COMMAND} -DOUT=${lua} -DPIECES=${pieces_arg}
            -P ${SLUICE_LUA_DIR}/ComposeLua.cmake
    DEPENDS ${pieces} ${SLUICE_LUA_DIR}/ComposeLua.cmake
    COMMENT "Composing ${name}.lua"
    VERBATIM)
  set(cc ${SLUICE_LUA_GEN_DIR}/${name}_lua.cc)
  sluice_embed_text(${cc} ${var} ${lua})
  set(${out_cc_var} ${cc} PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY ${SLUICE_LUA_GEN_DIR})
sluice_lua_script(check time.lua check_entry.lua kCheckLua SLUICE_CHECK_LUA_CC)
sluice_lua_script(check_all time.lua check_all_entry.lua kCheckAllLua SLUICE_CHECK_ALL_LUA_CC)
sluice_lua_script(check_for_test time_for_test.lua check_entry.lua kCheckLuaForTest
                  SLUICE_CHECK_LUA_FOR_TEST_CC)
sluice_lua_script(check_all_for_test time_for_test.lua check_all_entry.lua kCheckAllLuaForTest
                  SLUICE_CHECK_ALL_LUA_FOR_TEST_CC)

# The production scripts, linked into sluice_store_redis.
set(SLUICE_LUA_SOURCES ${SLUICE_CHECK_LUA_CC} ${SLUICE_CHECK_ALL_LUA_CC})

# Test-only: the scripts that take `now` from ARGV[1]. Production targets must not link this.
add_library(sluice_lua_for_test STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/lua_scripts_for_test.cc
  ${SLUICE_CHECK_LUA_FOR_TEST_CC}
  ${SLUICE_CHECK_ALL_LUA_FOR_TEST_CC})
target_include_directories(sluice_lua_for_test PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
target_link_libraries(sluice_lua_for_test PUBLIC sluice_store_redis)
