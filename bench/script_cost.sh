#!/usr/bin/env bash
# Redis's CPU per call of each of sluice's check scripts, beside the minimal script of the same
# algorithm (../shared/peer-bench) and INCR, in one run on one redis-server.
#
#   bench/script_cost.sh [BUILD_DIR]      (needs a Release build with bench/script_load, and
#                                          redis-server / redis-benchmark)
#
# The figure is INFO commandstats' usec_per_call: the time Redis spends inside the command (the
# script and the commands it calls), which depends far less on the rest of the machine than a
# throughput does. Each measurement resets the stats, empties the database and sends REQUESTS
# calls on 10k uniform random keys from 50 connections x 16 pipelined (redis-benchmark for INCR
# and the minimal scripts, bench/script_load for sluice's, which are binary). Every limit is high,
# so every script runs its allow path. The measurements are interleaved, ROUNDS rounds, and the
# table gives each one's median, its range, and the ratio of the medians to its reference:
#   fixed_window -> minimal fixed_window.lua (INCR + PEXPIRE on the first hit + PTTL)
#   gcra, token_bucket, sliding_window -> minimal gcra.lua (TIME, GET, SET ... PX)
#   sliding_log -> minimal sliding_log.lua (TIME, ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE)
# and, for FCALL, the ratio to the same script by EVALSHA. Two reference functions
# (bench/script_floor.lua) show where the fixed window's floor is: the minimal fixed-window script
# as a function, and the commands and conversions a fixed window cannot do without.
#
# Results: bench/results/script_cost-<UTC time>.csv (every round) and ..._summary.csv (medians).
# Environment: ROUNDS (default 5), REQUESTS (default 200000), PEER_BENCH (the minimal scripts,
# default ../shared/peer-bench), RESULTS_DIR (default bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-200000}
PEER_BENCH=${PEER_BENCH:-../shared/peer-bench}
RESULTS_DIR=${RESULTS_DIR:-bench/results}
LOAD="$BUILD_DIR/bench/script_load"
[ -x "$LOAD" ] || { echo "build $LOAD first (cmake --build $BUILD_DIR --target script_load)"; exit 1; }
for f in fixed_window gcra sliding_log; do
  [ -f "$PEER_BENCH/$f.lua" ] || { echo "missing $PEER_BENCH/$f.lua (set PEER_BENCH)"; exit 1; }
done

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
WORK=$(mktemp -d)
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --daemonize no --loglevel warning >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
cli() { redis-cli -p "$PORT" "$@"; }

REDIS_VERSION=$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')
SHA_FW=$(cli SCRIPT LOAD "$(cat "$PEER_BENCH/fixed_window.lua")")
SHA_GCRA=$(cli SCRIPT LOAD "$(cat "$PEER_BENCH/gcra.lua")")
SHA_SL=$(cli SCRIPT LOAD "$(cat "$PEER_BENCH/sliding_log.lua")")
cli FUNCTION LOAD "$(cat bench/script_floor.lua)" >/dev/null

# name|kind|algorithm|reference: kind is incr, minimal, fcall or evalsha.
ENTRIES=(
  "INCR|incr|-|-"
  "minimal fixed_window|minimal|fixed_window|-"
  "minimal gcra|minimal|gcra|-"
  "minimal sliding_log|minimal|sliding_log|-"
  "minimal fixed_window fcall|minimal-fcall|fixed_window|minimal fixed_window"
  "floor fixed_window fcall|floor-fcall|fixed_window|minimal fixed_window"
)
for algorithm in fixed_window sliding_window sliding_log token_bucket gcra; do
  case $algorithm in
    fixed_window) ref="minimal fixed_window" ;;
    sliding_log) ref="minimal sliding_log" ;;
    *) ref="minimal gcra" ;;
  esac
  ENTRIES+=("$algorithm fcall|fcall|$algorithm|$ref" "$algorithm evalsha|evalsha|$algorithm|$ref")
done

