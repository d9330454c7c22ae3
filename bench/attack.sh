#!/usr/bin/env bash
# The attack run of issue 13: each hostile load against a sluiced of its own, for a bounded time,
# with a light probe of ordinary decisions beside it, and one table of what sluiced held.
#
#   bench/attack.sh [BUILD_DIR]     (a Release build with sluiced, rls_load and attack_load;
#                                    redis-server and redis-cli for the Redis rows)
#
# For each attack: the probe (bench/attack_load.cc, "probe") makes one gRPC and one HTTP /json
# decision every 20 ms, each with a 1 s deadline, on a kept-alive connection as Envoy does (for the
# idle-connection attacks: a new connection each, as a client arriving during the attack), and
# reads sluiced's VmRSS every 100 ms. It runs 1 s before the attack, during it (ATTACK_SECONDS,
# default 5) and AFTER_SECONDS (default 5) after it. Columns:
#   RSS before / peak / after   VmRSS before the attack, its highest during it, and at the end
#                               of the AFTER_SECONDS that follow it;
#   p99 gRPC / HTTP             of the probe's decisions started during the attack (a decision
#                               that failed counts at its latency; a timeout is 1,000 ms);
#   errors                      probe decisions not answered OK, during the attack and after it,
#                               of all made in that time;
#   recovery                    from the attack's end to the first probe decision after which 10
#                               in a row (5 of each protocol) are answered OK within 20 ms
#                               (Envoy's default rate limit timeout); "-" if none within the run.
# SLUICED_FLAGS are added to every sluiced (e.g. "--memory-release-step-bytes 0" to compare).
# ATTACK_ONLY, an extended regular expression, runs only the rows whose name it matches (and
# starts only the servers they need), e.g. ATTACK_ONLY='gRPC flood' for the two flood rows.
# The table is printed (Markdown) and written, one row per attack, to
# $RESULTS_DIR/attack-<UTC time>.csv (RESULTS_DIR defaults to bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD_DIR=${1:-build}
ATTACK=${ATTACK_SECONDS:-5}
AFTER=${AFTER_SECONDS:-5}
SLUICED="$BUILD_DIR/src/server/sluiced"
LOAD="$BUILD_DIR/bench/rls_load"
TOOL="$BUILD_DIR/bench/attack_load"
for b in "$SLUICED" "$LOAD" "$TOOL"; do [ -x "$b" ] || { echo "build $b first"; exit 1; }; done
command -v redis-server >/dev/null || { echo "redis-server is needed"; exit 1; }

now_ms() { date +%s%3N; }
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
RESULTS_DIR=${RESULTS_DIR:-bench/results}
mkdir -p "$RESULTS_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CSV="$RESULTS_DIR/attack-$STAMP.csv"
ROWS="$WORK/rows.tsv"
: >"$ROWS"

# The benchmark's rule, with detailed metrics (a series per descriptor value, as point 4 needs).
mkdir -p "$WORK/config"
cat >"$WORK/config/attack.yaml" <<'EOF'
domain: bench
descriptors:
  - key: user
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 1000000000
EOF

# start_sluiced NOFILE [flags...] -> HTTP_PORT GRPC_PORT SLUICED_PID. NOFILE: the soft and hard
# descriptor limit it runs under ("" for this shell's).
start_sluiced() {
  local nofile=$1
  shift
  HTTP_PORT=$(free_port)
  GRPC_PORT=$(free_port)
  (
    [ -n "$nofile" ] && ulimit -n "$nofile"
    # shellcheck disable=SC2086 # SLUICED_FLAGS is a list of flags.
    exec "$SLUICED" --config "$WORK/config" --http "127.0.0.1:$HTTP_PORT" \
      --grpc "127.0.0.1:$GRPC_PORT" --drain-ms 0 --log-level warn "$@" ${SLUICED_FLAGS:-}
  ) >>"$WORK/sluiced.log" 2>&1 &
  SLUICED_PID=$!
  PIDS+=("$SLUICED_PID")
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/healthcheck" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "sluiced did not start:"
  cat "$WORK/sluiced.log"
  exit 1
}
stop_sluiced() { kill "$SLUICED_PID" 2>/dev/null || true; wait "$SLUICED_PID" 2>/dev/null || true; }

start_redis() {
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
    --daemonize no --loglevel warning >>"$WORK/redis.log" 2>&1 &
  REDIS_PID=$!
  PIDS+=("$REDIS_PID")
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "redis-server did not start"
  exit 1
}

