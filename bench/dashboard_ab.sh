#!/usr/bin/env bash
# The dashboard's hot-path cost: sluiced's CPU per decision with the dashboard on and off, same
# run, same load (rls_load over gRPC, memory store, KEYS distinct users so that the heavy-hitter
# tables churn), ROUNDS rounds in alternating order. Prints each round's figures, the medians and
# their ratio (on / off); the target is at most 1.02.
#
#   bench/dashboard_ab.sh [BUILD_DIR]   (a Release build with benchmarks)
#
# Environment: SECONDS_PER_RUN (default 8), ROUNDS (default 3), INFLIGHT (default 64), KEYS
# (default 10000), MODE (grpc or http, default grpc). Run it on a quiet machine: the figure is a
# ratio of two CPU times a few percent apart.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD_DIR=${1:-build}
SECS=${SECONDS_PER_RUN:-8}
SLUICED="$BUILD_DIR/src/server/sluiced"
LOAD="$BUILD_DIR/bench/rls_load"
for b in "$SLUICED" "$LOAD"; do [ -x "$b" ] || { echo "build $b first"; exit 1; }; done

WORK=$(mktemp -d)
SLUICED_PID=
cleanup() { [ -n "$SLUICED_PID" ] && kill "$SLUICED_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
CLK=$(getconf CLK_TCK)

# run ON_OR_OFF: one sluiced, one load run; appends "which cpu_us_per_decision decisions_per_s".
run() {
  local http grpc port s0 out rate
  http=$(free_port); grpc=$(free_port)
  "$SLUICED" --config bench/config --store memory --http "127.0.0.1:$http" --grpc "127.0.0.1:$grpc" \
    --dashboard="$1" --log-level warn --drain-ms 0 >"$WORK/sluiced.log" 2>&1 &
  SLUICED_PID=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$http/healthcheck" >/dev/null && break; sleep 0.1; done
  port=$grpc; [ "${MODE:-grpc}" = http ] && port=$http
  s0=$(ticks "$SLUICED_PID")
  out=$("$LOAD" --target "127.0.0.1:$port" --mode "${MODE:-grpc}" --inflight "${INFLIGHT:-64}" \
    --seconds "$SECS" --domain bench --key user --keys "${KEYS:-10000}")
  rate=$(echo "$out" | sed 's/.*"decisions_per_s":\([0-9.]*\).*/\1/')
  python3 -c "print('$1', ($(ticks "$SLUICED_PID") - $s0) * 1e6 / $CLK / max(1, $rate * $SECS), $rate)" \
    | tee -a "$WORK/rows.txt"
  kill "$SLUICED_PID"; wait "$SLUICED_PID" 2>/dev/null || true; SLUICED_PID=
}

for round in $(seq "${ROUNDS:-3}"); do
  if [ $((round % 2)) -eq 1 ]; then run false; run true; else run true; run false; fi
done
python3 - "$WORK/rows.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = lambda w, i: statistics.median(float(r[i]) for r in rows if r[0] == w)
off, on = med("false", 1), med("true", 1)
print(f"sluiced CPU us/decision (median): dashboard off {off:.2f}, on {on:.2f}; on / off = {on / off:.3f}")
print(f"decisions/s (median): off {med('false', 2):.0f}, on {med('true', 2):.0f}")
PY
