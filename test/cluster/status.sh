#!/usr/bin/env bash
# Shows the test cluster's state (npm run cluster:status): each component up or down with its pid,
# the network, the node, the pod sandboxes, Redis. Exits 0 when every daemon runs, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for lib in common network containerd registry control-plane logind agent metrics-server; do
  # shellcheck source=/dev/null
  source "$here/lib/$lib.sh"
done

all_up=1
component() {
  local name=$1 marker=$2 required=$3 pid
  if pid=$(daemon_pid "$name" "$marker"); then
    printf '%-24s up (pid %s)\n' "$name" "$pid"
  else
    printf '%-24s down\n' "$name"
    ((required)) && all_up=0
  fi
}

redis_line() {
  local pid how=harness
  if pid=$(daemon_pid redis "$REDIS_MARKER"); then
    how="pid $pid"
  else
    how="not started by the harness"
  fi
  if redis_ping; then
    printf '%-24s up (%s, PING ok on 127.0.0.1:%s)\n' redis "$how" "$REDIS_PORT"
  else
    printf '%-24s down\n' redis
    all_up=0
  fi
}

main() {
  if [[ ! -d $CLUSTER_DIR ]]; then
    echo "no test cluster ($CLUSTER_DIR does not exist): npm run cluster:up"
    exit 1
  fi
  network_status
  component containerd "$CONTAINERD_CONFIG" 1
  component registry "$REGISTRY_CONFIG" 1
  component etcd "$CLUSTER_DIR/etcd" 1
  component kube-apiserver "$PKI_DIR/apiserver.crt" 1
  component kube-controller-manager "$CLUSTER_DIR/kubeconfig-controller-manager" 1
  component kube-scheduler "$CLUSTER_DIR/kubeconfig-scheduler" 1
  component nodelet "$AGENT_ROOT" 0
  component metrics-server "$METRICS_SERVER_MARKER" 1
  redis_line
  echo
  echo "== kubectl get nodes -o wide"
  kubectl_admin get nodes -o wide 2>&1 || all_up=0
  echo
  echo "== crictl pods"
  crictl_cmd pods 2>&1 || all_up=0
  echo
  echo "== crictl images"
  crictl_cmd images 2>&1 || all_up=0
  echo
  echo "source $CLUSTER_DIR/env to use it"
  ((all_up)) || exit 1
}

main
