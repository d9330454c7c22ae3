# Every third-party library comes from Debian 12 packages (scripts/install-deps.sh). Only what the
# enabled parts need is looked for: the memory-only core (sluice::core, sluice::algorithm and
# sluice::memory) needs Abseil and nothing else.
find_package(Threads REQUIRED)
find_package(absl REQUIRED)

# Boost: Asio and URL for the Redis client (URL also in tests), Beast and JSON for the middleware,
# JSON for sluiced and the test vectors.
set(sluice_boost_components)
if(SLUICE_BUILD_REDIS OR SLUICE_BUILD_TESTS)
  list(APPEND sluice_boost_components url)
endif()
if(SLUICE_BUILD_HTTP OR SLUICE_BUILD_SERVER OR SLUICE_BUILD_TESTS)
  list(APPEND sluice_boost_components json)
endif()
if(SLUICE_BUILD_REDIS OR SLUICE_BUILD_HTTP OR SLUICE_BUILD_SERVER OR SLUICE_BUILD_TESTS)
  find_package(Boost 1.81 REQUIRED COMPONENTS ${sluice_boost_components})
endif()

if(SLUICE_BUILD_REDIS OR SLUICE_BUILD_HTTP)
  # SHA-256 (sluice_sha256) for Redis keys and API-key identities; TLS for the Redis client.
  find_package(OpenSSL REQUIRED)
endif()
if(SLUICE_BUILD_REDIS)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
endif()
if(SLUICE_BUILD_HTTP)
  # The cpp-httplib adapter is built when libcpp-httplib-dev is present (src/http/).
  find_package(PkgConfig REQUIRED)
endif()
if(SLUICE_BUILD_HTTP OR SLUICE_BUILD_SERVER)
  find_package(yaml-cpp REQUIRED)
endif()
if(SLUICE_BUILD_REDIS OR SLUICE_BUILD_SERVER OR SLUICE_BUILD_HTTP)
  find_package(spdlog REQUIRED)
  find_package(fmt REQUIRED)
endif()
if(SLUICE_BUILD_SERVER)
  find_package(Protobuf REQUIRED)
  find_package(gRPC CONFIG REQUIRED)
  find_program(SLUICE_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  # HTTP/2 for sluiced's lean gRPC engine (--grpc-engine nghttp2) and bench/h2_floor.
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(NGHTTP2 REQUIRED IMPORTED_TARGET libnghttp2)
endif()
if(SLUICE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SLUICE_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
