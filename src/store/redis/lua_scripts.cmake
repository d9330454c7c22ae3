# The Lua code of the Redis store, composed at build time from the pieces in src/lua/ and
# embedded as C++ strings (sluice_embed_text). Included by src/store/redis/CMakeLists.txt.
#
#   library            = '#!lua name=...' + common + time + all five algorithms + parse_check +
#                        every check_<algorithm> + check_all_entry + lease_entry + library_entry
#                        (the function library, FUNCTION LOAD / FCALL, Redis >= 7)
#   check_<algorithm>  = common + time + <algorithm> + parse_check + check_<algorithm> +
#                        'return Check<Algorithm>(KEYS, ARGV)'
#                        (EVALSHA scripts, one per algorithm, so a call runs only its own code)
#   check_all          = common + time + all five algorithms + parse_check + check_all_entry +
#                        'return CheckAll(KEYS, ARGV)'
#   lease_all          = check_all's pieces + lease_entry + 'return LeaseAll(KEYS, ARGV)'
#   lease_refund       = check_all's pieces + lease_entry + 'return LeaseRefund(KEYS, ARGV)'
#   lease_holders      = check_all's pieces + lease_entry + 'return LeaseHolders(KEYS, ARGV)'
#   ..._for_test       likewise, with time_for_test instead of time
# "<algorithm>" is lease_record + <algorithm> for the token bucket and GCRA, whose states carry
# a lease record.
# Production and test code share every piece except the time source; the ...ForTest scripts and
# library are only in sluice_lua_for_test, which only tests link.
set(SLUICE_LUA_DIR ${PROJECT_SOURCE_DIR}/src/lua)
# algorithm:CamelName, in the order of enum class Algorithm (lua_scripts.cc indexes by it).
set(SLUICE_LUA_ALGORITHMS
  fixed_window:FixedWindow
  sliding_window:SlidingWindow
  sliding_log:SlidingLog
  token_bucket:TokenBucket
  gcra:Gcra)
set(SLUICE_LUA_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/lua)

# sluice_lua_script(NAME VAR OUT_CC_VAR [HEAD line] [TAIL line] PIECES piece...): composes
# ${NAME}.lua from the pieces (file names in src/lua/), with HEAD as its first line and TAIL as its
# last, and embeds it as sluice::internal::VAR; sets OUT_CC_VAR to the generated C++ source.
function(sluice_lua_script name var out_cc_var)
  cmake_parse_arguments(ARG "" "HEAD;TAIL" "PIECES" ${ARGN})
  set(pieces "")
  foreach(piece IN LISTS ARG_PIECES)
    list(APPEND pieces ${SLUICE_LUA_DIR}/${piece})
  endforeach()
  string(REPLACE ";" "|" pieces_arg "${pieces}")
  set(lua ${SLUICE_LUA_GEN_DIR}/${name}.lua)
  add_custom_command(
    OUTPUT ${lua}
    COMMAND ${CMAKE_COMMAND} -DOUT=${lua} -DPIECES=${pieces_arg} "-DHEAD=${ARG_HEAD}"
            "-DTAIL=${ARG_TAIL}" -P ${SLUICE_LUA_DIR}/ComposeLua.cmake
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
set(all_check_pieces "")
foreach(entry IN LISTS SLUICE_LUA_ALGORITHMS)
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 algorithm)
  list(GET parts 1 camel)
  # The algorithm's pieces in its single-check script, and what it adds to the scripts holding
  # every algorithm: the lease record comes once, before the token bucket (gcra follows it).
  set(single_pieces ${algorithm}.lua)
  set(added_pieces ${algorithm}.lua)
  if(algorithm STREQUAL "token_bucket")
    set(single_pieces lease_record.lua ${algorithm}.lua)
    set(added_pieces lease_record.lua ${algorithm}.lua)
  elseif(algorithm STREQUAL "gcra")
    set(single_pieces lease_record.lua ${algorithm}.lua)
  endif()
  list(APPEND all_algorithm_pieces ${added_pieces})
  list(APPEND all_check_pieces check_${algorithm}.lua)
  foreach(variant IN ITEMS production for_test)
    if(variant STREQUAL "production")
      set(time time.lua)
      set(name_suffix "")
      set(var_suffix "")
    else()
      set(time time_for_test.lua)
      set(name_suffix _for_test)
      set(var_suffix ForTest)
    endif()
    sluice_lua_script(check_${algorithm}${name_suffix} kCheck${camel}Lua${var_suffix} cc
                      TAIL "return Check${camel}(KEYS, ARGV)"
                      PIECES common.lua ${time} ${single_pieces} parse_check.lua
                             check_${algorithm}.lua)
    if(variant STREQUAL "production")
      list(APPEND SLUICE_LUA_SOURCES ${cc})
    else()
      list(APPEND SLUICE_LUA_FOR_TEST_SOURCES ${cc})
    endif()
  endforeach()