# attack NAME LOAD PROBE_FLAGS COMMAND...: runs COMMAND (bounded by ATTACK seconds) with the
# probe beside it, and adds the row. COMMAND's output (one JSON line) is appended to LOAD.
attack() {
  local name=$1 load=$2 probe_flags=$3
  shift 3
  wanted "$name" || return 0
  local out="$WORK/probe-${#PIDS[@]}-$RANDOM" stop="$WORK/stop-$RANDOM"
  # shellcheck disable=SC2086 # PROBE_FLAGS is a list of flags.
  "$TOOL" probe --grpc "127.0.0.1:$GRPC_PORT" --http "127.0.0.1:$HTTP_PORT" --pid "$SLUICED_PID" \
    --seconds 120 --until-file "$stop" --out "$out" $probe_flags &
  local probe=$!
  sleep 1
  local t0 t1 said
  t0=$(now_ms)
  # In this shell (not a subshell): an attack may restart a server and set its pid.
  "$@" >"$WORK/said" 2>&1 || true
  said=$(tail -1 "$WORK/said")
  t1=$(now_ms)
  sleep "$AFTER"
  touch "$stop"
  wait "$probe" || true
  echo "  $name: $said" >&2
  python3 - "$out" "$t0" "$t1" "$name" "$load" "$said" >>"$ROWS" <<'PY'
import json, sys
path, t0, t1, name, load, said = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:]
decisions, rss = [], []
for line in open(path):
    f = line.split()
    if f[0] == "d":
        decisions.append((int(f[1]), f[2], int(f[3]), f[4] == "1"))
    elif f[0] == "r" and int(f[2]) > 0:
        rss.append((int(f[1]), int(f[2])))
def p99(proto):
    lat = sorted(d[2] for d in decisions if d[1] == proto and t0 <= d[0] < t1)
    return f"{lat[min(len(lat) - 1, int(0.99 * len(lat)))] / 1000:.1f}" if lat else "-"
during_after = [d for d in decisions if d[0] >= t0]
errors = sum(1 for d in during_after if not d[3])
after = [d for d in decisions if d[0] >= t1]
recovery = "-"
for i in range(len(after) - 9):
    if all(d[3] and d[2] < 20000 for d in after[i:i + 10]):
        recovery = str(max(0, after[i][0] - t1))
        break
before = [r for t, r in rss if t < t0]
peak = [r for t, r in rss if t0 <= t < t1] or [0]
mb = lambda kb: f"{kb / 1024:.0f}"
try:
    said = ", ".join(f"{k} {v}" for k, v in json.loads(said).items() if k != "mode")
except ValueError:
    pass
if said:
    load = f"{load} ({said})"
print("\t".join([name, load, mb(before[-1] if before else 0), mb(max(peak)),
                 mb(rss[-1][1] if rss else 0), p99("grpc"), p99("http"),
                 f"{errors}/{len(during_after)}", recovery]))
PY
}

# wanted NAME...: whether ATTACK_ONLY selects any of these rows (all when it is unset).
wanted() { [ -z "${ATTACK_ONLY:-}" ] || printf '%s\n' "$@" | grep -Eq -- "$ATTACK_ONLY"; }

idle() { "$TOOL" idle --port "$1" --count "$2" --seconds "$ATTACK"; }
idle_both() {
  "$TOOL" idle --port "$HTTP_PORT" --count "$1" --seconds "$ATTACK" >/dev/null &
  local http=$!
  "$TOOL" idle --port "$GRPC_PORT" --count "$1" --seconds "$ATTACK"
  wait "$http"
}
with_load() {  # COMMAND... with rls_load (gRPC, 32 in flight) beside it for ATTACK seconds
  "$LOAD" --target "127.0.0.1:$GRPC_PORT" --mode grpc --inflight 32 --seconds "$ATTACK" \
    --domain bench --key user >"$WORK/rls_load.out" 2>&1 &
  local load=$!
  "$@"
  wait "$load" || true
  sed 's/.*"ok":\([0-9]*\),"over":[0-9]*,"errors":\([0-9]*\).*/{"rls_load ok":\1,"rls_load errors":\2}/' \
    "$WORK/rls_load.out"
}
redis_paused() { kill -STOP "$REDIS_PID"; sleep "$ATTACK"; kill -CONT "$REDIS_PID"; }
redis_killed() {
  kill -KILL "$REDIS_PID"
  wait "$REDIS_PID" 2>/dev/null || true
  sleep "$ATTACK"
  start_redis >/dev/null
}

echo "# $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); ${ATTACK} s per attack," \
  "${AFTER} s after; $(date -u '+%Y-%m-%d %H:%M UTC')" >&2

# Idle connections under `ulimit -n 256`: sluiced's default caps (a quarter each, 64), then the
# caps raised so that descriptors run out.
if wanted "none (probe alone)" "idle conns, HTTP, default cap" "idle conns, gRPC, default cap"; then
  start_sluiced 256
  attack "none (probe alone)" "-" "" sleep "$ATTACK"
  attack "idle conns, HTTP, default cap" "1,000 idle, ulimit -n 256, cap 64; probe on new conns" \
    --fresh idle "$HTTP_PORT" 1000
  attack "idle conns, gRPC, default cap" "1,000 idle, ulimit -n 256, cap 64; probe on new conns" \
    --fresh idle "$GRPC_PORT" 1000
  stop_sluiced
