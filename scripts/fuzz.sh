#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan) and runs each for a bounded time.
# `make fuzz` calls this; docs/fuzzing.md describes the targets and how to work with findings.
#
# Environment (all optional):
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   which targets, space separated (default: all of them)
#   BUILD_DIR      build directory (default build-fuzz)
#   JOBS           parallel build jobs (default 2)
#
# Each target starts from its checked-in corpus (fuzz/corpus/<name>, read only) and keeps what it
# discovers in $BUILD_DIR/fuzz/work/<name>, so later runs continue from there. A crash, leak or
# property violation leaves the input in $BUILD_DIR/fuzz/artifacts/<name>/ and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_TARGETS=${FUZZ_TARGETS:-"config resp_reader store_url redis_keys rls_json grpc_h2"}
BUILD_DIR=${BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-2}

if ! command -v clang++-14 >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: needs clang-14 and libFuzzer: apt-get install clang-14 libclang-rt-14-dev" >&2
  exit 1
fi

CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSLUICE_FUZZ=ON -DSLUICE_BUILD_TESTS=OFF -DSLUICE_BUILD_BENCHMARKS=OFF >/dev/null
targets=()
for name in $FUZZ_TARGETS; do targets+=("${name}_fuzzer"); done
cmake --build "$BUILD_DIR" -j"$JOBS" --target "${targets[@]}" -- --no-print-directory

failed=()
for name in $FUZZ_TARGETS; do
  work="$BUILD_DIR/fuzz/work/$name"
  artifacts="$BUILD_DIR/fuzz/artifacts/$name"
  log="$BUILD_DIR/fuzz/$name.log"
  mkdir -p "$work" "$artifacts"
  # -timeout: an input that runs 30 s is a finding (a hang), not something to wait out.
  flags=(-max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=2048
         -artifact_prefix="$artifacts/" -print_final_stats=1)
  if [ -f "fuzz/dict/$name.dict" ]; then flags+=(-dict="fuzz/dict/$name.dict"); fi
  echo "fuzz: $name for ${FUZZ_SECONDS}s (log: $log)"
  # The outer timeout is a backstop: after an out-of-memory the sanitizer's heap profile of a huge
  # heap can take minutes; the log still names the finding.
  if timeout --signal=KILL $((FUZZ_SECONDS + 300)) "$BUILD_DIR/fuzz/${name}_fuzzer" "${flags[@]}" \
      "$work" "fuzz/corpus/$name" >"$log" 2>&1; then
    grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$log" | sed 's/^/  /'
  else
    failed+=("$name")
    echo "fuzz: $name FAILED; the input is in $artifacts/" >&2
    grep -A12 -E 'property violated|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|timeout' \
      "$log" | head -40 >&2 || true
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all targets ran ${FUZZ_SECONDS}s without a finding"