endforeach()
sluice_lua_script(check_all kCheckAllLua cc
                  TAIL "return CheckAll(KEYS, ARGV)"
                  PIECES common.lua time.lua ${all_algorithm_pieces} parse_check.lua
                         check_all_entry.lua)
list(APPEND SLUICE_LUA_SOURCES ${cc})
sluice_lua_script(check_all_for_test kCheckAllLuaForTest cc
                  TAIL "return CheckAll(KEYS, ARGV)"
                  PIECES common.lua time_for_test.lua ${all_algorithm_pieces} parse_check.lua
                         check_all_entry.lua)
list(APPEND SLUICE_LUA_FOR_TEST_SOURCES ${cc})
# The leasing scripts: check_all's pieces and lease_entry.
foreach(entry IN ITEMS lease_all:LeaseAll lease_refund:LeaseRefund lease_holders:LeaseHolders)
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 name)
  list(GET parts 1 camel)
  sluice_lua_script(${name} k${camel}Lua cc
                    TAIL "return ${camel}(KEYS, ARGV)"
                    PIECES common.lua time.lua ${all_algorithm_pieces} parse_check.lua
                           check_all_entry.lua lease_entry.lua)
  list(APPEND SLUICE_LUA_SOURCES ${cc})
  sluice_lua_script(${name}_for_test k${camel}LuaForTest cc
                    TAIL "return ${camel}(KEYS, ARGV)"
                    PIECES common.lua time_for_test.lua ${all_algorithm_pieces} parse_check.lua
                           check_all_entry.lua lease_entry.lua)
  list(APPEND SLUICE_LUA_FOR_TEST_SOURCES ${cc})
endforeach()
# The function libraries; lua_scripts.cc names them and their functions after a hash of the text.
sluice_lua_script(library kLibraryLua cc
                  HEAD "#!lua name=sluice_@VERSION@"
                  PIECES common.lua time.lua ${all_algorithm_pieces} parse_check.lua
                         ${all_check_pieces} check_all_entry.lua lease_entry.lua
                         library_entry.lua)
list(APPEND SLUICE_LUA_SOURCES ${cc})
sluice_lua_script(library_for_test kLibraryLuaForTest cc
                  HEAD "#!lua name=sluice_@VERSION@"
                  PIECES common.lua time_for_test.lua ${all_algorithm_pieces} parse_check.lua
                         ${all_check_pieces} check_all_entry.lua lease_entry.lua
                         library_entry.lua)
list(APPEND SLUICE_LUA_FOR_TEST_SOURCES ${cc})

# Test-only: the scripts that take `now` from ARGV[1]. Production targets must not link this.
add_library(sluice_lua_for_test STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/lua_scripts_for_test.cc
  ${SLUICE_LUA_FOR_TEST_SOURCES})
# Its sources find src/ by the directory's include path, its users by sluice_testing's; include/
# comes with sluice_store_redis.
target_link_libraries(sluice_lua_for_test PUBLIC sluice_store_redis)
