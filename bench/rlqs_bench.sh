#!/usr/bin/env bash
# The cost of RLQS reports (issue 22): sluiced's and Redis's CPU per bucket report, and how long a
# stream of 1,000 buckets waits for its answer, on the memory store and on Redis.
#
#   bench/rlqs_bench.sh [BUILD_DIR]     (a Release build with sluiced and rlqs_load; redis-server)
#
# For each store: a sluiced of its own; first STREAMS streams (default 10, one connection each, as
# Envoys) of BUCKETS buckets (default 100) reporting every second for SECONDS (default 10): the
# CPU each process spent (from /proc, in clock ticks) per bucket report; then one stream of 1,000
# buckets reporting every 5 s (Envoy's interval) for 15 s: the latency of each whole report, which
# must stay far below the 5 s interval. Top-ups are off: rlqs_load reads one answer per report, and
# a top-up costs what a report of its buckets does (docs/rlqs.md, "Top-ups"). The table goes to stdout and one CSV row per run to
# $RESULTS_DIR/rlqs_bench-<UTC time>.csv (RESULTS_DIR defaults to bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD_DIR=${1:-build}
SLUICED="$BUILD_DIR/src/server/sluiced"
LOAD="$BUILD_DIR/bench/rlqs_load"
for b in "$SLUICED" "$LOAD"; do [ -x "$b" ] || { echo "build $b first"; exit 1; }; done
command -v redis-server >/dev/null || { echo "redis-server is needed"; exit 1; }
STREAMS=${STREAMS:-10}
BUCKETS=${BUCKETS:-100}
SECS=${SECONDS_PER_RUN:-10}
RESULTS_DIR=${RESULTS_DIR:-bench/results}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CSV="$RESULTS_DIR/rlqs_bench-$STAMP.csv"
mkdir -p "$RESULTS_DIR"

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/config"
cat >"$WORK/config/rlqs.yaml" <<'EOF'
domain: rlqs-bench
descriptors:
  - key: name
    rate_limit:
      unit: second
      requests_per_unit: 1000
EOF

RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --daemonize no --loglevel warning >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
for _ in $(seq 50); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

start_sluiced() {  # STORE -> GRPC_PORT SLUICED_PID
  local http
  http=$(free_port)
  GRPC_PORT=$(free_port)
  "$SLUICED" --config "$WORK/config" --store "$1" --http "127.0.0.1:$http" \
    --grpc "127.0.0.1:$GRPC_PORT" --log-level warn --drain-ms 0 --rlqs-top-up-interval-ms 0 \
    >"$WORK/sluiced.log" 2>&1 &
  SLUICED_PID=$!
  PIDS+=("$SLUICED_PID")
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$http/healthcheck" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "sluiced did not start:"
  cat "$WORK/sluiced.log"
  exit 1
}
CLK=$(getconf CLK_TCK)
# per_report PID TICKS_BEFORE BUCKET_REPORTS -> microseconds of that process's CPU per bucket report
per_report() { python3 -c "print(f'{($(ticks "$1") - $2) * 1e6 / $CLK / max(1, $3):.1f}')"; }

echo "# $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "store,run,streams,buckets,interval_ms,reports,bucket_reports,not_assigned,errors,p50_ms,p99_ms,max_ms,sluiced_cpu_us_per_bucket_report,redis_cpu_us_per_bucket_report" >"$CSV"
ROWS=()
for store in memory "redis://127.0.0.1:$RPORT"; do
  name=${store%%:*}
  start_sluiced "$store"
  for run in steady 1000-buckets; do
    if [ "$run" = steady ]; then
      args=(--streams "$STREAMS" --buckets "$BUCKETS" --interval-ms 1000 --seconds "$SECS")
    else
      args=(--streams 1 --buckets 1000 --interval-ms 5000 --seconds 15)
    fi
    s0=$(ticks "$SLUICED_PID")
    r0=$(ticks "$REDIS_PID")
    out=$("$LOAD" --target "127.0.0.1:$GRPC_PORT" "${args[@]}")
    n=$(echo "$out" | field bucket_reports)
    sluiced_us=$(per_report "$SLUICED_PID" "$s0" "$n")
    redis_us=$(per_report "$REDIS_PID" "$r0" "$n")
    [ "$name" = memory ] && redis_us=-
    echo "  $name $run: $out sluiced_us=$sluiced_us redis_us=$redis_us" >&2
    f() { echo "$out" | field "$1"; }
    echo "$name,$run,$(f streams),$(f buckets),$(f interval_ms),$(f reports),$n,$(f not_assigned),$(f errors),$(f p50_ms),$(f p99_ms),$(f max_ms),$sluiced_us,$redis_us" >>"$CSV"
    ROWS+=("| $name | $run: $(f streams) x $(f buckets) buckets every $(f interval_ms) ms | $n | $(f not_assigned) | $(f p50_ms) / $(f p99_ms) / $(f max_ms) | $sluiced_us | $redis_us |")
  done
  kill "$SLUICED_PID"
  wait "$SLUICED_PID" 2>/dev/null || true
done
echo "| store | run | bucket reports | not assigned | report latency p50 / p99 / max (ms) | sluiced CPU us per bucket report | Redis CPU us per bucket report |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); results: $CSV"
