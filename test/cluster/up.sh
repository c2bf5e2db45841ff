#!/usr/bin/env bash
# Brings up the single-node test cluster on this machine (npm run cluster:up). Idempotent and safe
# after a crash: what runs already is kept, what is missing is (re)started. A run that fails (or
# is interrupted) stops again every process it started, and only those: daemons that ran before
# it, and a Redis the harness did not start, are left running.
#
#   up.sh [--no-agent]     --no-agent: everything but the node agent (nodelet)
#
# See README.md beside this file for what runs where.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for lib in common install network pki containerd registry control-plane crds logind agent metrics-server env; do
  # shellcheck source=/dev/null
  source "$here/lib/$lib.sh"
done

usage() { echo "usage: up.sh [--no-agent]" >&2; exit 2; }

with_agent=1
for arg in "$@"; do
  case $arg in
    --no-agent) with_agent=0 ;;
    -h | --help) usage ;;
    *) usage ;;
  esac
done

summary() {
  local agent=$1
  cat <<TXT

Test cluster is up ($((SECONDS))s).
  API server   https://127.0.0.1:$APISERVER_PORT and https://$NODE_IP:$APISERVER_PORT (kubeconfig $CLUSTER_DIR/kubeconfig)
  etcd         http://127.0.0.1:$ETCD_CLIENT_PORT
  containerd   unix://$CONTAINERD_SOCK (namespace k8s.io; pulls go to a closed loopback port)
  registry     http://$REGISTRY_ADDR (basic auth: $REGISTRY_DIR/credentials; pulls of $REGISTRY_ADDR/... go here)
  pods         $POD_CIDR on $BRIDGE (gateway $POD_GATEWAY); services $SERVICE_CIDR (blackholed)
  redis        redis://127.0.0.1:$REDIS_PORT
  node         $NODE_NAME ($NODE_IP): $agent
  metrics      https://$NODE_IP:$METRICS_SERVER_PORT (metrics-server; the API v1beta1.metrics.k8s.io: kubectl top)
  logs, pids   $LOG_DIR, $PID_DIR

  source $CLUSTER_DIR/env     # then kubectl, crictl, ctr and the tests use this cluster
TXT
}

# Shims of our containerd that ran before this run (kept by the teardown of a failed run).
shims_before=()

# After a failed run: stops the daemons this run started (start_daemon recorded them), newest
# first so the agent goes before the runtime it drives. If this run started the agent or
# containerd, the shims (and their containers) that appeared during the run are theirs: killed
# too. Pods of an agent and a containerd that ran before are left alone. The network, files and
# logs stay for cluster:down and for debugging.
stop_what_this_run_started() {
  local i name shims_are_ours=0
  for ((i = ${#STARTED_NAMES[@]} - 1; i >= 0; i--)); do
    name=${STARTED_NAMES[i]}
    [[ $name == nodelet || $name == containerd ]] && shims_are_ours=1
    stop_daemon "$name" "${STARTED_MARKERS[i]}" 10
  done
  if ((shims_are_ours)); then kill_leftover_shims "${shims_before[@]}"; fi
}

on_exit() {
  local status=$1
  trap - EXIT INT TERM HUP
  if ((status != 0)); then
    set +e
    if ((${#STARTED_NAMES[@]})); then
      warn "cluster:up failed: stopping what this run started (${STARTED_NAMES[*]}); what ran before is kept"
    fi
    stop_what_this_run_started
  fi
  exit "$status"
}

main() {
  [[ $(id -u) == 0 ]] || die "the test cluster needs root (network, containerd)"
  mkdir -p "$CLUSTER_DIR" "$PID_DIR" "$LOG_DIR"
  mapfile -t shims_before < <(harness_shim_pids)
  trap 'on_exit $?' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  install_all
  network_up
  make_pki
  write_kubeconfigs
  write_env
  containerd_start
  containerd_import_images
  containerd_check_pull_sink
  registry_start
  etcd_start
  apiserver_start
  controller_manager_start
  scheduler_start
  crds_apply
  redis_start
  logind_start
  local agent="no agent (--no-agent)"
  if ((!with_agent)) && daemon_pid nodelet "$AGENT_ROOT" >/dev/null; then
    agent="nodelet still running from an earlier cluster:up (cluster:down or kill its pid to stop it)"
    warn "$agent"
  elif ((with_agent)); then
    if agent_start; then
      agent_wait_ready
      agent="nodelet (log $LOG_DIR/nodelet.log)"
    else
      agent="no agent (cmd/nodelet.ts missing)"
    fi
  fi
  # After the agent: it scrapes the node server (the agent's readiness is the node's Ready).
  metrics_server_start
  summary "$agent"
}

main
