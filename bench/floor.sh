#!/usr/bin/env bash
# Where the floor of sluiced's gRPC or HTTP path is (issue 12): the CPU per call of servers that
# answer every request with one fixed answer, beside sluiced's per decision on the memory store,
# same load generator (rls_load), same run, ROUNDS rounds in rotating order. CPU is read from
# /proc/PID/stat as in bench/sluiced_bench.sh.
#
#   bench/floor.sh [BUILD_DIR] [grpc|http]   (targets sluiced, rls_load, h2_floor, http_floor)
#
# grpc: h2_floor (nghttp2, one thread) against sluiced over gRPC.
# http: http_floor --server raw (Asio, one thread, one write per read), http_floor --server beast
#       (sluice::http::BeastServer, 2 I/O threads as sluiced) against sluiced over HTTP /json.
#
# Environment: ROUNDS (default 3), SECONDS_PER_RUN (default 5), INFLIGHT (default 64),
# SLUICED_FLAGS (extra flags for sluiced).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD_DIR=${1:-build}
MODE=${2:-grpc}
SECS=${SECONDS_PER_RUN:-5}
INFLIGHT=${INFLIGHT:-64}
SLUICED="$BUILD_DIR/src/server/sluiced"
LOAD="$BUILD_DIR/bench/rls_load"
case "$MODE" in
  grpc) SERVERS="h2 sluiced"; FLOOR="$BUILD_DIR/bench/h2_floor" ;;
  http) SERVERS="raw beast sluiced"; FLOOR="$BUILD_DIR/bench/http_floor" ;;
  *) echo "mode must be grpc or http"; exit 2 ;;
esac
for b in "$SLUICED" "$LOAD" "$FLOOR"; do [ -x "$b" ] || { echo "build $b first"; exit 1; }; done

WORK=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
CLK=$(getconf CLK_TCK)

start() {  # h2|raw|beast|sluiced -> PID, PORT (the port the load goes to)
  PORT=$(free_port)
  case "$1" in
    h2) "$FLOOR" --port "$PORT" >"$WORK/floor.log" 2>&1 & ;;
    raw|beast) "$FLOOR" --server "$1" --port "$PORT" >"$WORK/floor.log" 2>&1 & ;;
    sluiced)
      local grpc http
      grpc=$(free_port); http=$(free_port)
      [ "$MODE" = http ] && http=$PORT || grpc=$PORT
      "$SLUICED" --config bench/config --store memory --grpc "127.0.0.1:$grpc" \
        --http "127.0.0.1:$http" ${SLUICED_FLAGS:-} --log-level warn --drain-ms 0 \
        >"$WORK/sluiced.log" 2>&1 &
      PID=$!
      for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$http/healthcheck" >/dev/null 2>&1 && return 0; sleep 0.1
      done
      echo "sluiced did not start"; cat "$WORK/sluiced.log"; exit 1 ;;
  esac
  PID=$!
  for _ in $(seq 50); do grep -q port "$WORK/floor.log" && return 0; sleep 0.1; done
  echo "$1 did not start"; cat "$WORK/floor.log"; exit 1
}

echo "# $(nproc) cores; $MODE; $SECS s per run; $INFLIGHT in flight; load average $(cut -d' ' -f1-3 /proc/loadavg)"
ROWS="$WORK/rows.txt"
read -r -a order <<<"$SERVERS"
for round in $(seq "${ROUNDS:-3}"); do
  for which in "${order[@]}"; do
    start "$which"
    t0=$(ticks "$PID")
    out=$("$LOAD" --target "127.0.0.1:$PORT" --mode "$MODE" --inflight "$INFLIGHT" \
      --seconds "$SECS" --domain bench --key user)
    t1=$(ticks "$PID")
    us=$(python3 -c "import json,sys; o=json.loads(sys.argv[1]); n=o['ok']+o['over']+o['errors']
print(f'{($t1-$t0)*1e6/$CLK/max(1,n):.1f}')" "$out")
    echo "$which: $out server_cpu_us=$us"
    echo "$which $us" >>"$ROWS"
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  done
  order=("${order[@]:1}" "${order[0]}")  # The next round starts with the next server.
done
SERVERS="$SERVERS" python3 - "$ROWS" <<'PY'
import os, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
names = {"h2": "h2_floor (nghttp2, fixed answer)",
         "raw": "http_floor --server raw (Asio, fixed answer)",
         "beast": "http_floor --server beast (BeastServer, fixed answer)"}
flags = os.environ.get("SLUICED_FLAGS", "").strip()
names["sluiced"] = "sluiced, memory store" + (", " + flags if flags else "")
servers = os.environ["SERVERS"].split()
med = {w: statistics.median(float(r[1]) for r in rows if r[0] == w) for w in servers}
print("| server | CPU us per call (median) | / sluiced |")
print("|---|---|---|")
for w in servers:
    print(f"| {names[w]} | {med[w]:.1f} | {med[w] / med['sluiced']:.2f} |")
PY
