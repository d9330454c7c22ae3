# `make deb`: Debian packages through CPack's DEB generator, from the install rules of
# cmake/SluiceInstall.cmake (so `cmake --install`, the install tests and the packages agree):
#   sluiced        the binary, /etc/sluice/config/example.yaml, /etc/default/sluiced and a hardened
#                  systemd unit (packaging/);
#   libsluice-dev  headers, static libraries, the CMake package and sluice.pc (component dev: the
#                  library only; it depends on Abseil and recommends the other components' packages).
# CPack rather than debian/ + dpkg-buildpackage: it packages the tree already built (seconds, not a
# second full build in a clean tree), and the file layout is written once, in the install rules.
# Configure with -DCMAKE_INSTALL_PREFIX=/usr (`make deb` does) for Debian's multiarch library dir.
include(GNUInstallDirs)

set(SLUICE_DEB_MAINTAINER "sluice maintainers <maintainers@users.noreply.a-seed-2a06e1c3.example>"
    CACHE STRING "Maintainer field of the Debian packages")

# Both packages carry the license and the Debian changelog in /usr/share/doc/<package>/.
set(sluice_deb_changelog ${PROJECT_BINARY_DIR}/packaging/changelog)
string(TIMESTAMP sluice_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${sluice_deb_changelog}
     "sluice (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Release ${PROJECT_VERSION}: see CHANGELOG.md in the source.\n\n"
     " -- ${SLUICE_DEB_MAINTAINER}  ${sluice_deb_date}\n")
execute_process(COMMAND gzip -9nf ${sluice_deb_changelog})
foreach(pair "server;sluiced" "dev;libsluice-dev")
  list(GET pair 0 component)
  list(GET pair 1 package)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright ${sluice_deb_changelog}.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "The sluice Authors")
set(CPACK_PACKAGE_CONTACT "${SLUICE_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME sluiced)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION net)
# Runtime dependencies from the shared libraries sluiced links (dpkg-shlibdeps).
set(CPACK_DEBIAN_SERVER_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/conffiles ${PROJECT_SOURCE_DIR}/packaging/postinst
    ${PROJECT_SOURCE_DIR}/packaging/prerm ${PROJECT_SOURCE_DIR}/packaging/postrm)
# Description lines stay under 80 columns (lintian).
set(CPACK_COMPONENT_SERVER_DESCRIPTION "distributed rate limit service, a drop-in for envoyproxy/ratelimit
sluiced answers Envoy's rate limit service API (gRPC) and POST /json
with the same YAML configuration as envoyproxy/ratelimit, on an embedded
memory store or on Redis, where each decision is one atomic Lua script.
It reloads its rules when they change and on SIGHUP.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libsluice-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# Depends: what every use of the package needs, the memory-only library (sluice::memory, sluice.pc):
# Abseil. Recommends: the development packages of the other components (Redis store, failure
# policy, middleware and its adapters, config). find_package(sluice COMPONENTS memory) looks for
# none of them, so a memory-only user installs with --no-install-recommends and gets Abseil alone;
# apt installs recommended packages by default, so everyone else gets them all.
set(sluice_dev_depends libabsl-dev)
set(sluice_dev_recommends)
if(SLUICE_BUILD_REDIS OR SLUICE_BUILD_HTTP)
  list(APPEND sluice_dev_recommends libboost1.81-dev libssl-dev)
endif()
if(SLUICE_BUILD_REDIS)
  list(APPEND sluice_dev_recommends libboost-url1.81-dev libhiredis-dev libspdlog-dev pkg-config)
endif()
if(SLUICE_BUILD_HTTP)
  list(APPEND sluice_dev_recommends libboost-json1.81-dev libyaml-cpp-dev)
endif()
if(SLUICE_BUILD_SERVER)
  list(APPEND sluice_dev_recommends libyaml-cpp-dev)
endif()
if(TARGET sluice_http_httplib)
  list(APPEND sluice_dev_recommends libcpp-httplib-dev pkg-config)
endif()
list(REMOVE_DUPLICATES sluice_dev_recommends)
list(JOIN sluice_dev_depends ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)
list(JOIN sluice_dev_recommends ", " CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS)
set(CPACK_COMPONENT_DEV_DESCRIPTION "distributed rate limiting for C++20 (development files)
sluice: five rate limit algorithms, an embedded memory store, a Redis
store (one atomic Lua script per decision) and HTTP middleware for
Boost.Beast and cpp-httplib. Headers, static libraries, the CMake
package (find_package(sluice)) and sluice.pc.")

include(CPack)
