# sluice_add_test(tests/x/y_test.cc [LIBS ...]): one test binary per file, named after it (y_test),
# registered with ctest. Tests that start a redis-server carry the label "redis".
function(sluice_add_test source)
  cmake_parse_arguments(ARG "" "" "LIBS;LABELS" ${ARGN})
  get_filename_component(name ${source} NAME_WE)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} sluice_testing GTest::gmock_main)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300
                       ENVIRONMENT "SLUICE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if(ARG_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()

# sluice_embed_text(OUT_CC NAMESPACE VAR FILE): turns a text file (a Lua script) into a C++ source
# defining `extern const std::string_view VAR`, so scripts live as .lua files but ship inside the binary.
function(sluice_embed_text out_cc var file)
  add_custom_command(
    OUTPUT ${out_cc}
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out_cc} -DVAR=${var}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedText.cmake
    DEPENDS ${file} ${PROJECT_SOURCE_DIR}/cmake/EmbedText.cmake
    COMMENT "Embedding ${file}")
endfunction()
