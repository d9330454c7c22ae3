#!/usr/bin/env bash
# Decisions/s against the number of checks in flight: the library over Redis (RedisStore, one
# auto-pipelined connection), Redis's ceiling (redis-benchmark, and the same client for sluice's own
# script) and the peer (rate-limiter-flexible over ioredis), each measured at the same in-flight
# counts, interleaved, in one run against one redis-server (only same-run ratios mean anything on
# a shared machine).
#
#   bench/inflight_sweep.sh [BUILD_DIR]   (a Release build with bench/redis_store_load and
#                                          bench/script_load; redis-server; node and npm for the
#                                          peer, which is skipped without them)
#
# At each in-flight count N:
#   library  bench/redis_store_load --inflight N, fixed_window, 10k uniform keys;
#   ceiling  redis-benchmark EVALSHA of the minimal fixed-window script (../shared/peer-bench/
#            fixed_window.lua, INCR + PEXPIRE + PTTL) with N calls outstanding: -c C -P P with
#            C = min(N, 16) connections and P = N / C pipelined;
#   ceiling_sluice_script  the same C x P from bench/script_load, calling sluice's own
#            fixed_window function by FCALL (its argument is binary, which redis-benchmark cannot
#            send): Redis's ceiling for the script the library runs;
#   peer     node bench.js rlflx-redis N (../shared/peer-bench, installed with npm into a
#            temporary directory).
# Every limit is high enough that every check records. Redis's CPU per decision comes from
# /proc/PID/stat around each run.
#
# Results: $RESULTS_DIR/inflight_sweep-<UTC time>.csv, one row per run, and a table of the
# medians over the rounds on stdout.
# Environment: INFLIGHTS (default "1 4 16 64 256"), ROUNDS (default 3), SECONDS_PER_RUN
# (default 4; the ceiling tools take a number of calls, not a time: each sends as many calls as
# the library decided per second at the same N, times SECONDS_PER_RUN, so its run takes about
# as long unless the machine changes; a run that exceeds 10 x SECONDS_PER_RUN + 30 s is
# stopped and left out), RESULTS_DIR (default bench/results), SLUICE_PEER_BENCH (default
# ../shared/peer-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD_DIR=${1:-build}
INFLIGHTS=${INFLIGHTS:-1 4 16 64 256}
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_PER_RUN:-4}
RESULTS_DIR=${RESULTS_DIR:-bench/results}
PEER_DIR=${SLUICE_PEER_BENCH:-../shared/peer-bench}
STORE_LOAD="$BUILD_DIR/bench/redis_store_load"
SCRIPT_LOAD="$BUILD_DIR/bench/script_load"
[ -f "$PEER_DIR/fixed_window.lua" ] || { echo "missing $PEER_DIR/fixed_window.lua (set SLUICE_PEER_BENCH)"; exit 1; }
for b in "$STORE_LOAD" "$SCRIPT_LOAD"; do
  [ -x "$b" ] || { echo "build $b first (cmake --build $BUILD_DIR --target $(basename "$b"))"; exit 1; }
done

