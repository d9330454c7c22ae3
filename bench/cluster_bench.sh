#!/usr/bin/env bash
# Redis Cluster scaling benchmark: the same client (bench/redis_store_load) against one Redis
# Cluster primary and against three, in one run.
#
#   bench/cluster_bench.sh [BUILD_DIR]      (needs a Release build with benchmarks, redis-server)
#
# On 2 cores absolute scaling cannot show (Redis, the client and the load share them), so the
# figures that matter are per decision and per shard:
#   - Redis CPU per decision on each primary (INFO cpu delta / decisions it served);
#   - the key spread across primaries: max/mean of the script calls each primary served;
#   - the client's own CPU per decision (getrusage in the load tool).
# The cost per decision on each shard and in the client should not grow with the shard count,
# and the spread should be even (max/mean <= 1.1). Prints a table and one CSV line per run to
# $OUT (default $RESULTS_DIR/cluster_bench-<UTC time>.csv, RESULTS_DIR defaulting to bench/results;
# an existing $OUT is appended to). Loopback only; bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
INFLIGHT=${INFLIGHT:-256}
ROUNDS=${ROUNDS:-3}
LOAD="$BUILD_DIR/bench/redis_store_load"
RESULTS_DIR=${RESULTS_DIR:-bench/results}
OUT=${OUT:-$RESULTS_DIR/cluster_bench-$(date -u +%Y%m%dT%H%M%SZ).csv}
[ -x "$LOAD" ] || { echo "build $LOAD first (make build)"; exit 1; }
mkdir -p "$(dirname "$OUT")"

WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() {  # a port P with P and its cluster bus port P+10000 both free
  python3 - <<'PY'
import random, socket
for _ in range(1000):
    p = random.randint(20000, 50000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass
PY
}

start_node() {  # port
  mkdir -p "$WORK/$1"
  redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK/$1" \
    --cluster-enabled yes --cluster-config-file "$WORK/$1/nodes.conf" --daemonize no \
    --loglevel warning >"$WORK/$1/redis.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 50); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "redis-server on $1 did not start:"; cat "$WORK/$1/redis.log"; exit 1
}

wait_ok() {  # port...
  for _ in $(seq 100); do
    local ok=1
    for p in "$@"; do
      redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || ok=0
    done
    [ $ok = 1 ] && return
    sleep 0.1
  done
  echo "cluster did not become ok"; exit 1
}

make_cluster() {  # n -> sets CLUSTER_PORTS (not a subshell: the servers must stay ours to stop)
  local n=$1 ports=()
  for _ in $(seq "$n"); do
    local p
    p=$(free_port)
    start_node "$p"
    ports+=("$p")
  done
  if [ "$n" = 1 ]; then
    # redis-cli --cluster create wants at least three primaries; one node takes every slot.
    redis-cli -p "${ports[0]}" cluster addslotsrange 0 16383 >/dev/null
  else
    local addrs=()
    for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
  fi
  wait_ok "${ports[@]}"
  CLUSTER_PORTS=("${ports[@]}")
}

cpu_of() {  # port -> used_cpu_sys + used_cpu_user in seconds
  redis-cli -p "$1" info cpu | tr -d '\r' |
    awk -F: '/^used_cpu_sys:|^used_cpu_user:/ {s += $2} END {printf "%.6f", s}'
}

calls_of() {  # port -> script calls served (fcall + evalsha + eval)
  redis-cli -p "$1" info commandstats | tr -d '\r' |
    awk -F'[:=,]' '/^cmdstat_(fcall|evalsha|eval):/ {s += $3} END {print s + 0}'
}

json_field() {  # json field
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

run() {  # label n
  local label=$1 n=$2
  make_cluster "$n"
  local ports=("${CLUSTER_PORTS[@]}")
  local url="redis-cluster://127.0.0.1:${ports[0]}"
  # Warm up: scripts loaded on every primary, connections made.
  "$LOAD" --url "$url" --inflight "$INFLIGHT" --seconds 1 >/dev/null
  local cpu0=() calls0=()
  for p in "${ports[@]}"; do cpu0+=("$(cpu_of "$p")"); calls0+=("$(calls_of "$p")"); done
  local line
  line=$("$LOAD" --url "$url" --inflight "$INFLIGHT" --seconds "$SECONDS_PER_RUN")
  local per_shard="" max=0 sum=0 cpu_sum=0
  for i in "${!ports[@]}"; do
    local p=${ports[$i]}
    local dc dcpu
    dc=$(( $(calls_of "$p") - ${calls0[$i]} ))
    dcpu=$(python3 -c "print($(cpu_of "$p") - ${cpu0[$i]})")
    per_shard+=$(python3 -c "print(f'{$dcpu * 1e6 / max($dc, 1):.1f}')")" "
    sum=$((sum + dc)); [ "$dc" -gt "$max" ] && max=$dc
    cpu_sum=$(python3 -c "print($cpu_sum + $dcpu)")
  done
  local rate client p99 spread redis_per errors
  errors=$(json_field "$line" errors)
  [ "$errors" = 0 ] || echo "warning: $label: $errors errors" >&2
  rate=$(json_field "$line" decisions_per_s)
  client=$(json_field "$line" client_cpu_us_per_decision)
  p99=$(json_field "$line" p99_us)
  spread=$(python3 -c "print(f'{$max / ($sum / $n):.3f}' if $sum else 'nan')")
  redis_per=$(python3 -c "print(f'{$cpu_sum * 1e6 / max($sum, 1):.1f}')")
  printf '%-12s %9s %10s %12s %22s %8s %8s\n' "$label" "$rate" "$redis_per" "$client" \
    "$per_shard" "$spread" "$p99"
  echo "$(date -u +%FT%TZ),$label,$n,$rate,$redis_per,$client,$spread,$p99,\"$per_shard\"" >>"$OUT"
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}

[ -s "$OUT" ] || echo "time,label,primaries,decisions_per_s,redis_cpu_us_per_decision,client_cpu_us_per_decision,spread_max_over_mean,p99_us,redis_cpu_us_per_decision_by_shard" >"$OUT"
echo "# redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(nproc) cores," \
  "$INFLIGHT in flight, ${SECONDS_PER_RUN}s per run, $ROUNDS rounds"
printf '%-12s %9s %10s %12s %22s %8s %8s\n' run "dec/s" "redis_us" "client_us" \
  "redis_us by shard" "max/mean" "p99_us"
for r in $(seq "$ROUNDS"); do
  run "1-primary" 1
  run "3-primaries" 3
done
