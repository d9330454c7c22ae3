#!/usr/bin/env bash
# Where the floor of sluiced's gRPC path is (issue 12): the CPU per call of bench/h2_floor (a
# fixed-answer unary gRPC responder on nghttp2, one thread) beside sluiced's per decision over
# gRPC on the memory store, same load (rls_load --mode grpc), same run, ROUNDS alternating rounds.
# CPU is read from /proc/PID/stat as in bench/sluiced_bench.sh.
#
#   bench/h2_floor.sh [BUILD_DIR]   (targets sluiced, rls_load, h2_floor)
#
# Environment: ROUNDS (default 3), SECONDS_PER_RUN (default 5), INFLIGHT (default 64),
# SLUICED_FLAGS (extra flags for sluiced).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
SECS=${SECONDS_PER_RUN:-5}
INFLIGHT=${INFLIGHT:-64}
SLUICED="$BUILD_DIR/src/server/sluiced"
LOAD="$BUILD_DIR/bench/rls_load"
FLOOR="$BUILD_DIR/bench/h2_floor"
for b in "$SLUICED" "$LOAD" "$FLOOR"; do [ -x "$b" ] || { echo "build $b first"; exit 1; }; done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
WORK=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
CLK=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start() {  # floor|sluiced -> PID, PORT
  PORT=$(free_port)
  if [ "$1" = floor ]; then
    "$FLOOR" --port "$PORT" >"$WORK/floor.log" 2>&1 &
    PID=$!
    for _ in $(seq 50); do grep -q port "$WORK/floor.log" && return 0; sleep 0.1; done
  else
    local http; http=$(free_port)
    "$SLUICED" --config bench/config --store memory --grpc "127.0.0.1:$PORT" \
      --http "127.0.0.1:$http" ${SLUICED_FLAGS:-} --log-level warn --drain-ms 0 \
      >"$WORK/sluiced.log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do
      curl -sf "http://127.0.0.1:$http/healthcheck" >/dev/null 2>&1 && return 0; sleep 0.1
    done
  fi
  echo "$1 did not start"; cat "$WORK"/*.log; exit 1
}

echo "# $(nproc) cores; $SECS s per run; $INFLIGHT in flight; load average $(cut -d' ' -f1-3 /proc/loadavg)"
ROWS="$WORK/rows.txt"
for round in $(seq "${ROUNDS:-3}"); do
  order="floor sluiced"; [ $((round % 2)) -eq 0 ] && order="sluiced floor"
  for which in $order; do
    start "$which"
    t0=$(ticks "$PID")
    out=$("$LOAD" --target "127.0.0.1:$PORT" --mode grpc --inflight "$INFLIGHT" --seconds "$SECS" \
      --domain bench --key user)
    t1=$(ticks "$PID")
    us=$(python3 -c "import json,sys; o=json.loads(sys.argv[1]); n=o['ok']+o['over']+o['errors']
print(f'{($t1-$t0)*1e6/$CLK/max(1,n):.1f}')" "$out")
    echo "$which: $out server_cpu_us=$us"
    echo "$which $us" >>"$ROWS"
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  done
done
python3 - "$ROWS" <<'PY'
import os, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
med = {w: statistics.median(float(r[1]) for r in rows if r[0] == w) for w in ("floor", "sluiced")}
print("| server | CPU us per call (median) |")
print("|---|---|")
print(f"| h2_floor (nghttp2, fixed answer) | {med['floor']:.1f} |")
flags = os.environ.get("SLUICED_FLAGS", "").strip()
print(f"| sluiced, memory store{', ' + flags if flags else ''} | {med['sluiced']:.1f} |")
print(f"floor / sluiced: {med['floor'] / med['sluiced']:.2f}")
PY
