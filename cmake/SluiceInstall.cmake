# The library targets a consumer links, under the names they have both in this tree (aliases, for
# add_subdirectory) and in the installed CMake package (find_package(sluice)): sluice::<name>. And
# what `cmake --install` puts where: headers, static libraries, the CMake package, sluice.pc,
# sluiced with its example config and systemd unit. Included last by the top-level CMakeLists.txt.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# sluice_export(<target> <name>): sluice::<name> is <target>, exported under that name. A target
# that is not built (its SLUICE_BUILD_* option is off) is skipped.
set(SLUICE_EXPORTED_TARGETS)
set(SLUICE_COMPONENTS)
function(sluice_export target name)
  if(NOT TARGET ${target})
    return()
  endif()
  add_library(sluice::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  # The public headers are C++20 (designated initializers, std::span), and installed ones are
  # found under include/.
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set(SLUICE_EXPORTED_TARGETS ${SLUICE_EXPORTED_TARGETS} ${target} PARENT_SCOPE)
  set(SLUICE_COMPONENTS ${SLUICE_COMPONENTS} ${name} PARENT_SCOPE)
endfunction()

# Memory-only core: Abseil alone.
sluice_export(sluice_core core)
sluice_export(sluice_algorithm algorithm)
sluice_export(sluice_store_memory memory)
# SLUICE_BUILD_REDIS or SLUICE_BUILD_HTTP: SHA-256 (OpenSSL) for long keys and API-key identities.
sluice_export(sluice_sha256 sha256)
# SLUICE_BUILD_REDIS (the failure policy also with SLUICE_BUILD_HTTP)
sluice_export(sluice_store_policy policy)
sluice_export(sluice_store_lease lease)
sluice_export(sluice_store_url store_url)
sluice_export(sluice_redis_client redis_client)
sluice_export(sluice_redis_endpoint_url redis_endpoint_url)
sluice_export(sluice_store_redis redis)
sluice_export(sluice_store_open open_store)
# SLUICE_BUILD_SERVER or SLUICE_BUILD_HTTP: the YAML front end of both config readers.
sluice_export(sluice_yaml yaml)
# SLUICE_BUILD_SERVER
sluice_export(sluice_config config)
# SLUICE_BUILD_HTTP or SLUICE_BUILD_SERVER: sockets and the Beast server.
sluice_export(sluice_net net)
# SLUICE_BUILD_HTTP
sluice_export(sluice_http http)
sluice_export(sluice_http_beast http_beast)
sluice_export(sluice_http_httplib http_httplib)

option(SLUICE_INSTALL "Generate the install rules (headers, libraries, CMake package, sluice.pc, sluiced)"
       ${PROJECT_IS_TOP_LEVEL})
if(NOT SLUICE_INSTALL)
  return()
endif()

set(SLUICE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)
# Installing (make install, cpack) packages what is built and does not first build every target,
# tests included: `make deb` builds what it packages, and the install tests run on a built tree.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

# Headers: those of the parts that are built. sluice/version.h is generated into the build tree.
file(GLOB sluice_headers ${PROJECT_SOURCE_DIR}/include/sluice/*.h)
set(sluice_headers_redis redis_store.h store_url.h open_store.h)
set(sluice_headers_server config.h)
foreach(h ${sluice_headers})
  get_filename_component(name ${h} NAME)
  if((name IN_LIST sluice_headers_redis AND NOT SLUICE_BUILD_REDIS)
     OR (name IN_LIST sluice_headers_server AND NOT SLUICE_BUILD_SERVER)
     OR (name STREQUAL "failure_policy.h" AND NOT TARGET sluice_store_policy))
    list(REMOVE_ITEM sluice_headers ${h})
  endif()
endforeach()
install(FILES ${sluice_headers} ${PROJECT_BINARY_DIR}/include/sluice/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sluice COMPONENT dev)
if(SLUICE_BUILD_HTTP)
  file(GLOB sluice_http_headers ${PROJECT_SOURCE_DIR}/include/sluice/http/*.h)
  if(NOT TARGET sluice_http_httplib)
    list(REMOVE_ITEM sluice_http_headers ${PROJECT_SOURCE_DIR}/include/sluice/http/httplib.h)
  endif()
  install(FILES ${sluice_http_headers}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sluice/http COMPONENT dev)
endif()
if(TARGET sluice_net)
  file(GLOB sluice_net_headers ${PROJECT_SOURCE_DIR}/include/sluice/net/*.h)
  install(FILES ${sluice_net_headers}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sluice/net COMPONENT dev)
endif()

# Static libraries and the CMake package. A consumer asks for components (find_package(sluice
# COMPONENTS memory)) and gets only their dependencies looked for; no components means all.
install(TARGETS ${SLUICE_EXPORTED_TARGETS} EXPORT sluiceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev)
install(EXPORT sluiceTargets NAMESPACE sluice:: DESTINATION ${SLUICE_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sluiceConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/sluiceConfig.cmake
                              INSTALL_DESTINATION ${SLUICE_CMAKE_DIR})
# Before 1.0 a minor version may break the API (CHANGELOG.md), so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sluiceConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sluiceConfig.cmake ${PROJECT_BINARY_DIR}/sluiceConfigVersion.cmake
        DESTINATION ${SLUICE_CMAKE_DIR} COMPONENT dev)

# sluice.pc (the memory-only library: core, algorithms, memory store), written at install time so
# that its prefix is the one installed to.
configure_file(${PROJECT_SOURCE_DIR}/cmake/SluiceInstallPc.cmake.in
               ${PROJECT_BINARY_DIR}/pkgconfig/install-pc.cmake @ONLY)
install(SCRIPT ${PROJECT_BINARY_DIR}/pkgconfig/install-pc.cmake COMPONENT dev)

# sluiced, its example config, its flags file and its systemd unit (packaging/).
if(TARGET sluiced)
  install(TARGETS sluiced RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)
  configure_file(${PROJECT_SOURCE_DIR}/packaging/install-service.cmake.in
                 ${PROJECT_BINARY_DIR}/packaging/install-service.cmake @ONLY)
  install(SCRIPT ${PROJECT_BINARY_DIR}/packaging/install-service.cmake COMPONENT server)
endif()

# The Debian packages (`make deb`).
include(SluicePackaging)
