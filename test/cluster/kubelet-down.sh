#!/usr/bin/env bash
# Removes the kubelet node kubelet-up.sh made, and everything it made: its pods (API and runtime),
# the kubelet and its containerd (shims included), their mounts and cgroups, its bridge, address
# and firewall rule, the host directories it created, its Node and Lease objects, its directory;
# restores the host sysctls the kubelet rewrote (npm run kubelet:down; cluster:down calls it).
# Idempotent and safe after a crash: every step tolerates its object being gone already.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for lib in common network containerd kubelet; do
  # shellcheck source=/dev/null
  source "$here/lib/$lib.sh"
done

api_up() { [[ -f $CLUSTER_DIR/kubeconfig ]] && kubectl_admin get --raw /readyz >/dev/null 2>&1; }

# Pod objects bound to the node: gone at once (the kubelet and its runtime go next anyway).
delete_api_objects() {
  api_up || { warn "the API server does not answer: Node $KUBELET_NODE_NAME and its pods left in the API"; return 0; }
  kubectl_admin delete pods -A --field-selector "spec.nodeName=$KUBELET_NODE_NAME" \
    --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
}

delete_node_objects() {
  api_up || return 0
  kubectl_admin delete node "$KUBELET_NODE_NAME" --ignore-not-found >/dev/null || true
  kubectl_admin -n kube-node-lease delete lease "$KUBELET_NODE_NAME" --ignore-not-found >/dev/null || true
}

containerd_down() {
  # Every sandbox through CRI (CNI releases addresses and veths), then any task left.
  containerd_remove_workloads kubelet-containerd
  stop_daemon kubelet-containerd "$CONTAINERD_CONFIG" 20
  kill_leftover_shims
  remove_leftover_cgroups
}

# Its cgroup root in every hierarchy, once empty, deepest first (rmdir refuses a busy one).
remove_cgroup_root() {
  local hierarchy dir
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -d $hierarchy${KUBELET_CGROUP_ROOT#/} ]] || continue
    while read -r dir; do
      rmdir "$dir" 2>/dev/null || warn "cgroup $dir is not empty: left in place"
    done < <(find "$hierarchy${KUBELET_CGROUP_ROOT#/}" -depth -type d)
  done
  return 0
}

# Everything mounted under its dirs (its root dir is a bind mount of itself, pod volumes, sandbox
# network namespaces and shm under the containerd state), deepest first.
unmount_all_under() {
  local dir target
  for dir in "$@"; do
    findmnt -rn -o TARGET | awk -v d="$dir/" 'index($0 "/", d) == 1' | sort -r | while read -r target; do
      umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || warn "could not unmount $target"
    done
  done
}

kubelet_network_down() {
  local ipt rule
  bridge_down "$KUBELET_BRIDGE"
  if ip link show "$KUBELET_HOST_IF" >/dev/null 2>&1; then ip link del "$KUBELET_HOST_IF"; fi
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    { "$ipt" -S 2>/dev/null | grep -F -- "--comment $KUBELET_FW_COMMENT" || true; } | while read -r rule; do
      # shellcheck disable=SC2086
      "$ipt" ${rule/-A /-D } || true
    done
  done
  rm -f /var/lib/cni/results/"$KUBELET_CNI_NETWORK"-* 2>/dev/null || true
}

restore_sysctls() {
  local line
  [[ -f $KUBELET_SAVED_SYSCTLS ]] || return 0
  while read -r line; do
    if [[ -n $line ]]; then sysctl -q -w "$line" >/dev/null || warn "could not restore $line"; fi
  done <"$KUBELET_SAVED_SYSCTLS"
  log "restored host sysctls: $(tr '\n' ' ' <"$KUBELET_SAVED_SYSCTLS")"
}

# The host directories that did not exist before its first start; and in /var/log/containers
# only the links into its pod logs dir, whatever else is there: nodelet links its own containers'
# logs there too (--container-log-link-dir), so that directory goes only once it is empty.
remove_host_dirs() {
  local dir link
  if [[ -d /var/log/containers ]]; then
    for link in /var/log/containers/*; do
      if [[ -L $link && $(readlink "$link") == "$KUBELET_POD_LOGS"/* ]]; then rm -f "$link"; fi
    done
  fi
  [[ -f $KUBELET_CREATED_HOST_DIRS ]] || return 0
  while read -r dir; do
    [[ -n $dir && -e $dir ]] || continue
    if [[ $dir == /var/log/containers ]]; then
      rmdir "$dir" 2>/dev/null || log "kept $dir: it still holds links of nodelet's (or others')"
      continue
    fi
    unmount_all_under "$dir"
    rm -rf "$dir"
  done <"$KUBELET_CREATED_HOST_DIRS"
}

main() {
  [[ $(id -u) == 0 ]] || die "removing the kubelet node needs root"
  delete_api_objects
  stop_daemon kubelet "$KUBELET_CONFIG" 30
  with_kubelet_containerd containerd_down
  remove_cgroup_root
  unmount_all_under "$KUBELET_DIR" "$KUBELET_CONTAINERD_STATE"
  kubelet_network_down
  restore_sysctls
  remove_host_dirs
  delete_node_objects
  if findmnt -rn -o TARGET | grep -qF "$KUBELET_DIR/"; then
    die "something is still mounted under $KUBELET_DIR: not deleting it (see findmnt)"
  fi
  rm -rf "$KUBELET_DIR"
  if [[ $KUBELET_CONTAINERD_STATE == /run/nodelet-kubelet/* ]]; then rm -rf "$(dirname "$KUBELET_CONTAINERD_STATE")"; fi
  log "the kubelet node $KUBELET_NODE_NAME is gone"
}

main
