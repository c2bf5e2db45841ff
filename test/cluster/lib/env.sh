# shellcheck shell=bash
# The files other tools read: .cluster/env (sourceable) and .cluster/crictl.yaml.

write_env() {
  cat >"$CLUSTER_DIR/crictl.yaml" <<YAML
runtime-endpoint: unix://$CONTAINERD_SOCK
image-endpoint: unix://$CONTAINERD_SOCK
timeout: 10
YAML
  cat >"$CLUSTER_DIR/env" <<ENV
# Written by test/cluster/up.sh: \`source .cluster/env\` to use the test cluster.
export CLUSTER_DIR='$CLUSTER_DIR'
export KUBECONFIG='$CLUSTER_DIR/kubeconfig'
export NODELET_KUBECONFIG='$CLUSTER_DIR/kubeconfig-node'
export CONTAINER_RUNTIME_ENDPOINT='unix://$CONTAINERD_SOCK'
export CONTAINERD_ADDRESS='$CONTAINERD_SOCK'
export CONTAINERD_NAMESPACE=k8s.io
export CRI_CONFIG_FILE='$CLUSTER_DIR/crictl.yaml'
export REDIS_URL='redis://127.0.0.1:$REDIS_PORT'
export NODE_NAME='$NODE_NAME'
export NODE_IP='$NODE_IP'
export SELF_BRIDGE='$SELF_BRIDGE'
export SELF_POD_CIDR='$SELF_POD_CIDR'
case ":\$PATH:" in *":$BIN_DIR:"*) ;; *) export PATH='$BIN_DIR':"\$PATH" ;; esac
ENV
}