fi
if wanted "idle conns past the fd limit, both ports"; then
  start_sluiced 256 --http-max-connections 100000 --grpc-max-connections 100000
  attack "idle conns past the fd limit, both ports" \
    "1,000 idle on each, ulimit -n 256, caps off; probe on new conns" --fresh idle_both 1000
  stop_sluiced
fi

# The gRPC flood on each engine, with the probe alone first (its unflooded figure beside the
# flooded one, in the same setting), and beside as many busy loops as cores: the floor that the
# CPU's sharing alone puts under the probe's p99 when the flood's client runs on the same cores.
flood() {
  "$TOOL" flood --grpc "127.0.0.1:$GRPC_PORT" --calls 20000 --descriptors 64 --connections 20 \
    --seconds "$ATTACK"
}
busy() {
  local loops=()
  for _ in $(seq "$(nproc)"); do
    timeout "$ATTACK" sh -c 'while :; do :; done' &
    loops+=($!)
  done
  wait "${loops[@]}" || true
}
for engine in grpc nghttp2; do
  if wanted "probe alone, engine $engine" "CPU busy, engine $engine" "gRPC flood, engine $engine"; then
    start_sluiced "" --grpc-engine "$engine"
    attack "probe alone, engine $engine" "-" "" sleep "$ATTACK"
    attack "CPU busy, engine $engine" "$(nproc) busy loops, no flood" "" busy
    attack "gRPC flood, engine $engine" "20,000 concurrent calls x 64 descriptors, 20 conns" "" flood
    stop_sluiced
  fi
done

# The memory store, bounded at 64 MiB so that the unique values reach the bound in the run. The
# scrapes read the series the unique values made: select both.
if wanted "garbage protobuf on gRPC" "oversized headers" "unique 4 KB values, memory store" \
  "/metrics scrapes, detailed metrics"; then
  start_sluiced "" --memory-store-max-bytes 67108864
  attack "garbage protobuf on gRPC" "64 threads of unparsable calls" "" \
    "$TOOL" garbage --grpc "127.0.0.1:$GRPC_PORT" --inflight 64 --seconds "$ATTACK"
  attack "oversized headers" "8 threads, 32 KB header, new conn each" "" \
    "$TOOL" headers --http "127.0.0.1:$HTTP_PORT" --header-bytes 32768 --inflight 8 \
    --seconds "$ATTACK"
  attack "unique 4 KB values, memory store" "256 calls x 8 unique values in flight, bound 64 MiB" \
    "" "$TOOL" flood --grpc "127.0.0.1:$GRPC_PORT" --calls 256 --descriptors 8 --unique \
    --value-bytes 4096 --seconds "$ATTACK"
  attack "/metrics scrapes, detailed metrics" "back-to-back, series filled by the row above" "" \
    "$TOOL" scrape --http "127.0.0.1:$HTTP_PORT" --path /metrics --seconds "$ATTACK"
  stop_sluiced
fi

# Redis (failure mode: the default, error), with rls_load beside the probe.
if wanted "Redis paused (SIGSTOP)" "Redis killed, restarted"; then
  REDIS_PORT=$(free_port)
  start_redis
  start_sluiced "" --store "redis://127.0.0.1:$REDIS_PORT"
  attack "Redis paused (SIGSTOP)" "rls_load gRPC, 32 in flight; failure mode error" "" \
    with_load redis_paused
  attack "Redis killed, restarted" "rls_load gRPC, 32 in flight; failure mode error" "" \
    with_load redis_killed
  stop_sluiced
fi

LOADAVG=$(cut -d' ' -f1 /proc/loadavg)
echo "stamp,attack,load,rss_before_mb,rss_peak_mb,rss_after_mb,p99_grpc_ms,p99_http_ms,errors,recovery_ms,loadavg" >"$CSV"
python3 - "$ROWS" "$STAMP" "$LOADAVG" >>"$CSV" <<'PY'
import csv, sys
w = csv.writer(sys.stdout)
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    w.writerow([sys.argv[2]] + f + [sys.argv[3]])
PY
echo "| attack | load held | RSS before / peak / after (MB) | p99 gRPC / HTTP (ms) | errors | recovery (ms) |"
echo "|---|---|---|---|---|---|"
while IFS=$'\t' read -r name load before peak after pg ph errors recovery; do
  echo "| $name | $load | $before / $peak / $after | $pg / $ph | $errors | $recovery |"
done <"$ROWS"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); results: $CSV"
