#!/usr/bin/env bash
# The sluiced benchmark: sluiced over gRPC and HTTP /json, on the memory store and on Redis, beside
# the library-direct RedisStore figure, redis-benchmark's EVALSHA ceiling and rate-limiter-flexible,
# all measured in one run against one redis-server (only same-run ratios mean anything here).
#
# Besides decisions/s, each line gives the CPU time each process spent per decision (client =
# the load generator, sluiced, redis), read from /proc: on a machine this small the three share
# two cores, so throughput is bounded by 2 s / (sum of the three) per second of wall time, and
# the breakdown says which of them a figure is really measuring.
#
#   bench/sluiced_bench.sh [BUILD_DIR]     (a Release build with benchmarks; redis-server)
#
# Load generator, sluiced and Redis share the machine's 2 cores. Besides the table on stdout, one
# CSV row per run goes to $RESULTS_DIR/sluiced_bench-<UTC time>.csv (RESULTS_DIR defaults to
# bench/results). Environment: SECONDS_PER_RUN (default 8), INFLIGHT (default 64),
# SLUICED_FLAGS, SLUICE_PEER_BENCH (default ../shared/peer-bench).
#
# A/B mode: with BASELINE_SLUICED=<another sluiced binary>, only the four sluiced paths run, for
# the baseline and this build's sluiced in turn (the order alternates), ROUNDS times (default 3),
# and it prints each path's median sluiced CPU per decision for both and their ratio. The load
# generator is this build's for both.
#
# Lease mode: with LEASE=1, only gRPC runs, on this build's sluiced over the memory store, Redis,
# and Redis with lease=true in turn, ROUNDS times (default 3), on KEYS descriptor values (default
# 100: busy keys, where leases pay); it prints each store's median sluiced CPU per decision and its
# ratio to the memory store's (docs/PERFORMANCE.md, "Leases").
#
# Engine mode: with ENGINES=1, only the two gRPC paths (memory, Redis) run, for this build's
# sluiced with --grpc-engine grpc and with --grpc-engine nghttp2 in turn (the order alternates),
# ROUNDS times, and it prints each path's median sluiced CPU per decision for both and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD_DIR=${1:-build}
SECS=${SECONDS_PER_RUN:-8}
INFLIGHT=${INFLIGHT:-64}
PEER_DIR=${SLUICE_PEER_BENCH:-../shared/peer-bench}
SLUICED="$BUILD_DIR/src/server/sluiced"
LOAD="$BUILD_DIR/bench/rls_load"
STORE_LOAD="$BUILD_DIR/bench/redis_store_load"
for b in "$SLUICED" "$LOAD" "$STORE_LOAD"; do [ -x "$b" ] || { echo "build $b first"; exit 1; }; done

WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
RESULTS_DIR=${RESULTS_DIR:-bench/results}
mkdir -p "$RESULTS_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CSV="$RESULTS_DIR/sluiced_bench-$STAMP.csv"
REDIS_VERSION=$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')
echo "stamp,redis_version,what,store,protocol,inflight,decisions_per_s,p50_us,p99_us,client_cpu_us_per_decision,sluiced_cpu_us_per_decision,redis_cpu_us_per_decision,loadavg" >"$CSV"
# csv_row WHAT STORE PROTOCOL INFLIGHT RATE P50 P99 CLIENT SLUICED REDIS (empty: not measured)
csv_row() {
  echo "$STAMP,$REDIS_VERSION,$1,$2,$3,$4,$5,$6,$7,$8,$9,${10},$(cut -d' ' -f1 /proc/loadavg)" >>"$CSV"
}

RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --daemonize no --loglevel warning >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
PIDS+=($REDIS_PID)
for _ in $(seq 50); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

