#!/usr/bin/env bash
# npm run bench: the pod-startup benchmark against the running test cluster (npm run cluster:up):
# nodelet's node, the kubelet's node and raw CRI side by side. Brings the kubelet node up first
# (test/cluster/kubelet-up.sh) and removes it again at the end, whatever happens (kubelet-down.sh),
# so no later test sees a second node. Arguments go to bench/pod-startup.ts, e.g.
# `npm run bench -- --sizes 10 --rounds 1 --steady-s 20 --no-doc`; with --no-kubelet the kubelet
# node is left alone (neither brought up nor down).
# BENCH=probe-cpu (npm run bench:probes) runs bench/probe-cpu.ts instead, and so on; BENCH=cpu-split
# (npm run bench:cpu) needs the kubelet node too.
set -euo pipefail
cd "$(dirname "$0")/.."
# The cluster dir as the harness finds it (NODELET_CLUSTER_DIR, else the repo's .cluster).
cluster_env=${NODELET_CLUSTER_DIR:-.cluster}/env
if [[ ! -f $cluster_env ]]; then
  echo "the test cluster is not up: npm run cluster:up" >&2
  exit 1
fi
source "$cluster_env"
bench=${BENCH:-pod-startup}
with_kubelet=0
if [[ $bench == pod-startup || $bench == cpu-split ]]; then
  with_kubelet=1
  for arg in "$@"; do [[ $arg == --no-kubelet ]] && with_kubelet=0; done
fi
if ((with_kubelet == 0)); then exec node --import tsx "bench/$bench.ts" "$@"; fi

trap 'bash test/cluster/kubelet-down.sh' EXIT
bash test/cluster/kubelet-up.sh
source "$CLUSTER_DIR/kubelet/env"
node --import tsx "bench/$bench.ts" "$@"
