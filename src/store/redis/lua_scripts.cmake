# The Lua scripts of the Redis store, composed at build time from the pieces in src/lua/ and
# embedded as C++ strings (sluice_embed_text). Included by src/store/redis/CMakeLists.txt.
#
#   check_<algorithm>  = common + time + <algorithm> + parse_check + check_<algorithm>
#                        (one per algorithm, so a call runs only its own algorithm's code)
#   check_all          = common + time + all five algorithms + parse_check + check_all_entry
#   ..._for_test       likewise, with time_for_test instead of time
# Production and test scripts share every piece except the time source; the ...ForTest scripts
# are only in sluice_lua_for_test, which only tests link.
set(SLUICE_LUA_DIR ${PROJECT_SOURCE_DIR}/src/lua)
# algorithm:CamelName, in the order of enum class Algorithm (lua_scripts.cc indexes by it).
set(SLUICE_LUA_ALGORITHMS
  fixed_window:FixedWindow
  sliding_window:SlidingWindow
  sliding_log:SlidingLog
  token_bucket:TokenBucket
  gcra:Gcra)
set(SLUICE_LUA_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/lua)

# sluice_lua_script(NAME VAR OUT_CC_VAR PIECE...): composes ${NAME}.lua from the pieces (file
# names in src/lua/) and embeds it as sluice::internal::VAR; sets OUT_CC_VAR to the generated C++
# source.
function(sluice_lua_script name var out_cc_var)
  set(pieces "")
  foreach(piece IN LISTS ARGN)
    list(APPEND pieces ${SLUICE_LUA_DIR}/${piece})
  endforeach()
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
set(SLUICE_LUA_SOURCES "")
set(SLUICE_LUA_FOR_TEST_SOURCES "")
set(all_algorithm_pieces "")
foreach(entry IN LISTS SLUICE_LUA_ALGORITHMS)
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 algorithm)
  list(GET parts 1 camel)
  list(APPEND all_algorithm_pieces ${algorithm}.lua)
  sluice_lua_script(check_${algorithm} kCheck${camel}Lua cc
                    common.lua time.lua ${algorithm}.lua parse_check.lua check_${algorithm}.lua)
  list(APPEND SLUICE_LUA_SOURCES ${cc})
  sluice_lua_script(check_${algorithm}_for_test kCheck${camel}LuaForTest cc
                    common.lua time_for_test.lua ${algorithm}.lua parse_check.lua
                    check_${algorithm}.lua)
  list(APPEND SLUICE_LUA_FOR_TEST_SOURCES ${cc})
endforeach()
sluice_lua_script(check_all kCheckAllLua cc
                  common.lua time.lua ${all_algorithm_pieces} parse_check.lua check_all_entry.lua)
list(APPEND SLUICE_LUA_SOURCES ${cc})
sluice_lua_script(check_all_for_test kCheckAllLuaForTest cc
                  common.lua time_for_test.lua ${all_algorithm_pieces} parse_check.lua
                  check_all_entry.lua)
list(APPEND SLUICE_LUA_FOR_TEST_SOURCES ${cc})

# Test-only: the scripts that take `now` from ARGV[1]. Production targets must not link this.
add_library(sluice_lua_for_test STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/lua_scripts_for_test.cc
  ${SLUICE_LUA_FOR_TEST_SOURCES})
target_include_directories(sluice_lua_for_test PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
target_link_libraries(sluice_lua_for_test PUBLIC sluice_store_redis)
