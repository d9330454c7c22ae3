#!/usr/bin/env bash
# The Redis store benchmark: sluice's RedisStore beside Redis's own ceiling and the peer, measured in
# one run on one redis-server (these machines are noisy; only same-run ratios mean anything).
#
#   bench/redis_bench.sh [BUILD_DIR]      (needs a Release build with benchmarks, and redis-server)
#
# 1. ceiling: bench/script_load -c 50 -P 16 running FCALL of sluice's own check functions
#    (fixed_window and gcra, each its own function), 10k keys;
# 2. sluice: bench/redis_store_load (RedisStore, one auto-pipelined connection) at 1, 50 and 256
#    checks in flight;
# 3. peer: rate-limiter-flexible over ioredis (../shared/peer-bench), 50 in flight, if node and npm
#    are available.
# Besides the table on stdout, one CSV row per measurement goes to
# $RESULTS_DIR/redis_bench-<UTC time>.csv (RESULTS_DIR defaults to bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD_DIR=${1:-build}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
PEER_DIR=${SLUICE_PEER_BENCH:-../shared/peer-bench}
LOAD="$BUILD_DIR/bench/redis_store_load"
[ -x "$LOAD" ] || { echo "build $LOAD first (make build)"; exit 1; }

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
WORK=$(mktemp -d)
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --daemonize no --loglevel warning >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

RESULTS_DIR=${RESULTS_DIR:-bench/results}
mkdir -p "$RESULTS_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CSV="$RESULTS_DIR/redis_bench-$STAMP.csv"
REDIS_VERSION=$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')
echo "stamp,redis_version,what,algorithm,inflight,decisions_per_s,p50_us,p99_us,client_cpu_us_per_decision,ratio_to_ceiling,loadavg" >"$CSV"
csv_row() {  # WHAT ALGORITHM INFLIGHT RATE P50 P99 CLIENT RATIO (empty: not measured)
  echo "$STAMP,$REDIS_VERSION,$1,$2,$3,$4,$5,$6,$7,$8,$(cut -d' ' -f1 /proc/loadavg)" >>"$CSV"
}

ceiling() {  # algorithm
  # Each algorithm has its own function (docs/redis.md, "Cost per call"), called as the store
  # calls it (FCALL; its argument is binary, which redis-benchmark cannot send).
  redis-cli -p "$PORT" FLUSHALL >/dev/null
  local out
  out=$("$BUILD_DIR/bench/script_load" --port "$PORT" --call fcall --algorithm "$1" \
    --requests 1000000 --connections 50 --pipeline 16)
  csv_row ceiling "$1" 800 "$(json "$out" calls_per_s)" "" "" "$(json "$out" client_cpu_us_per_call)" 1.00
  echo "$out" | sed 's/.*"calls_per_s":\([0-9]*\).*/\1/'
}

echo "# redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$PORT, $(nproc) cores"
declare -A CEIL
for algo in fixed_window gcra; do
  CEIL[$algo]=$(ceiling $algo)
  echo "ceiling  $algo script_load FCALL -c 50 -P 16: ${CEIL[$algo]} decisions/s"
done
for algo in fixed_window gcra; do
  for n in 1 50 256; do
    redis-cli -p "$PORT" FLUSHALL >/dev/null
    out=$("$LOAD" --url "redis://127.0.0.1:$PORT" --algorithm $algo --inflight $n --seconds "$SECONDS_PER_RUN")
    rate=$(echo "$out" | sed 's/.*"decisions_per_s":\([0-9.]*\).*/\1/')
    ratio=$(python3 -c "print(f'{$rate/${CEIL[$algo]}:.2f}')")
    echo "sluice   $algo inflight=$n: $out  ratio_to_ceiling=$ratio"
    csv_row library "$algo" "$n" "$rate" "$(json "$out" p50_us)" "$(json "$out" p99_us)" \
      "$(json "$out" client_cpu_us_per_decision)" "$ratio"
  done
done
if command -v node >/dev/null && command -v npm >/dev/null && [ -d "$PEER_DIR" ]; then
  PEER=$(mktemp -d)
  cp -r "$PEER_DIR"/. "$PEER"
  if (cd "$PEER" && npm install --silent --no-audit --no-fund >/dev/null 2>&1); then
    redis-cli -p "$PORT" FLUSHALL >/dev/null
    out=$(cd "$PEER" && REDIS_PORT=$PORT REDIS_PID=$REDIS_PID node bench.js rlflx-redis 50 "$SECONDS_PER_RUN")
    echo "peer     rate-limiter-flexible RateLimiterRedis inflight=50: $out"
    rate=$(json "$out" decisions_per_s)
    # bench.js gives node's CPU as a percentage of wall time: as us per decision here.
    csv_row peer fixed_window 50 "$rate" "$(json "$out" p50_us)" "$(json "$out" p99_us)" \
      "$(python3 -c "print(f'{$(json "$out" node_cpu_pct) * 1e4 / max(1, $rate):.1f}')")" \
      "$(python3 -c "print(f'{$rate / ${CEIL[fixed_window]}:.2f}')")"
  else
    echo "peer     skipped: npm install failed"
  fi
  rm -rf "$PEER"
else
  echo "peer     skipped: node/npm or $PEER_DIR not available"
fi
echo "# results: $CSV"