WORK=$(mktemp -d)
REDIS_PID=
cleanup() { [ -z "$REDIS_PID" ] || kill "$REDIS_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --daemonize no --loglevel warning >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
REDIS_VERSION=$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')
SHA_FW=$(redis-cli -p "$PORT" SCRIPT LOAD "$(cat "$PEER_DIR/fixed_window.lua")")

PEER=
if command -v node >/dev/null && command -v npm >/dev/null && [ -d "$PEER_DIR" ]; then
  mkdir "$WORK/peer" && cp -r "$PEER_DIR"/. "$WORK/peer"
  if (cd "$WORK/peer" && timeout 120 npm install --silent --no-audit --no-fund >/dev/null 2>&1); then
    PEER="$WORK/peer"
  else
    echo "# peer skipped: npm install failed"
  fi
else
  echo "# peer skipped: node/npm or $PEER_DIR not available"
fi

CLK=$(getconf CLK_TCK)

mkdir -p "$RESULTS_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CSV="$RESULTS_DIR/inflight_sweep-$STAMP.csv"
echo "stamp,redis_version,round,series,inflight,decisions_per_s,p50_us,p99_us,client_cpu_us_per_decision,redis_cpu_us_per_decision,loadavg" >"$CSV"
echo "# redis-server $REDIS_VERSION on 127.0.0.1:$PORT, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg);" \
  "in flight: $INFLIGHTS; $ROUNDS rounds, ${SECS}s per run"

# row ROUND SERIES N RATE P50 P99 CLIENT_CPU REDIS_TICKS_BEFORE DECISIONS
row() {
  local redis_us
  redis_us=$(python3 -c "print(f'{($(ticks "$REDIS_PID") - $8) * 1e6 / $CLK / max(1, $9):.2f}')")
  echo "$STAMP,$REDIS_VERSION,$1,$2,$3,$4,$5,$6,$7,$redis_us,$(cut -d' ' -f1 /proc/loadavg)" >>"$CSV"
}

for round in $(seq "$ROUNDS"); do
  for n in $INFLIGHTS; do
    # library
    redis-cli -p "$PORT" FLUSHALL >/dev/null
    r0=$(ticks "$REDIS_PID")
    out=$("$STORE_LOAD" --url "redis://127.0.0.1:$PORT" --algorithm fixed_window --inflight "$n" \
      --seconds "$SECS")
    rate=$(json "$out" decisions_per_s)
    row "$round" library "$n" "$rate" "$(json "$out" p50_us)" "$(json "$out" p99_us)" \
      "$(json "$out" client_cpu_us_per_decision)" "$r0" "$(python3 -c "print(int($rate * $SECS))")"

    # the ceilings: N calls outstanding, C connections x P pipelined
    c=$((n < 16 ? n : 16)); p=$(((n + c - 1) / c))
    requests=$(python3 -c "print(max(1000, int($rate * $SECS)))")
    redis-cli -p "$PORT" FLUSHALL >/dev/null
    r0=$(ticks "$REDIS_PID")
    # --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",
    # "p99_latency_ms","max_latency_ms"
    if out=$(timeout $((SECS * 10 + 30)) redis-benchmark -p "$PORT" -c "$c" -P "$p" -n "$requests" \
      -r 10000 --csv EVALSHA "$SHA_FW" 1 'rl:fw:__rand_int__' 10000000 60000); then
      IFS=, read -r _ rate _ _ p50 _ p99 _ <<<"$(echo "$out" | tail -1 | tr -d '"')"
      row "$round" ceiling "$n" "$rate" "$(python3 -c "print(round($p50 * 1000))")" \
        "$(python3 -c "print(round($p99 * 1000))")" "" "$r0" "$requests"
    else
      echo "# round $round, $n in flight: redis-benchmark failed or timed out, left out"
    fi

    redis-cli -p "$PORT" FLUSHALL >/dev/null
    r0=$(ticks "$REDIS_PID")
    if out=$(timeout $((SECS * 10 + 30)) "$SCRIPT_LOAD" --port "$PORT" --call fcall \
      --algorithm fixed_window --requests "$requests" --connections "$c" --pipeline "$p"); then
      row "$round" ceiling_sluice_script "$n" "$(json "$out" calls_per_s)" "" "" \
        "$(json "$out" client_cpu_us_per_call)" "$r0" "$(json "$out" requests)"
    else
      echo "# round $round, $n in flight: script_load failed or timed out, left out"
    fi

    # peer
    if [ -n "$PEER" ]; then
      redis-cli -p "$PORT" FLUSHALL >/dev/null
      if ! out=$(cd "$PEER" && REDIS_PORT=$PORT REDIS_PID=$REDIS_PID timeout $((SECS + 60)) \
        node bench.js rlflx-redis "$n" "$SECS"); then
        echo "# round $round, $n in flight: the peer failed or timed out, left out"
        continue
      fi
      rate=$(json "$out" decisions_per_s)
      # bench.js gives node's and redis-server's CPU as percentages of its measured run's wall
      # time (after a 1 s warm-up): converted to us per decision.
      client=$(python3 -c "print(f'{$(json "$out" node_cpu_pct) * 1e4 / max(1, $rate):.1f}')")
      redis_us=$(python3 -c "print(f'{$(json "$out" redis_cpu_pct) * 1e4 / max(1, $rate):.2f}')")
      echo "$STAMP,$REDIS_VERSION,$round,peer,$n,$rate,$(json "$out" p50_us),$(json "$out" p99_us),$client,$redis_us,$(cut -d' ' -f1 /proc/loadavg)" >>"$CSV"
    fi
  done
  echo "# round $round of $ROUNDS done (load $(cut -d' ' -f1 /proc/loadavg))"
done

python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
names = {'library': 'library', 'ceiling': 'ceiling', 'ceiling_sluice_script': 'ceiling (sluice)',
         'peer': 'peer'}
series = [s for s in names if any(r['series'] == s for r in rows)]
points = sorted({int(r['inflight']) for r in rows})
med = {}
for s in series:
    for n in points:
        v = [float(r['decisions_per_s']) for r in rows if r['series'] == s and int(r['inflight']) == n]
        if v:
            med[s, n] = statistics.median(v)
print('decisions/s, medians of the rounds')
print(f"{'in flight':>9} " + ' '.join(f'{names[s]:>16}' for s in series) +
      f" {'library/ceiling':>16}" + (f" {'library/peer':>13}" if 'peer' in series else ''))
for n in points:
    line = f"{n:>9} " + ' '.join(f"{med.get((s, n), float('nan')):>16.0f}" for s in series)
    nan = float('nan')
    line += f" {med.get(('library', n), nan) / med.get(('ceiling', n), nan):>16.2f}"
    if 'peer' in series:
        line += f" {med.get(('library', n), nan) / med.get(('peer', n), nan):>13.2f}"
    print(line)
EOF
echo "# results: $CSV"
