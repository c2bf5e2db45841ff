#!/usr/bin/env bash
# npm run bench: the pod-startup benchmark against the running test cluster (npm run cluster:up).
# Arguments go to bench/pod-startup.ts, e.g. `npm run bench -- --sizes 10 --no-doc`.
# BENCH=probe-cpu (npm run bench:probes) runs bench/probe-cpu.ts instead.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f .cluster/env ]]; then
  echo "the test cluster is not up: npm run cluster:up" >&2
  exit 1
fi
source .cluster/env
exec node --import tsx "bench/${BENCH:-pod-startup}.ts" "$@"
