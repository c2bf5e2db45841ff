# shellcheck shell=bash
# The harness's own containerd: containerd 2 and runc built from their Go modules (in BIN_DIR, by
# install.sh's install_runtime: the binaries of nodelet's image) with a config of ours, its root,
# state and socket under the cluster dir. Never the system instance (/run/containerd/containerd.sock).
#
# Every image pull, whatever registry an image names, is sent to a closed loopback port, so pulls
# fail at once and nothing leaves the machine; the test images are imported locally instead.

PULL_SINK=http://127.0.0.1:5999

write_containerd_config() {
  local certs=$CONTAINERD_DIR/certs.d
  mkdir -p "$CONTAINERD_DIR" "$CONTAINERD_ROOT" "$CONTAINERD_STATE" "$certs/_default"
  # _default applies to every registry host without a directory of its own; there is none.
  cat >"$certs/_default/hosts.toml" <<TOML
# Written by test/cluster: every registry resolves to a closed loopback port, so pulls fail fast.
server = "$PULL_SINK"

[host."$PULL_SINK"]
  capabilities = ["pull", "resolve"]
TOML
  cat >"$CONTAINERD_CONFIG" <<TOML
# Written by test/cluster/lib/containerd.sh; rewritten on every cluster:up. containerd 2 (version 4:
# each server is a plugin; the CRI's image and runtime halves are plugins of their own), as the
# chart's runtime config (charts/nodelet/templates/runtime-configmap.yaml).
version = 4
root = "$CONTAINERD_ROOT"
state = "$CONTAINERD_STATE"
# Plugins this harness does not use, or that would reach for paths outside the cluster dir.
disabled_plugins = [
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
  "io.containerd.internal.v1.opt",
  "io.containerd.nri.v1.nri",
]

[debug]
  level = "info"

# No debug or metrics listener (their default address is empty).
[plugins."io.containerd.server.v1.grpc"]
  address = "$CONTAINERD_SOCK"

[plugins."io.containerd.server.v1.ttrpc"]
  address = "$CONTAINERD_SOCK.ttrpc"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"

  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "registry.k8s.io/pause:3.10"

  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$certs"

[plugins."io.containerd.cri.v1.runtime"]
  # This VM denies CAP_SYS_RESOURCE: without this every sandbox fails on oom_score_adj.
  restrict_oom_score_adj = true
  enable_selinux = false
  # Pod network namespaces under our state dir, not /var/run/netns.
  netns_mounts_under_state_dir = true
  max_container_log_line_size = 16384

  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"

    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        # cgroups here are v1, driven directly (cgroupfs), not through systemd.
        SystemdCgroup = false
        Root = "$CONTAINERD_STATE/runc"
        # The runc built with containerd (install_runtime), never a runc of the host's.
        BinaryName = "$BIN_DIR/runc"

    # A second handler for RuntimeClass tests: upstream's node e2e containerd config names runc
    # "test-handler" too (the PodOverhead and RuntimeClass tests of e2e_node ask for it).
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.test-handler]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.test-handler.options]
        SystemdCgroup = false
        Root = "$CONTAINERD_STATE/runc"
        BinaryName = "$BIN_DIR/runc"

  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$CNI_CONF_DIR"
    max_conf_num = 1

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_tcp_service = true
TOML
}

containerd_start() {
  write_containerd_config
  start_daemon containerd "$CONTAINERD_CONFIG" "$BIN_DIR/containerd" --config "$CONTAINERD_CONFIG"
  wait_daemon containerd "$CONTAINERD_CONFIG" 60 "containerd to answer on $CONTAINERD_SOCK" crictl_cmd info
  wait_daemon containerd "$CONTAINERD_CONFIG" 30 "CRI to report RuntimeReady and NetworkReady" containerd_ready
}

# True once CRI reports both RuntimeReady and NetworkReady (the latter needs our CNI config). Only
# those two, as the kubelet reads them: containerd 2 adds others (on this cgroup v1 host
# ContainerdHasNoDeprecationWarnings is false for good).
containerd_ready() {
  crictl_cmd info 2>/dev/null |
    jq -e '[.status.conditions[] | select((.type == "RuntimeReady" or .type == "NetworkReady") and .status == true)] | length == 2' >/dev/null
}

# Imports the test images unless containerd already has every name at the built digest. Optional
# argument: the image builder to take them from (default test/images/build.sh; npm run conformance
# passes test/images/build-e2e-images.sh), which prints "<name> <tar> <manifest digest>" lines.
containerd_import_images() {
  local builder=${1:-$REPO_DIR/test/images/build.sh} name tar digest ref missing
  while read -r name tar digest; do
    missing=0
    for ref in $(jq -r '.manifests[].annotations["io.containerd.image.name"]' "$(dirname "$tar")/layout/index.json"); do
      if ! ctr_cmd images ls -q "name==$ref" 2>/dev/null | grep -qx "$ref" ||
        [[ $(ctr_cmd images ls "name==$ref" 2>/dev/null | awk 'NR == 2 { print $3 }') != "$digest" ]]; then
        missing=1
      fi
    done
    if ((missing)); then
      log "importing $name image ($digest) into containerd"
      ctr_cmd images import "$tar" >/dev/null
    fi
  done < <("$builder")
}

# Imports nodelet's own image (image/build.sh: docker.io/library/nodelet:<version>) when missing or
# stale. Not part of up.sh: a cold build takes minutes; the suites that run the image call it.
containerd_import_nodelet_image() {
  CONTAINERD_ADDRESS=$CONTAINERD_SOCK bash "$REPO_DIR/image/import.sh" >/dev/null
}

