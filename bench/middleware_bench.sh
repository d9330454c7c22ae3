#!/usr/bin/env bash
# The HTTP middleware benchmark: throughput of examples/api_server on one route with the middleware
# (memory store; one limit, three limits, and one limit without the RateLimit response headers)
# against the same server with --no-limits, measured with wrk
# in one run, alternating the variants round by round (only same-run ratios mean anything on a
# shared machine). Every request passes: this is the cost the middleware adds to normal traffic.
#
# Two figures per variant: wrk's requests/s, and the server's CPU time per request (user + system,
# from /proc/PID/stat, divided by the requests wrk completed). On a busy shared machine the first
# swings with whatever else runs; the second is the work the server did per request, and its ratio
# is the overhead the middleware adds on a core of its own (where req/s = 1 / CPU per request).
#
#   bench/middleware_bench.sh [BUILD_DIR]        (default build-release; built here if missing)
#   MODE=callgrind bench/middleware_bench.sh [BUILD_DIR]
#
# MODE=callgrind counts the server's user-space instructions per request under valgrind instead
# (deterministic, so it shows where the cost is even on a noisy machine; kernel time, about half
# of the server's CPU here, is not counted, so its ratios overstate the overhead).
#
# The server is pinned to CPU 0 and wrk to CPU 1 when the machine has two cores or more.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD_DIR=${1:-build-release}
SECS=${SECONDS_PER_RUN:-10}
CONNECTIONS=${CONNECTIONS:-32}
ROUNDS=${ROUNDS:-3}
SERVER="$BUILD_DIR/examples/api_server/api_server"

# wrk is only needed here, so it is installed here rather than by scripts/install-deps.sh.
if ! command -v wrk >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "middleware_bench: installing wrk"
  $SUDO apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi
if [ ! -x "$SERVER" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSLUICE_BUILD_TESTS=OFF \
    -DSLUICE_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$BUILD_DIR" --target api_server -j2
fi

SERVER_CPU=(); WRK_CPU=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  SERVER_CPU=(taskset -c 0); WRK_CPU=(taskset -c 1)
fi
VARIANTS=(no-limits one-limit three-limits no-headers)
# variant_args VARIANT: sets ARGS to the server flags of VARIANT.
variant_args() {
  case $1 in
    no-limits) ARGS=(--no-limits) ;;
    one-limit) ARGS=(--store memory --rules bench/middleware/one_limit.yaml) ;;
    three-limits) ARGS=(--store memory --rules bench/middleware/three_limits.yaml) ;;
    no-headers) ARGS=(--store memory --rules bench/middleware/one_limit_no_headers.yaml) ;;
  esac
}
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# run VARIANT: starts the server for VARIANT, runs wrk, stops the server; appends
# "variant rps p50 p99 non2xx cpu_us" to $WORK/results.
run() {
  local variant=$1
  variant_args "$variant"
  local port; port=$(free_port)
  "${SERVER_CPU[@]}" "$SERVER" --port "$port" --threads 1 "${ARGS[@]}" >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.05
  done
  local ticks_before ticks_after
  ticks_before=$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat")
  "${WRK_CPU[@]}" wrk -t1 -c"$CONNECTIONS" -d"${SECS}s" --latency \
    "http://127.0.0.1:$port/api/items" >"$WORK/wrk.txt"
  ticks_after=$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat")
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
  local rps p50 p99 non2xx requests cpu_us
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk.txt")
  requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.txt")
  cpu_us=$(python3 -c \
    "print(f'{($ticks_after - $ticks_before) / $(getconf CLK_TCK) * 1e6 / $requests:.2f}')")
  p50=$(awk '$1 == "50%" {print $2}' "$WORK/wrk.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$WORK/wrk.txt")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$WORK/wrk.txt"); non2xx=${non2xx:-0}
  echo "$variant $rps $p50 $p99 $non2xx $cpu_us" >>"$WORK/results"
  printf '  round %-2s %-13s %10s req/s  %6s us CPU/req  p50 %-8s p99 %-8s non-2xx %s\n' \
    "$2" "$variant" "$rps" "$cpu_us" "$p50" "$p99" "$non2xx"
}

if [ "${MODE:-wrk}" = callgrind ]; then
  command -v valgrind >/dev/null || { echo "MODE=callgrind needs valgrind"; exit 1; }
  echo "# user-space instructions per request (callgrind; wrk -t1 -c8 -d${SECS}s;" \
    "api_server --threads 1)"
  for variant in "${VARIANTS[@]}"; do
    variant_args "$variant"
    port=$(free_port)
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/cg.$variant" \
      "$SERVER" --port "$port" --threads 1 "${ARGS[@]}" >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 150); do
      curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2
    done
    callgrind_control -i on "$SERVER_PID" >/dev/null 2>&1
    wrk -t1 -c8 -d"${SECS}s" "http://127.0.0.1:$port/api/items" >"$WORK/wrk.txt"
    callgrind_control -i off "$SERVER_PID" >/dev/null 2>&1
    kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
    requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.txt")
    total=$(callgrind_annotate "$WORK/cg.$variant" |
      awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    echo "$variant $((total / requests))" >>"$WORK/results"
    printf '  %-13s %8d instructions/request (%s requests)\n' \
      "$variant" "$((total / requests))" "$requests"
  done
  awk '$1 == "no-limits" {base = $2}
       $1 != "no-limits" {printf "  %s: +%d instructions/request (+%.0f%% of user space)\n",
                          $1, $2 - base, ($2 / base - 1) * 100}' "$WORK/results"
  exit 0
fi

PINNED=""; [ ${#SERVER_CPU[@]} -gt 0 ] && PINNED=" (server on CPU 0, wrk on CPU 1)"
echo "# $(nproc) cores; wrk -t1 -c$CONNECTIONS -d${SECS}s; api_server --threads 1$PINNED;" \
  "$ROUNDS rounds"
for round in $(seq "$ROUNDS"); do
  for variant in "${VARIANTS[@]}"; do run "$variant" "$round"; done
done

python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
variants = ("no-limits", "one-limit", "three-limits", "no-headers")
rps = {v: statistics.median(float(r[1]) for r in rows if r[0] == v) for v in variants}
cpu = {v: statistics.median(float(r[5]) for r in rows if r[0] == v) for v in variants}
bad = sum(int(r[4]) for r in rows)
print("median        req/s   us CPU/req")
for v in variants:
    print(f"{v:13s} {rps[v]:7.0f}   {cpu[v]:6.2f}")
for v in variants[1:]:
    by_rps = 1 - rps[v] / rps["no-limits"]
    by_cpu = cpu[v] / cpu["no-limits"] - 1
    print(f"overhead {v}: {by_cpu * 100:.1f}% CPU per request "
          f"(target <= 10%: {'met' if by_cpu <= 0.10 else 'NOT met'}); {by_rps * 100:.1f}% req/s")
if bad:
    print(f"WARNING: {bad} non-2xx responses; the figures are not comparable")
PY
