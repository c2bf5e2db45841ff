#!/usr/bin/env bash
# Tears the test cluster down (npm run cluster:down). Idempotent and safe after a crash: every step
# tolerates its object being gone already.
#
#   down.sh [--keep-state]   --keep-state: stop everything and remove the network, but keep
#                            .cluster/ (etcd data, credentials, containerd's image store)
#
# Order matters: the agent first (so it does not recreate pods), then every pod sandbox through
# CRI (so CNI releases addresses and veths), then the daemons, then what the kernel still holds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for lib in common network containerd registry control-plane logind agent metrics-server kubelet; do
  # shellcheck source=/dev/null
  source "$here/lib/$lib.sh"
done

keep_state=0
for arg in "$@"; do
  case $arg in
    --keep-state) keep_state=1 ;;
    *) echo "usage: down.sh [--keep-state]" >&2; exit 2 ;;
  esac
done

# The agent's pod cgroups (default --cgroup-root: /kubepods with its QoS cgroups), and those of the
# chart's agent in the self-hosted suite (its agent.cgroupRoot, /nodelet), once every container is
# gone: only empty cgroups go (rmdir refuses anything holding processes or children left), deepest
# first, in every v1 hierarchy; nothing outside those roots is touched.
remove_kubepods_cgroups() {
  local hierarchy root dir
  for hierarchy in /sys/fs/cgroup/*/; do
    for root in kubepods nodelet; do
      [[ -d $hierarchy$root ]] || continue
      while read -r dir; do
        rmdir "$dir" 2>/dev/null || warn "cgroup $dir is not empty: left in place"
      done < <(find "$hierarchy$root" -depth -type d)
    done
  done
  return 0
}

main() {
  [[ $(id -u) == 0 ]] || die "tearing the test cluster down needs root"
  # The benchmark's kubelet node (kubelet-up.sh), while the API server still answers.
  if [[ -d $KUBELET_DIR ]] || daemon_pid kubelet "$KUBELET_CONFIG" >/dev/null; then bash "$here/kubelet-down.sh"; fi
  agent_stop
  logind_stop
  metrics_server_stop
  containerd_stop
  remove_kubepods_cgroups
  registry_stop
  control_plane_stop
  network_down
  # CNI's result cache for our network (libcni keeps it under /var/lib/cni whatever the config).
  rm -f /var/lib/cni/results/"$CNI_NETWORK"-* 2>/dev/null || true
  if ((keep_state)); then
    log "state kept in $CLUSTER_DIR"
  else
    unmount_containerd_leftovers
    [[ $CLUSTER_DIR == /*/* && $CLUSTER_DIR != "$HOME" ]] || die "refusing to delete $CLUSTER_DIR"
    if findmnt -rn -o TARGET | grep -qF "$CLUSTER_DIR/"; then
      die "something is still mounted under $CLUSTER_DIR: not deleting it (see findmnt)"
    fi
    rm -rf "$CLUSTER_DIR"
    if [[ $CONTAINERD_STATE == /run/nodelet-cluster/* ]]; then rm -rf "$(dirname "$CONTAINERD_STATE")"; fi
    log "removed $CLUSTER_DIR (caches under $CACHE_DIR are kept)"
  fi
  log "test cluster is down"
}

main
