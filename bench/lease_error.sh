#!/usr/bin/env bash
# The error harness of issue 20 (leases): how far N limiter instances sharing one limit admit
# above its exact bound (E) and below what could have been admitted (U), per store mode, in one
# run on one redis-server (docs/PERFORMANCE.md, "Leases: error harness").
#
#   bench/lease_error.sh [--full | --faults | --shift] [BUILD_DIR]     (a build with bench/lease_error;
#                                                             redis-server)
#
# Modes, in every sweep: exact (plain redis:// URL: E must be 0, and the run fails if it is not),
# memory (each instance its own memory store), count-and-flush (the peers' design, written in the
# harness only: local limiter + INCRBY every 100 ms) and lease (the Redis URL with lease=true;
# skipped, with a message, while the store refuses the parameter).
#
# Default (about 3 minutes on 2 cores), each configuration 3-4 s (the minute one 12 s):
#   headline    N = 4, uniform split, Poisson arrivals, fixed window 10/s, x = 0.5, 1, 2, 10, 100
#   algorithms  the other four algorithms at 1000/s, x = 10
#   instances   N = 1 and 16 at 10/s, x = 10
#   minute      100/min run as 100/6s (said in the output), x = 10, two periods
# --full (about 50 minutes: 48 on 4 December 2026; 16 of them the minute limit over real minutes):
#   the headline for N = 1, 2, 4, 16; splits 80-20, hot, rotating; constant and square arrivals; all
#   five algorithms at 1000/s over every x; 100/min with its real minute; N = 64; the traffic
#   shifts and the faults.
# --faults: the faults alone (Redis paused 5 s and 30 s, killed and restarted empty, an instance
#   killed, an instance added), N = 4 at 1000/s, x = 10, with E, U and latency before, during and
#   after each; the instance killed and Redis restarted again at x = 1, where the window is still
#   filling at the fault (what a crash strands; what a restart forgets).
# --shift: traffic shifts alone: the rotating split (90 % of the load on one instance, moving on
#   every 2.25 s, so shifts fall at every phase of the window), N = 4 at 1000/s, x = 2 and 10,
#   20 s each: how many refreshes until the new hot instance is admitted 95 % of its share.
#
# Tables go to stdout; one CSV row per table row to $RESULTS_DIR/lease_error-<UTC time>.csv
# (RESULTS_DIR defaults to bench/results). With gnuplot installed, docs/img/lease_error.svg is
# drawn from the headline rows (bench/plot.sh). LEASE_PARAMS replaces lease mode's URL parameters
# (default lease=true).
set -euo pipefail
cd "$(dirname "$0")/.."
SWEEP=default
case "${1:-}" in
  --full) SWEEP=full; shift ;;
  --faults) SWEEP=faults; shift ;;
  --shift) SWEEP=shift; shift ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
BUILD_DIR=${1:-build}
TOOL="$BUILD_DIR/bench/lease_error"
if [ ! -x "$TOOL" ]; then
  echo "build $TOOL first (cmake --build $BUILD_DIR --target lease_error)"
  exit 1
fi
REDIS_SERVER=$(command -v redis-server || true)
[ -n "$REDIS_SERVER" ] || { echo "redis-server is needed (Debian: redis-server)"; exit 1; }

RESULTS_DIR=${RESULTS_DIR:-bench/results}
mkdir -p "$RESULTS_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CSV="$RESULTS_DIR/lease_error-$STAMP.csv"
MODES=exact,memory,count-and-flush,lease
STATUS=0

REDIS_VERSION=$("$REDIS_SERVER" --version | sed 's/.*v=\([^ ]*\).*/\1/')
# The analysis against its worked examples first: a wrong E would make the whole run meaningless.
"$TOOL" check-analysis || exit 1
echo "# lease_error $SWEEP: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
  "redis-server $REDIS_VERSION"
sweep() {  # NAME ARGS... : one run of the harness, its own redis-server, rows appended to $CSV
  local name=$1
  shift
  "$TOOL" run --sweep "$name" --stamp "$STAMP" --csv "$CSV" --redis-server "$REDIS_SERVER" \
    --modes "$MODES" --lease-params "${LEASE_PARAMS:-lease=true}" "$@" || STATUS=1
}

if [ "$SWEEP" = default ]; then
  sweep headline --instances 4 --loads 0.5,1,2,10,100 --limits 10/s --seconds 4
  sweep algorithms --instances 4 --loads 10 --limits 1000/s --seconds 3 \
    --algorithms sliding_window,sliding_log,token_bucket,gcra
  sweep instances --instances 1,16 --loads 10 --limits 10/s --seconds 3
  sweep minute --instances 4 --loads 10 --limits 100/min --minute-scale 10 --windows 2
elif [ "$SWEEP" = full ]; then
  sweep headline --instances 1,2,4,16 --loads 0.5,1,2,10,100 --limits 10/s --seconds 5
  sweep splits --instances 4 --splits 80-20,hot,rotating --loads 2,10 --limits 10/s --seconds 8
  sweep schedules --instances 4 --schedules constant,square --loads 1,10 --limits 10/s --seconds 5
  sweep algorithms --instances 4 --loads 0.5,1,2,10,100 --limits 1000/s --seconds 4 \
    --algorithms fixed_window,sliding_window,sliding_log,token_bucket,gcra
  sweep minute --instances 4 --loads 2,10 --limits 100/min --windows 2
  sweep n64 --instances 64 --loads 10 --limits 10/s --seconds 4
fi
if [ "$SWEEP" = full ] || [ "$SWEEP" = shift ]; then
  sweep shift --instances 4 --splits rotating --rotate-seconds 2.25 --loads 2,10 --limits 1000/s \
    --seconds 20
fi
if [ "$SWEEP" = full ] || [ "$SWEEP" = faults ]; then
  sweep faults --instances 4 --loads 10 --limits 1000/s \
    --faults pause:5,pause:30,restart,kill-instance,add-instance
  # At x = 10 the window is spent within 0.1 s, before the fault at its middle: nothing is left to
  # strand, and a restart finds every instance answering a remembered denial. At x = 1 it fills
  # over the whole window, so the killed instance dies holding a lease and the restart forgets a
  # window still in use.
  sweep faults-x1 --instances 4 --loads 1 --limits 1000/s --faults kill-instance,restart
fi

echo "# results: $CSV"
if [ "$SWEEP" = default ] || [ "$SWEEP" = full ]; then
  if command -v gnuplot >/dev/null; then
    FIGURES=lease_error bash bench/plot.sh "$CSV"
  else
    echo "# docs/img/lease_error.svg not drawn: gnuplot is missing" \
      "(then: FIGURES=lease_error bench/plot.sh $CSV)"
  fi
fi
if [ "$STATUS" != 0 ]; then
  echo "# FAILED: exact mode admitted more than its bound, or a configuration could not run" \
    "(see above)"
fi
exit "$STATUS"