start_sluiced() {  # store [binary] -> sets HTTP_PORT GRPC_PORT SLUICED_PID
  HTTP_PORT=$(free_port); GRPC_PORT=$(free_port)
  "${2:-$SLUICED}" --config bench/config --store "$1" --http "127.0.0.1:$HTTP_PORT" \
    --grpc "127.0.0.1:$GRPC_PORT" ${SLUICED_FLAGS:-} --log-level warn --drain-ms 0 >"$WORK/sluiced.log" 2>&1 &
  SLUICED_PID=$!
  PIDS+=($SLUICED_PID)
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/healthcheck" >/dev/null 2>&1 && return 0; sleep 0.1
  done
  echo "sluiced did not start:"; cat "$WORK/sluiced.log"; exit 1
}
rate() { sed 's/.*"decisions_per_s":\([0-9.]*\).*/\1/'; }
CLK=$(getconf CLK_TCK)
# cpu_per_decision PID TICKS_BEFORE DECISIONS -> microseconds of that process's CPU per decision
cpu_per_decision() {
  python3 -c "print(f'{($(ticks "$1") - $2) * 1e6 / $CLK / max(1, $3):.1f}')"
}
# run_load STORE MODE PORT [WHAT]: one load run against the running sluiced, with the CPU split;
# WHAT (default "sluiced") names the binary in the output and the CSV.
run_load() {
  local s0 r0 out r n sluiced_us redis_us
  s0=$(ticks "$SLUICED_PID"); r0=$(ticks "$REDIS_PID")
  out=$("$LOAD" --target "127.0.0.1:$3" --mode "$2" --inflight "$INFLIGHT" --seconds "$SECS" \
    --domain bench --key user --keys "${KEYS:-10000}")
  r=$(echo "$out" | rate); n=$(python3 -c "print(int($r * $SECS))")
  LAST_RATE=$r
  sluiced_us=$(cpu_per_decision "$SLUICED_PID" "$s0" "$n")
  redis_us=$(cpu_per_decision "$REDIS_PID" "$r0" "$n")
  LAST_SLUICED_US=$sluiced_us
  echo "${4:-sluiced}     $1 $2: $out sluiced_cpu_us=$sluiced_us redis_cpu_us=$redis_us"
  # The memory store's runs leave Redis idle: its figure is left out of the CSV.
  [ "$1" = memory ] && redis_us=
  csv_row "${4:-sluiced}" "$1" "$2" "$INFLIGHT" "$r" "$(json "$out" p50_us)" "$(json "$out" p99_us)" \
    "$(json "$out" client_cpu_us_per_decision)" "$sluiced_us" "$redis_us"
}

# compare A_NAME A_BINARY A_FLAGS B_NAME B_BINARY B_FLAGS MODES: both sluiced variants on the
# memory store and on Redis over each of MODES, ROUNDS times (default 3) in alternating order;
# prints each path's median sluiced CPU per decision for both, B / A, and the median decisions/s.
compare() {
  local rows="$WORK/compare.txt" round order which bin flags store name mode port
  for round in $(seq "${ROUNDS:-3}"); do
    if [ $((round % 2)) -eq 1 ]; then order="$1 $4"; else order="$4 $1"; fi
    for which in $order; do
      if [ "$which" = "$1" ]; then bin=$2; flags=$3; else bin=$5; flags=$6; fi
      for store in memory "redis://127.0.0.1:$RPORT"; do
        name=memory; [ "$store" = memory ] || name=redis
        redis-cli -p "$RPORT" FLUSHALL >/dev/null
        SLUICED_FLAGS="$flags" start_sluiced "$store" "$bin"
        for mode in $7; do
          port=$GRPC_PORT; [ "$mode" = http ] && port=$HTTP_PORT
          run_load "$name" "$mode" "$port" "sluiced-$which"
          echo "$which $name $mode $LAST_SLUICED_US $LAST_RATE" >>"$rows"
        done
        kill "$SLUICED_PID"; wait "$SLUICED_PID" 2>/dev/null || true
      done
    done
  done
  python3 - "$rows" "$1" "$4" "$7" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
a, b, modes = sys.argv[2], sys.argv[3], sys.argv[4].split()
print(f"| path | {a}: sluiced CPU us/decision (median) | {b} | {b} / {a} | decisions/s {a} / {b} (median) |")
print("|---|---|---|---|---|")
for store in ("memory", "redis"):
    for mode in modes:
        def median(w, column):
            return statistics.median(float(r[column]) for r in rows if r[:3] == [w, store, mode])
        print(f"| {store} {mode} | {median(a, 3):.1f} | {median(b, 3):.1f} | "
              f"{median(b, 3) / median(a, 3):.2f} | {median(a, 4):.0f} / {median(b, 4):.0f} |")
PY
  echo "# results: $CSV"
}