# Proves that a pull of any public image fails at once against the loopback sink.
containerd_check_pull_sink() {
  local out started=$SECONDS
  if out=$(crictl_cmd pull docker.io/library/alpine:3 2>&1); then
    die "pulling docker.io/library/alpine:3 succeeded: the registry sink is not in effect"
  fi
  if ! grep -q '127.0.0.1' <<<"$out"; then
    die "the pull failed, but not against the loopback sink: $out"
  fi
  log "image pulls go to the loopback sink (failed in $((SECONDS - started))s as intended)"
}

# Removes a sandbox's container log directory if it lies under the pod log dir (nodelet asks for
# /var/log/pods/<namespace>_<name>_<uid>); a directory elsewhere was chosen by a test: left alone.
remove_pod_log_dir() {
  local dir
  dir=$(crictl_cmd inspectp "$1" 2>/dev/null | jq -r '.info.config.log_directory // empty')
  if [[ $dir == "$POD_LOG_DIR"/?* && $dir != *..* ]]; then rm -rf "$dir"; fi
}

# Removes the container log links (the agent's default --container-log-link-dir) that point into
# the pod log dir and dangle, as the agent's GC would: their pods' log directories were just removed.
# The kubelet node's links point into its own pod log dir: left to it.
remove_dangling_log_links() {
  local link
  [[ -d /var/log/containers ]] || return 0
  for link in /var/log/containers/*.log; do
    if [[ -L $link && ! -e $link && $(readlink "$link") == "$POD_LOG_DIR"/?* ]]; then rm -f "$link"; fi
  done
}

# Stops and removes every pod sandbox (CNI releases the IPs and veths), then any task left in any
# namespace (e.g. made with ctr), so no shim outlives containerd. Usage: containerd_remove_workloads
# [DAEMON] (default containerd; the kubelet node's is kubelet-containerd, with CONTAINERD_SOCK and
# CONTAINERD_CONFIG pointing at it; its pods' log directories are outside POD_LOG_DIR, so kept here).
containerd_remove_workloads() {
  local ns id
  daemon_pid "${1:-containerd}" "$CONTAINERD_CONFIG" >/dev/null || return 0
  for id in $(crictl_cmd pods -q 2>/dev/null); do
    remove_pod_log_dir "$id"
    crictl_cmd stopp "$id" >/dev/null 2>&1 || true
    crictl_cmd rmp -f "$id" >/dev/null 2>&1 || warn "could not remove pod sandbox $id"
  done
  remove_dangling_log_links
  for ns in $(ctr --address "$CONTAINERD_SOCK" namespaces ls -q 2>/dev/null); do
    for id in $(ctr --address "$CONTAINERD_SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
      ctr --address "$CONTAINERD_SOCK" -n "$ns" tasks kill -s KILL "$id" >/dev/null 2>&1 || true
      sleep 0.2
      ctr --address "$CONTAINERD_SOCK" -n "$ns" tasks delete -f "$id" >/dev/null 2>&1 || true
    done
  done
}

# The pids of the shims our containerd started: each carries its socket in its arguments.
harness_shim_pids() {
  pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK( |\$)" || true
}

# Kills shims of our containerd left behind (containerd crashed, was killed, or a failed
# cluster:up stops what it started) together with the containers they supervised, and removes the
# socket each leaves in /run/containerd/s (containerd names it sha256(<address>/<ns>/<id>)).
# Usage: kill_leftover_shims [PID_TO_KEEP...]
kill_leftover_shims() {
  local pid args ns id keep=" $* "
  for pid in $(harness_shim_pids); do
    [[ $keep == *" $pid "* ]] && continue
    args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
    ns=$(sed -n 's/.*-namespace \([^ ]*\).*/\1/p' <<<"$args")
    id=$(sed -n 's/.*-id \([^ ]*\).*/\1/p' <<<"$args")
    warn "killing leftover shim $pid ($ns/$id) and its children"
    pkill -KILL -P "$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
    if [[ -n $ns && -n $id ]]; then
      rm -f "/run/containerd/s/$(printf '%s' "$CONTAINERD_SOCK/$ns/$id" | sha256sum | cut -d' ' -f1)"
    fi
  done
}

# After a crash, task bundles stay in the state dir and their containers' cgroups stay empty in
# every v1 hierarchy: remove those cgroups (by the path each bundle's OCI spec gave runc).
remove_leftover_cgroups() {
  local spec path hierarchy
  for spec in "$CONTAINERD_STATE"/io.containerd.runtime.v2.task/*/*/config.json; do
    [[ -f $spec ]] || continue
    path=$(jq -r '.linux.cgroupsPath // empty' "$spec" 2>/dev/null)
    # A systemd-style path (slice:prefix:name) is not ours to remove: this harness uses cgroupfs.
    [[ $path == /* ]] || continue
    for hierarchy in /sys/fs/cgroup/*/; do
      # Killed processes take a moment to leave their cgroup: retry for up to 2 seconds.
      for _ in 1 2 3 4 5 6 7 8 9 10; do
        [[ -d $hierarchy${path#/} ]] || break
        rmdir "$hierarchy${path#/}" 2>/dev/null || sleep 0.2
      done
    done
  done
  return 0
}

# Unmounts everything still mounted under our containerd dirs (shm, rootfs, netns), deepest first.
unmount_containerd_leftovers() {
  local dir target
  for dir in "$CONTAINERD_STATE" "$CONTAINERD_ROOT" "$CLUSTER_DIR"; do
    findmnt -rn -o TARGET | awk -v d="$dir/" 'index($0, d) == 1' | sort -r | while read -r target; do
      umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || warn "could not unmount $target"
    done
  done
}

containerd_stop() {
  containerd_remove_workloads
  stop_daemon containerd "$CONTAINERD_CONFIG" 20
  kill_leftover_shims
  remove_leftover_cgroups
  unmount_containerd_leftovers
}
