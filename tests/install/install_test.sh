#!/usr/bin/env bash
# What a consumer of sluice does, against the tree already built (ctest label "install"):
#
#   install_test.sh prefix            cmake --install into a scratch prefix; the files are there
#   install_test.sh dev_component     cmake --install --component dev: the library only
#   install_test.sh find_package      examples/consumer against that prefix: find_package(sluice),
#                                     the library and (SLUICE_WITH_HTTP=ON) the middleware example
#                                     and docs/middleware.md's quick starts (run up to listen)
#   install_test.sh pkg_config        README's library example built with pkg-config sluice
#   install_test.sh add_subdirectory  examples/consumer with sluice vendored, everything optional off
#   install_test.sh deb               the Debian packages: contents, --validate, unit, lintian
#   install_test.sh public_headers    public headers and examples include no src/ header
#
# Environment (set by tests/install/CMakeLists.txt): SLUICE_SOURCE_DIR, SLUICE_BUILD_DIR,
# SLUICE_WORK_DIR (scratch space, under the build tree), CMAKE_COMMAND, CPACK_COMMAND.
set -euo pipefail
mode=${1:?mode}
src=${SLUICE_SOURCE_DIR:?}
build=${SLUICE_BUILD_DIR:?}
work=${SLUICE_WORK_DIR:?}
cmake=${CMAKE_COMMAND:-cmake}
cpack=${CPACK_COMMAND:-cpack}
prefix=$work/prefix
consumer=$src/examples/consumer

fail() { echo "FAIL: $*" >&2; exit 1; }
# Consumer builds reuse compilations through ccache when it is installed.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# configure_and_build DIR ARGS...: a quiet configure and build; their output only on failure. No
# optimization: these builds check how sluice is found and linked, and -O0 compiles fastest.
configure_and_build() {
  local dir=$1; shift
  rm -rf "$dir"
  if ! "$cmake" -S "$consumer" -B "$dir" -DCMAKE_BUILD_TYPE= "${launcher[@]}" "$@" \
      >"$dir.log" 2>&1; then
    cat "$dir.log"; fail "configure $dir"
  fi
  if ! "$cmake" --build "$dir" -j2 >>"$dir.log" 2>&1; then
    cat "$dir.log"; fail "build $dir"
  fi
}
expect_output() {  # expect_output WANTED COMMAND...
  local wanted=$1; shift
  local out
  out=$("$@") || fail "$* exited $?: $out"
  grep -qF -- "$wanted" <<<"$out" || fail "$*: printed '$out', expected '$wanted'"
  echo "$*: $out"
}

case $mode in
prefix)
  rm -rf "$prefix"
  "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install"; }
  libdir=$(cd "$prefix" && ls -d lib*/cmake/sluice | head -1 | cut -d/ -f1)
  for f in include/sluice/version.h include/sluice/store_wrapper.h include/sluice/memory_store.h \
           "$libdir/libsluice_core.a" "$libdir/libsluice_store_memory.a" \
           "$libdir/cmake/sluice/sluiceConfig.cmake" \
           "$libdir/cmake/sluice/sluiceConfigVersion.cmake" \
           "$libdir/cmake/sluice/sluiceTargets.cmake" "$libdir/pkgconfig/sluice.pc"; do
    [ -f "$prefix/$f" ] || fail "not installed: $f"
  done
  if [ -f "$build/src/server/sluiced" ]; then
    for f in bin/sluiced etc/sluice/config/example.yaml etc/default/sluiced \
             lib/systemd/system/sluiced.service; do
      [ -f "$prefix/$f" ] || fail "not installed: $f"
    done
    grep -qx "ExecStart=$prefix/bin/sluiced --config $prefix/etc/sluice/config \$SLUICED_OPTS" \
      "$prefix/lib/systemd/system/sluiced.service" || fail "unit does not run the installed sluiced"
  fi
  grep -qx "prefix=$prefix" "$prefix/$libdir/pkgconfig/sluice.pc" || fail "sluice.pc prefix"
  echo "installed $(find "$prefix" -type f | wc -l) files into $prefix"
  ;;