if [ -n "${BASELINE_SLUICED:-}" ]; then
  [ -x "$BASELINE_SLUICED" ] || { echo "BASELINE_SLUICED=$BASELINE_SLUICED is not executable"; exit 1; }
  echo "# A/B: baseline $BASELINE_SLUICED, new $SLUICED; $(nproc) cores; $SECS s per run; $INFLIGHT in flight"
  compare baseline "$BASELINE_SLUICED" "${SLUICED_FLAGS:-}" new "$SLUICED" "${SLUICED_FLAGS:-}" "grpc http"
  exit 0
fi

if [ -n "${LEASE:-}" ]; then
  KEYS=${KEYS:-100}
  echo "# leases: $SLUICED on memory, redis, redis?lease=true; $(nproc) cores; $SECS s per run; $INFLIGHT in flight; $KEYS keys"
  rows="$WORK/lease.txt"
  for round in $(seq "${ROUNDS:-3}"); do
    for store in memory "redis://127.0.0.1:$RPORT" "redis://127.0.0.1:$RPORT?lease=true"; do
      name=memory; [ "$store" = memory ] || name=redis; [[ "$store" == *lease* ]] && name=lease
      redis-cli -p "$RPORT" FLUSHALL >/dev/null
      start_sluiced "$store"
      run_load "$name" grpc "$GRPC_PORT"
      echo "$name $LAST_SLUICED_US $LAST_RATE" >>"$rows"
      kill "$SLUICED_PID"; wait "$SLUICED_PID" 2>/dev/null || true
    done
  done
  python3 - "$rows" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def median(store, column):
    return statistics.median(float(r[column]) for r in rows if r[0] == store)
print("| store | sluiced CPU us/decision (median) | x memory | decisions/s (median) |")
print("|---|---|---|---|")
for store in ("memory", "redis", "lease"):
    print(f"| {store} | {median(store, 1):.1f} | {median(store, 1) / median('memory', 1):.2f} | "
          f"{median(store, 2):.0f} |")
PY
  echo "# results: $CSV"
  exit 0
fi

if [ -n "${ENGINES:-}" ]; then
  echo "# engines: grpc vs nghttp2 ($SLUICED); $(nproc) cores; $SECS s per run; $INFLIGHT in flight; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  compare grpc "$SLUICED" "${SLUICED_FLAGS:-} --grpc-engine grpc" \
    nghttp2 "$SLUICED" "${SLUICED_FLAGS:-} --grpc-engine nghttp2" grpc
  exit 0
fi

echo "# $(nproc) cores; redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'); $SECS s per run; $INFLIGHT in flight"
redis-cli -p "$RPORT" FLUSHALL >/dev/null
r0=$(ticks "$REDIS_PID")
# The store's own script as the store calls it (FCALL; its argument is binary, which
# redis-benchmark cannot send), pipelined as redis-benchmark -c 50 -P 16 would.
CEIL_OUT=$("$(dirname "$STORE_LOAD")/script_load" --port "$RPORT" --call fcall --algorithm fixed_window \
  --requests 1000000 --connections 50 --pipeline 16)