# measure KIND ALGORITHM: prints the command's usec_per_call.
measure() {
  local kind=$1 algorithm=$2 stat
  cli FLUSHALL >/dev/null
  cli CONFIG RESETSTAT >/dev/null
  local bench=(redis-benchmark -p "$PORT" -c 50 -P 16 -n "$REQUESTS" -r 10000 -q)
  case $kind in
    incr)
      "${bench[@]}" INCR 'k:__rand_int__' >/dev/null
      stat=incr ;;
    minimal)
      case $algorithm in
        fixed_window) "${bench[@]}" EVALSHA "$SHA_FW" 1 'rl:fw:__rand_int__' 10000000 60000 ;;
        gcra) "${bench[@]}" EVALSHA "$SHA_GCRA" 1 'rl:g:__rand_int__' 10000000 10000000 60000 1 ;;
        sliding_log) "${bench[@]}" EVALSHA "$SHA_SL" 1 'rl:sl:__rand_int__' 100000 60000 n ;;
      esac >/dev/null
      stat=evalsha ;;
    minimal-fcall)
      "${bench[@]}" FCALL minimal_fixed_window 1 'rl:fw:__rand_int__' 10000000 60000 >/dev/null
      stat=fcall ;;
    floor-fcall)
      "${bench[@]}" FCALL floor_fixed_window 1 'rl:fw:__rand_int__' >/dev/null
      stat=fcall ;;
    fcall | evalsha)
      "$LOAD" --port "$PORT" --call "$kind" --algorithm "$algorithm" --requests "$REQUESTS" \
        --connections 50 --pipeline 16 >/dev/null
      stat=$kind ;;
  esac
  cli INFO commandstats | tr -d '\r' |
    sed -n "s/^cmdstat_$stat:calls=\([0-9]*\),.*usec_per_call=\([0-9.]*\),.*failed_calls=\([0-9]*\).*/\1 \2 \3/p" |
    { read -r calls usec failed
      if [ "$calls" -lt "$REQUESTS" ] || [ "$failed" != 0 ]; then
        echo "measure $kind $algorithm: $calls calls, $failed failed" >&2; exit 1
      fi
      echo "$usec"; }
}

mkdir -p "$RESULTS_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RAW="$RESULTS_DIR/script_cost-$STAMP.csv"
SUMMARY="$RESULTS_DIR/script_cost-${STAMP}_summary.csv"
echo "stamp,redis_version,round,name,kind,algorithm,usec_per_call" >"$RAW"
echo "# redis-server $REDIS_VERSION on 127.0.0.1:$PORT, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg);" \
  "$ROUNDS rounds of $REQUESTS calls, -c 50 -P 16, 10k keys"
for round in $(seq "$ROUNDS"); do
  for entry in "${ENTRIES[@]}"; do
    IFS='|' read -r name kind algorithm _ <<<"$entry"
    usec=$(measure "$kind" "$algorithm")
    echo "$STAMP,$REDIS_VERSION,$round,$name,$kind,$algorithm,$usec" >>"$RAW"
  done
  echo "# round $round of $ROUNDS done (load $(cut -d' ' -f1 /proc/loadavg))"
done

# Medians, ranges and ratios, from the raw file.
python3 - "$RAW" "$SUMMARY" "${ENTRIES[@]}" <<'EOF'
import csv, statistics, sys
raw, summary, entries = sys.argv[1], sys.argv[2], [e.split('|') for e in sys.argv[3:]]
values = {}
for row in csv.DictReader(open(raw)):
    values.setdefault(row['name'], []).append(float(row['usec_per_call']))
median = {name: statistics.median(v) for name, v in values.items()}
stamp = next(csv.DictReader(open(raw)))['stamp']
with open(summary, 'w', newline='') as out:
    w = csv.writer(out)
    w.writerow(['stamp', 'name', 'kind', 'algorithm', 'rounds', 'median_usec_per_call',
                'min_usec_per_call', 'max_usec_per_call', 'reference', 'ratio_to_reference',
                'ratio_to_evalsha'])
    print(f"{'script':24} {'us/call':>8} {'range':>13} {'x reference':>24} {'x EVALSHA':>10}")
    for name, kind, algorithm, ref in entries:
        v = values[name]
        ratio = median[name] / median[ref] if ref != '-' else None
        vs_evalsha = (median[name] / median[f'{algorithm} evalsha']
                      if kind == 'fcall' else None)
        w.writerow([stamp, name, kind, algorithm, len(v), f'{median[name]:.2f}', f'{min(v):.2f}',
                    f'{max(v):.2f}', ref if ref != '-' else '',
                    f'{ratio:.2f}' if ratio else '', f'{vs_evalsha:.2f}' if vs_evalsha else ''])
        ref_text = f'{ratio:.2f} x {ref}' if ratio else ''
        ev_text = f'{vs_evalsha:.2f}' if vs_evalsha else ''
        print(f"{name:24} {median[name]:8.2f} {min(v):6.2f}-{max(v):<6.2f} {ref_text:>24} "
              f"{ev_text:>10}")
EOF
echo "# results: $RAW, $SUMMARY"
