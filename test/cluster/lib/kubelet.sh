# shellcheck shell=bash disable=SC2034  # settings used by the files that source this one
# The kubelet of the same release as a SECOND node of the test cluster, for the benchmark only
# (npm run kubelet:up / kubelet:down; bench/run.sh brings it up and down around a run). It never
# shares anything with nodelet's node: its own containerd (root, state, socket), CNI config and
# bridge on its own /24, node address, cgroup root, root/cert/log dirs, all under KUBELET_DIR or
# named nodelet-kubelet / nodelet2 / nodelet-kl0, so kubelet-down.sh finds exactly what is its.
#
# What the kubelet needs on this machine and why each setting is here: see
# /work/shared/notes/kubelet-side-by-side.md (facts found running it) and the comments below.

KUBELET_NODE_NAME=${KUBELET_NODE_NAME:-$NODE_NAME-kubelet}
# Its InternalIP, on a dummy interface of its own (the API server reaches its server here).
KUBELET_NODE_IP=10.213.0.2
KUBELET_HOST_IF=nodelet-kl0
KUBELET_BRIDGE=nodelet2
KUBELET_POD_CIDR=10.217.0.0/24
KUBELET_POD_GATEWAY=10.217.0.1
# Inside the blackholed service range: without clusterDNS the kubelet records a MissingClusterDNS
# event for every pod, which skews its timings; nothing ever answers there.
KUBELET_CLUSTER_DNS=10.215.0.10
KUBELET_FW_COMMENT=nodelet-kubelet
KUBELET_CNI_NETWORK=nodelet-kubelet
KUBELET_HEALTHZ_PORT=10358
# A cgroup root of its own in every v1 hierarchy (nodelet's pods live under /kubepods).
KUBELET_CGROUP_ROOT=/nodelet-kubelet
# No node, DaemonSet or test pod lands on it by the scheduler: the benchmark binds its pods by name.
KUBELET_TAINT_KEY=nodelet.dev/bench-kubelet

KUBELET_DIR=$CLUSTER_DIR/kubelet
KUBELET_ROOT=$KUBELET_DIR/root
KUBELET_CERT_DIR=$KUBELET_DIR/pki
KUBELET_POD_LOGS=$KUBELET_DIR/pod-logs
KUBELET_CONFIG=$KUBELET_DIR/config.yaml
KUBELET_KUBECONFIG=$KUBELET_DIR/kubeconfig
KUBELET_ENV=$KUBELET_DIR/env
KUBELET_LOG_DIR=$KUBELET_DIR/logs
# What the kubelet changes on the host, recorded by kubelet-up before its first start.
KUBELET_SAVED_SYSCTLS=$KUBELET_DIR/sysctls.saved
KUBELET_CREATED_HOST_DIRS=$KUBELET_DIR/host-dirs.created
# The sysctls its container manager sets at start (setupKernelTunables), saved and restored.
KUBELET_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# Written by it whatever its root dir says.
KUBELET_HOST_DIRS=(/var/lib/kubelet /var/log/containers)

KUBELET_CONTAINERD_DIR=$KUBELET_DIR/containerd
kubelet_containerd_state_dir() {
  local state=$KUBELET_CONTAINERD_DIR/state
  if ((${#state} > 60)); then
    state=/run/nodelet-kubelet/$(printf '%s' "$CLUSTER_DIR" | sha256sum | cut -c1-12)/state
  fi
  echo "$state"
}
KUBELET_CONTAINERD_STATE=$(kubelet_containerd_state_dir)
KUBELET_CONTAINERD_SOCK=$KUBELET_CONTAINERD_STATE/containerd.sock
KUBELET_CNI_CONF_DIR=$KUBELET_DIR/cni/net.d
KUBELET_CNI_IPAM_DIR=$KUBELET_DIR/cni/ipam

# Runs a function of containerd.sh (config, start checks, image import, shim cleanup) against the
# kubelet's containerd: the same code as nodelet's node, pointed at the other root, state and socket.
with_kubelet_containerd() (
  CONTAINERD_DIR=$KUBELET_CONTAINERD_DIR
  CONTAINERD_ROOT=$KUBELET_CONTAINERD_DIR/root
  CONTAINERD_STATE=$KUBELET_CONTAINERD_STATE
  CONTAINERD_SOCK=$KUBELET_CONTAINERD_SOCK
  CONTAINERD_CONFIG=$KUBELET_CONTAINERD_DIR/config.toml
  CNI_CONF_DIR=$KUBELET_CNI_CONF_DIR
  LOG_DIR=$KUBELET_LOG_DIR
  "$@"
)

kubelet_fw_rule() { echo "FORWARD -i $KUBELET_BRIDGE ! -o $KUBELET_BRIDGE -m comment --comment $KUBELET_FW_COMMENT -j DROP"; }
