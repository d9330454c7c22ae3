#!/usr/bin/env bash
# Starts sluiced on the embedded memory store with the example config (what `make run` does).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
HTTP=${SLUICE_HTTP:-127.0.0.1:8080}
GRPC=${SLUICE_GRPC:-127.0.0.1:8081}
cat <<MSG
sluiced: memory store, config examples/config/, HTTP on $HTTP, gRPC on $GRPC. Ctrl-C stops it.
From another terminal:
  curl -s -X POST http://$HTTP/json \\
    -d '{"domain":"sluice-demo","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.0.1"}]}]}'
  curl -s http://$HTTP/healthcheck
  curl -s http://$HTTP/metrics
The live dashboard: http://$HTTP/dashboard (Envoy's rate limit quota service is on $GRPC too).
MSG
exec "$BUILD_DIR/src/server/sluiced" --config examples/config --store memory \
  --http "$HTTP" --grpc "$GRPC"