dev_component)
  # `cmake --install --component dev`: the library alone (headers, static libraries, the CMake
  # package, sluice.pc), none of sluiced's files.
  dev_prefix=$work/dev_prefix
  rm -rf "$dev_prefix"
  "$cmake" --install "$build" --prefix "$dev_prefix" --component dev >"$work/install_dev.log" 2>&1 ||
    { cat "$work/install_dev.log"; fail "cmake --install --component dev"; }
  [ -f "$dev_prefix/include/sluice/memory_store.h" ] || fail "--component dev: no headers"
  [ -n "$(find "$dev_prefix" -name sluiceConfig.cmake)" ] || fail "--component dev: no CMake package"
  extra=$(cd "$dev_prefix" && find . -type f | grep -Ev '^\./(include/sluice/|lib[^/]*/(lib[a-z0-9_]+\.a|cmake/sluice/|pkgconfig/sluice\.pc)|share/doc/libsluice-dev/)' || true)
  [ -z "$extra" ] || fail "--component dev installed more than the library: $extra"
  echo "--component dev: $(find "$dev_prefix" -type f | wc -l) files, no sluiced, unit or /etc file"
  ;;

find_package)
  if [ "${SLUICE_WITH_HTTP:-ON}" = ON ]; then middleware=ON; else middleware=OFF; fi
  # docs/middleware.md's quick starts need the Redis store, and one of them cpp-httplib.
  beast=OFF httplib=OFF
  if [ $middleware = ON ] && [ "${SLUICE_WITH_REDIS:-ON}" = ON ]; then
    beast=ON
    httplib=${SLUICE_WITH_HTTPLIB:-ON}
  fi
  configure_and_build "$work/find_package" -DCMAKE_PREFIX_PATH="$prefix" \
    -DWITH_MIDDLEWARE=$middleware -DWITH_QUICKSTART_BEAST=$beast \
    -DWITH_QUICKSTART_HTTPLIB=$httplib
  expect_output "20 of 21 allowed" "$work/find_package/library_example"
  if [ $middleware = ON ]; then
    expect_output "third request: 429" "$work/find_package/middleware_example"
  fi
  # The quick starts, up to listen(): their rules load and their wiring (policy names) holds.
  if [ $beast = ON ]; then
    expect_output "beast quick start: wired" \
      env QUICKSTART_WIRE_ONLY=1 "$work/find_package/quickstart_beast"
  fi
  if [ $httplib = ON ]; then
    expect_output "httplib quick start: wired" \
      env QUICKSTART_WIRE_ONLY=1 "$work/find_package/quickstart_httplib"
  fi
  # The version file: this major.minor is found, another is not.
  version=$(sed -n 's/^#define SLUICE_VERSION_STRING "\(.*\)"$/\1/p' "$prefix/include/sluice/version.h")
  probe=$work/find_package_version
  rm -rf "$probe" && mkdir -p "$probe/src"
  cat >"$probe/src/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(probe LANGUAGES CXX)
find_package(sluice \${WANT} EXACT COMPONENTS memory)
message(STATUS "sluice_FOUND=\${sluice_FOUND}")
CMAKE
  found=$("$cmake" -S "$probe/src" -B "$probe/b1" -DCMAKE_PREFIX_PATH="$prefix" \
           -DWANT="$version" 2>&1) || true
  grep -q "sluice_FOUND=1" <<<"$found" || fail "find_package(sluice $version EXACT): $found"
  found=$("$cmake" -S "$probe/src" -B "$probe/b2" -DCMAKE_PREFIX_PATH="$prefix" -DWANT=99.0.0 2>&1) ||
    true
  grep -q "sluice_FOUND=0" <<<"$found" || fail "find_package(sluice 99.0.0) found $version: $found"
  echo "find_package(sluice $version EXACT) found, find_package(sluice 99.0.0) not"
  ;;

pkg_config)
  pc_dir=$(dirname "$(find "$prefix" -name sluice.pc | head -1)")
  flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs sluice) || fail "pkg-config sluice"
  echo "pkg-config --cflags --libs sluice: $flags"
  compile=("${CXX:-c++}")
  if command -v ccache >/dev/null; then compile=(ccache "${compile[@]}"); fi
  out=$work/pkg_config_example
  # shellcheck disable=SC2086  # the flags are a word list
  "${compile[@]}" -std=c++20 "$consumer/library.cc" -o "$out" $flags ||
    fail "building with pkg-config's flags"
  expect_output "20 of 21 allowed" "$out"
  ;;

add_subdirectory)
  dir=$work/add_subdirectory
  # Each package an optional part would need is made unfindable: configuring proves none is
  # looked for. (Threads and Abseil are all the memory store needs.)
  disabled=()
  for p in gRPC Protobuf OpenSSL PkgConfig Boost yaml-cpp spdlog fmt GTest benchmark; do
    disabled+=("-DCMAKE_DISABLE_FIND_PACKAGE_$p=ON")
  done
  configure_and_build "$dir" -DSLUICE_SOURCE_DIR="$src" "${disabled[@]}"
  expect_output "20 of 21 allowed" "$dir/library_example"
  link=$(cat "$dir/CMakeFiles/library_example.dir/link.txt")
  if grep -Eio 'grpc|protobuf|hiredis|ssl|crypto|yaml|spdlog|boost|gtest|benchmark' <<<"$link"; then
    fail "the memory-only link line names an optional dependency: $link"
  fi
  tests=$("$cmake" --build "$dir" --target help | grep -Eo '[a-z_]+_(test|benchmark|fuzzer)\b' || true)
  [ -z "$tests" ] || fail "sluice as a subproject defines test targets: $tests"
  echo "link line: $(grep -Eo 'lib[a-z_]+\.(a|so)' <<<"$link" | sort -u | tr '\n' ' ')"
  ;;

