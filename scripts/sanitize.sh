#!/usr/bin/env bash
# Runs the concurrency-sensitive tests under ThreadSanitizer (mode tsan) and the parsers, fuzz
# corpora and stores under AddressSanitizer + UndefinedBehaviorSanitizer (mode asan), each in its
# own build directory. Only the listed test targets are built, so a run stays within minutes.
#
#   bash scripts/sanitize.sh tsan|asan|all
#
# A target in a list that the tree does not define (yet) is skipped with a message, so the lists
# can name tests before they exist. Exits non-zero when a build or a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}

# Threads meet here: stores and their completions on I/O threads, the Redis client and its
# topologies, the failure policy, the service with an asynchronous store, the middleware, the HTTP
# server, the nghttp2 gRPC engine and the fair scheduler of both engines. Not the gRPC C++
# server: Debian's gRPC is not built for TSan, and its own threads report races.
TSAN_TESTS=(
  memory_store_concurrency_test memory_store_check_all_test failure_policy_store_test
  redis_client_test redis_client_fault_test redis_pipeline_test redis_client_handshake_test
  script_runner_test redis_store_test redis_store_fault_test cluster_client_test
  sentinel_client_test rate_limit_service_test rate_limit_service_async_test
  rate_limit_service_redis_test http_api_test metrics_test config_reloader_test
  health_test http_server_test
  middleware_test middleware_failure_test middleware_guard_test beast_test beast_server_test
  grpc_h2_server_test fair_scheduler_test per_second_store_test lease_store_test over_limit_store_test
  redis_lease_test redis_lease_store_test lease_maintenance_test redis_lease_maintenance_test
  redis_lease_fault_test redis_lease_cluster_test redis_lease_sentinel_test
  redis_lease_cluster_fault_test refund_store_test
)
# Untrusted bytes are parsed here: URLs, RESP, config, /json, keys, client addresses; and the
# replayed fuzz corpora.
ASAN_TESTS=(
  store_url_test redis_reply_reader_test redis_error_test redis_keys_test key_test
  cluster_topology_test redis_connection_hostile_test cross_slot_test
  parse_test load_test match_test wildcard_test rls_json_test client_ip_test
  route_template_test route_bypass_test rate_limit_headers_test middleware_config_test settings_test
  store_test
  json_log_format_test grpc_framing_test xds_config_convert_test
  memory_store_test memory_store_overflow_test slot_table_test lease_test lease_property_test
  lease_store_test lease_maintenance_test lease_sizing_test credit_test over_limit_cache_test
  config_corpus_test resp_reader_corpus_test store_url_corpus_test redis_keys_corpus_test
  rls_json_corpus_test rls_json_codec_corpus_test grpc_h2_corpus_test
)

run_mode() {
  local mode=$1 dir flags
  local -a wanted
  if [ "$mode" = tsan ]; then
    dir=build-tsan
    # -O1: TSan at -O0 is slow enough to trip the tests' real deadlines; -O2 compiles slower.
    # -g1: line tables are all a report's stack needs, and full debug info of Asio and gRPC
    # templates is much of the compile and link time.
    flags=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1" -DSLUICE_TSAN=ON)
    wanted=("${TSAN_TESTS[@]}")
  else
    dir=build-asan
    # Unoptimized, assertions on (no NDEBUG), and line tables only (-g1), as for TSan.
    flags=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O0 -g1" -DSLUICE_SANITIZE=ON)
    wanted=("${ASAN_TESTS[@]}")
  fi
  local -a launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B "$dir" "${flags[@]}" "${launcher[@]}" -DSLUICE_BUILD_BENCHMARKS=OFF >/dev/null
  local known
  known=$(cmake --build "$dir" --target help | awk '{print $2}')
  local -a targets=()
  for t in "${wanted[@]}"; do
    if grep -qx "$t" <<<"$known"; then
      targets+=("$t")
    else
      echo "sanitize ($mode): no target $t in this tree, skipped"
    fi
  done
  echo "sanitize ($mode): building ${#targets[@]} tests in $dir"
  cmake --build "$dir" -j"$JOBS" --target "${targets[@]}" -- --no-print-directory >/dev/null
  local regex
  regex="^($(IFS='|'; echo "${targets[*]}"))\$"
  # halt_on_error: a report fails the test; second_deadlock_stack for readable lock reports.
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
    ctest --test-dir "$dir" -R "$regex" --output-on-failure -j"$JOBS"
}

case "${1:-all}" in
  tsan) run_mode tsan ;;
  asan) run_mode asan ;;
  all) run_mode asan && run_mode tsan ;;
  *) echo "usage: $0 tsan|asan|all" >&2; exit 2 ;;
esac
