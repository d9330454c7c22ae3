#!/usr/bin/env bash
# Installs the Debian 12 packages sluice needs to build, test and run.
# Idempotent: when everything is present it prints nothing and exits 0.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git curl ca-certificates
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libhiredis-dev libssl-dev libnghttp2-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcpp-httplib-dev
  redis-server redis-sentinel redis-tools
  # The dashboard's browser test drives it headless (tests/server/dashboard/).
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# node and npm drive the browser and grpc-js tests; any install of them will do (Debian's
# packages are the fallback), so a machine with another node is left as it is.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
# Envoy for the tests under tests/envoy/ (silent when present). Called before the early exit
# below, so that a machine with every package gets it too.
bash "$(dirname "$0")/install-envoy.sh"
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The redis-server and redis-sentinel packages start system services on :6379 and :26379; tests
# start their own servers and sentinels on free ports.
