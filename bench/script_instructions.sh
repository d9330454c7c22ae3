#!/usr/bin/env bash
# Instructions per call of each of sluice's check scripts and of the references, counted by
# callgrind inside redis-server: a measure of Redis's CPU per call that the machine's load does
# not move (bench/script_cost.sh measures the time, usec_per_call).
#
#   bench/script_instructions.sh [BUILD_DIR]   (needs valgrind, redis-server, redis-benchmark and
#                                               bench/script_load; about 10 minutes)
#
# For each script, a fresh redis-server runs under `valgrind --tool=callgrind`, gets CALLS calls
# (default 10000) on 500 random keys from 10 connections x 16 pipelined, every call admitted, and
# the inclusive instruction count of the command (fcallCommand / evalShaCommand / incrCommand) is
# divided by the calls the server counted. Prints one line per script.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
CALLS=${CALLS:-10000}
PEER_BENCH=${PEER_BENCH:-../shared/peer-bench}
LOAD="$BUILD_DIR/bench/script_load"
[ -x "$LOAD" ] || { echo "build $LOAD first"; exit 1; }
command -v valgrind >/dev/null || { echo "needs valgrind"; exit 1; }

# count NAME SETUP-KIND ARGS...: one script under callgrind.
count() {
  local name=$1 kind=$2; shift 2
  local port work pid stat function
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  work=$(mktemp -d)
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" redis-server --port "$port" \
    --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 300); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  local bench=(redis-benchmark -p "$port" -c 10 -P 16 -n "$CALLS" -r 500 -q)
  case $kind in
    evalsha-text)  # a minimal script: its text, then its arguments
      local sha
      sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$1")"); shift
      "${bench[@]}" EVALSHA "$sha" "$@" >/dev/null
      stat=evalsha; function=evalShaCommand ;;
    fcall-floor)   # a function of bench/script_floor.lua
      redis-cli -p "$port" FUNCTION LOAD "$(cat bench/script_floor.lua)" >/dev/null
      "${bench[@]}" FCALL "$@" >/dev/null
      stat=fcall; function=fcallCommand ;;
    incr)
      "${bench[@]}" INCR 'k:__rand_int__' >/dev/null
      stat=incr; function=incrCommand ;;
    fcall | evalsha)  # sluice's: the algorithm
      "$LOAD" --port "$port" --call "$kind" --algorithm "$1" --requests "$CALLS" --keys 500 \
        --connections 10 --pipeline 16 >/dev/null
      stat=$kind
      if [ "$kind" = fcall ]; then function=fcallCommand; else function=evalShaCommand; fi ;;
  esac
  local calls
  calls=$(redis-cli -p "$port" INFO commandstats | tr -d '\r' |
    sed -n "s/^cmdstat_$stat:calls=\([0-9]*\),.*/\1/p")
  redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  wait "$pid" 2>/dev/null || true
  callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null |
    awk -v f="$function" -v calls="$calls" -v name="$name" '
      $0 ~ ":" f " " && !done { gsub(",", "", $1); printf "%-28s %9.0f instructions/call\n", name, $1 / calls; done = 1 }'
  rm -rf "$work"
}

echo "# redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') under callgrind; $CALLS calls on 500 keys each"
count "INCR" incr
count "minimal fixed_window" evalsha-text "$PEER_BENCH/fixed_window.lua" 1 'rl:fw:__rand_int__' 10000000 60000
count "minimal gcra" evalsha-text "$PEER_BENCH/gcra.lua" 1 'rl:g:__rand_int__' 10000000 10000000 60000 1
count "minimal sliding_log" evalsha-text "$PEER_BENCH/sliding_log.lua" 1 'rl:s:__rand_int__' 100000 60000 n
count "minimal fixed_window fcall" fcall-floor minimal_fixed_window 1 'rl:fw:__rand_int__' 10000000 60000
count "floor fixed_window fcall" fcall-floor floor_fixed_window 1 'rl:fw:__rand_int__'
for algorithm in fixed_window sliding_window sliding_log token_bucket gcra; do
  count "$algorithm fcall" fcall "$algorithm"
  count "$algorithm evalsha" evalsha "$algorithm"
done