CEIL=$(echo "$CEIL_OUT" | sed 's/.*"calls_per_s":\([0-9]*\).*/\1/')
redis_us=$(cpu_per_decision "$REDIS_PID" "$r0" 1000000)
echo "ceiling     script_load FCALL fixed_window -c 50 -P 16: $CEIL decisions/s redis_cpu_us=$redis_us"
csv_row ceiling redis script_load 800 "$CEIL" "" "" "$(json "$CEIL_OUT" client_cpu_us_per_call)" "" \
  "$redis_us"

redis-cli -p "$RPORT" FLUSHALL >/dev/null
r0=$(ticks "$REDIS_PID")
LIB=$("$STORE_LOAD" --url "redis://127.0.0.1:$RPORT" --algorithm fixed_window --inflight 256 --seconds "$SECS")
n=$(python3 -c "print(int($(echo "$LIB" | rate) * $SECS))")
redis_us=$(cpu_per_decision "$REDIS_PID" "$r0" "$n")
echo "library     RedisStore direct, 256 in flight: $LIB redis_cpu_us=$redis_us"
csv_row library redis in-process 256 "$(json "$LIB" decisions_per_s)" "$(json "$LIB" p50_us)" \
  "$(json "$LIB" p99_us)" "$(json "$LIB" client_cpu_us_per_decision)" "" "$redis_us"

start_sluiced memory
run_load memory grpc "$GRPC_PORT"
run_load memory http "$HTTP_PORT"
kill "$SLUICED_PID"; wait "$SLUICED_PID" 2>/dev/null || true

redis-cli -p "$RPORT" FLUSHALL >/dev/null
start_sluiced "redis://127.0.0.1:$RPORT"
run_load redis grpc "$GRPC_PORT"
GRPC_RATE=$LAST_RATE
echo "            ratio_to_ceiling=$(python3 -c "print(f'{$GRPC_RATE/$CEIL:.2f}')")"
run_load redis http "$HTTP_PORT"
HTTP_RATE=$LAST_RATE
echo "            ratio_to_ceiling=$(python3 -c "print(f'{$HTTP_RATE/$CEIL:.2f}')")"
kill "$SLUICED_PID"; wait "$SLUICED_PID" 2>/dev/null || true

if command -v node >/dev/null && command -v npm >/dev/null && [ -d "$PEER_DIR" ]; then
  PEER=$(mktemp -d); cp -r "$PEER_DIR"/. "$PEER"
  if (cd "$PEER" && npm install --silent --no-audit --no-fund >/dev/null 2>&1); then
    redis-cli -p "$RPORT" FLUSHALL >/dev/null
    out=$(cd "$PEER" && REDIS_PORT=$RPORT REDIS_PID=$REDIS_PID node bench.js rlflx-redis 50 "$SECS")
    r=$(echo "$out" | sed 's/.*"decisions_per_s":\([0-9.]*\).*/\1/; s/.*"decisionsPerSec":\([0-9.]*\).*/\1/')
    echo "peer        rate-limiter-flexible RateLimiterRedis, 50 in flight: $out"
    # bench.js gives node's and redis-server's CPU as percentages of the measured run's wall
    # time (after its 1 s warm-up): as us per decision here.
    csv_row peer redis in-process 50 "$r" "$(json "$out" p50_us)" "$(json "$out" p99_us)" \
      "$(python3 -c "print(f'{$(json "$out" node_cpu_pct) * 1e4 / max(1, $r):.1f}')")" "" \
      "$(python3 -c "print(f'{$(json "$out" redis_cpu_pct) * 1e4 / max(1, $r):.1f}')")"
    python3 -c "print(f'sluiced-redis-grpc / rlflx = {$GRPC_RATE/$r:.2f}')" 2>/dev/null || true
    python3 -c "print(f'sluiced-redis-http / rlflx = {$HTTP_RATE/$r:.2f}')" 2>/dev/null || true
  fi
  rm -rf "$PEER"
fi
echo "# results: $CSV"
