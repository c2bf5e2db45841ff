#!/usr/bin/env bash
# npm run bench: the pod-startup benchmark against the running test cluster (npm run cluster:up):
# nodelet's node, the kubelet's node and raw CRI side by side. Brings the kubelet node up first
# (test/cluster/kubelet-up.sh) and removes it again at the end, whatever happens (kubelet-down.sh),
# so no later test sees a second node. Arguments go to bench/pod-startup.ts, e.g.
# `npm run bench -- --sizes 10 --rounds 1 --steady-s 20 --no-doc`; with --no-kubelet the kubelet
# node is left alone (neither brought up nor down).
# BENCH=probe-cpu (npm run bench:probes) runs bench/probe-cpu.ts instead, and so on; BENCH=cpu-split
# (npm run bench:cpu) and BENCH=cri-calls (npm run bench:cri-calls) need the kubelet node too.
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
if [[ $bench == pod-startup || $bench == cpu-split || $bench == cri-calls ]]; then
  with_kubelet=1
  for arg in "$@"; do [[ $arg == --no-kubelet ]] && with_kubelet=0; done
fi
if ((with_kubelet == 0)); then exec node --import tsx "bench/$bench.ts" "$@"; fi

# Both nodes treat the pods' DNS alike for the run. The kubelet node has a clusterDNS (a blackholed
# address, test/cluster/lib/kubelet.sh); without one, an agent records a MissingClusterDNS event
# for every pod it starts, one more API write per pod. nodelet's node gets the same clusterDNS
# live through its NodeAgent, and its own setting back at the end.
saved_cluster_dns=
set_nodelet_cluster_dns() {
  kubectl patch nodeagent "$NODE_NAME" --type merge -p "{\"spec\":{\"clusterDNS\":$1}}" >/dev/null
  local generation
  generation=$(kubectl get nodeagent "$NODE_NAME" -o jsonpath='{.metadata.generation}')
  kubectl wait "nodeagent/$NODE_NAME" --for="jsonpath={.status.observedGeneration}=$generation" --timeout=60s >/dev/null
}
on_exit() {
  if [[ -n $saved_cluster_dns ]]; then set_nodelet_cluster_dns "$saved_cluster_dns" || true; fi
  bash test/cluster/kubelet-down.sh
}

trap on_exit EXIT
bash test/cluster/kubelet-up.sh
source "$CLUSTER_DIR/kubelet/env"
saved_cluster_dns=$(kubectl get nodeagent "$NODE_NAME" -o jsonpath='{.spec.clusterDNS}')
saved_cluster_dns=${saved_cluster_dns:-null}
set_nodelet_cluster_dns "[\"$KUBELET_CLUSTER_DNS\"]"
node --import tsx "bench/$bench.ts" "$@"
