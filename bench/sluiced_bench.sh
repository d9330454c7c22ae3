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
# Load generator, sluiced and Redis share the machine's 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
SECS=${SECONDS_PER_RUN:-8}
INFLIGHT=${INFLIGHT:-64}
PEER_DIR=${SLUICE_PEER_BENCH:-../shared/peer-bench}
SLUICED="$BUILD_DIR/src/server/sluiced"
LOAD="$BUILD_DIR/bench/rls_load"
STORE_LOAD="$BUILD_DIR/bench/redis_store_load"
for b in "$SLUICED" "$LOAD" "$STORE_LOAD"; do [ -x "$b" ] || { echo "build $b first"; exit 1; }; done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --daemonize no --loglevel warning >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
PIDS+=($REDIS_PID)
for _ in $(seq 50); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

start_sluiced() {  # store -> sets HTTP_PORT GRPC_PORT SLUICED_PID
  HTTP_PORT=$(free_port); GRPC_PORT=$(free_port)
  "$SLUICED" --config bench/config --store "$1" --http "127.0.0.1:$HTTP_PORT" \
    --grpc "127.0.0.1:$GRPC_PORT" ${SLUICED_FLAGS:-} --log-level warn --drain-ms 0 >"$WORK/sluiced.log" 2>&1 &
  SLUICED_PID=$!
  PIDS+=($SLUICED_PID)
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/healthcheck" >/dev/null 2>&1 && return 0; sleep 0.1
  done
  echo "sluiced did not start:"; cat "$WORK/sluiced.log"; exit 1
}
rate() { sed 's/.*"decisions_per_s":\([0-9.]*\).*/\1/'; }
field() { sed "s/.*\"$1\":\([0-9.]*\).*/\1/"; }
CLK=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# cpu_per_decision PID TICKS_BEFORE DECISIONS -> microseconds of that process's CPU per decision
cpu_per_decision() {
  python3 -c "print(f'{($(ticks "$1") - $2) * 1e6 / $CLK / max(1, $3):.1f}')"
}
# run_load STORE MODE PORT: one load run against the running sluiced, with the CPU split.
run_load() {
  local s0 r0 out r n
  s0=$(ticks "$SLUICED_PID"); r0=$(ticks "$REDIS_PID")
  out=$("$LOAD" --target "127.0.0.1:$3" --mode "$2" --inflight "$INFLIGHT" --seconds "$SECS" \
    --domain bench --key user)
  r=$(echo "$out" | rate); n=$(python3 -c "print(int($r * $SECS))")
  LAST_RATE=$r
  echo "sluiced     $1 $2: $out sluiced_cpu_us=$(cpu_per_decision "$SLUICED_PID" "$s0" "$n")" \
    "redis_cpu_us=$(cpu_per_decision "$REDIS_PID" "$r0" "$n")"
}

echo "# $(nproc) cores; redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'); $SECS s per run; $INFLIGHT in flight"
redis-cli -p "$RPORT" FLUSHALL >/dev/null
r0=$(ticks "$REDIS_PID")
# The store's own script as the store calls it (FCALL; its argument is binary, which
# redis-benchmark cannot send), pipelined as redis-benchmark -c 50 -P 16 would.
CEIL=$("$(dirname "$STORE_LOAD")/script_load" --port "$RPORT" --call fcall --algorithm fixed_window \
  --requests 1000000 --connections 50 --pipeline 16 | sed 's/.*"calls_per_s":\([0-9]*\).*/\1/')
echo "ceiling     script_load FCALL fixed_window -c 50 -P 16: $CEIL decisions/s" \
  "redis_cpu_us=$(cpu_per_decision "$REDIS_PID" "$r0" 1000000)"

redis-cli -p "$RPORT" FLUSHALL >/dev/null
r0=$(ticks "$REDIS_PID")
LIB=$("$STORE_LOAD" --url "redis://127.0.0.1:$RPORT" --algorithm fixed_window --inflight 256 --seconds "$SECS")
n=$(python3 -c "print(int($(echo "$LIB" | rate) * $SECS))")
echo "library     RedisStore direct, 256 in flight: $LIB redis_cpu_us=$(cpu_per_decision "$REDIS_PID" "$r0" "$n")"

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
    python3 -c "print(f'sluiced-redis-grpc / rlflx = {$GRPC_RATE/$r:.2f}')" 2>/dev/null || true
    python3 -c "print(f'sluiced-redis-http / rlflx = {$HTTP_RATE/$r:.2f}')" 2>/dev/null || true
  fi
  rm -rf "$PEER"
fi