deb)
  out=$work/deb
  rm -rf "$out"
  "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log"; fail "cpack"; }
  server=$(ls "$out"/sluiced_*.deb) || fail "no sluiced package"
  dev=$(ls "$out"/libsluice-dev_*.deb) || fail "no libsluice-dev package"
  contents=$(dpkg-deb -c "$server")
  for f in ./usr/bin/sluiced ./lib/systemd/system/sluiced.service \
           ./etc/sluice/config/example.yaml ./etc/default/sluiced \
           ./usr/share/doc/sluiced/copyright; do
    grep -q " $f\$" <<<"$contents" || fail "$server has no $f"
  done
  dpkg-deb -I "$server" conffiles | grep -qx /etc/sluice/config/example.yaml ||
    fail "the example config is not a conffile"
  dev_contents=$(dpkg-deb -c "$dev")
  for f in /usr/include/sluice/store_wrapper.h /usr/include/sluice/version.h '/libsluice_core.a' \
           /cmake/sluice/sluiceConfig.cmake /pkgconfig/sluice.pc; do
    grep -q -- "$f\$" <<<"$dev_contents" || fail "$dev has no $f"
  done
  echo "$(basename "$server"): $(grep -c . <<<"$contents") entries; $(basename "$dev"): $(grep -c . <<<"$dev_contents")"
  # A memory-only user is not made to install Boost, hiredis or cpp-httplib: the -dev package
  # depends on Abseil alone and only recommends the other components' packages.
  depends=$(dpkg-deb -f "$dev" Depends)
  recommends=$(dpkg-deb -f "$dev" Recommends)
  [ "$depends" = libabsl-dev ] || fail "$dev Depends: '$depends', expected 'libabsl-dev'"
  for p in libboost1.81-dev libhiredis-dev libyaml-cpp-dev; do
    grep -qw -- "$p" <<<"$recommends" || fail "$dev Recommends: '$recommends' lacks $p"
  done
  echo "$(basename "$dev"): Depends: $depends; Recommends: $recommends"

  # The packaged binary accepts the packaged config (from the extracted tree; no root needed).
  tree=$out/tree
  dpkg-deb -x "$server" "$tree"
  "$tree/usr/bin/sluiced" --validate "$tree/etc/sluice/config" ||
    fail "the packaged sluiced --validate rejects the packaged config"
  unit=$tree/lib/systemd/system/sluiced.service
  grep -qx 'ExecStart=/usr/bin/sluiced --config /etc/sluice/config $SLUICED_OPTS' "$unit" ||
    fail "unit ExecStart"
  for want in DynamicUser=yes ProtectSystem=strict Restart=on-failure LimitNOFILE=65536 \
              'ExecReload=/bin/kill -HUP $MAINPID'; do
    grep -qxF "$want" "$unit" || fail "unit lacks $want"
  done

  if command -v systemd-analyze >/dev/null; then
    # verify checks that ExecStart exists: point it at the extracted binary.
    mkdir -p "$out/unit"
    sed "s#=/usr/bin/sluiced #=$tree/usr/bin/sluiced #" "$unit" >"$out/unit/sluiced.service"
    if ! verify=$(systemd-analyze verify "$out/unit/sluiced.service" 2>&1) || [ -n "$verify" ]; then
      fail "systemd-analyze verify: $verify"
    fi
    echo "systemd-analyze verify: no findings"
  else
    echo "systemd-analyze not installed: unit verification skipped"
  fi
  if command -v lintian >/dev/null; then
    lintian --fail-on error --suppress-tags-from-file /dev/null "$server" "$dev" || fail "lintian"
    echo "lintian: no errors"
  else
    echo "lintian not installed: package lint skipped"
  fi
  ;;

public_headers)
  # Public headers include only public headers, and the examples (what users copy) only those.
  bad=$(grep -rn '#include "src/' "$src/include" "$src/examples" || true)
  [ -z "$bad" ] || fail "src/ headers reached from public headers or examples: $bad"
  echo "no src/ include under include/ or examples/"
  ;;

*) fail "unknown mode $mode" ;;
esac
